// Enums the Python layer names by strings. Each enum lists its members once, in an array
// beside it (kCausalPolicies, kGapModels, ...), and names them with name(member); the
// bindings read a name back with named() and hand Python the list with names(), so a new
// member is one line in that array and one case in its name().
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "learnsched/check.hpp"

namespace learnsched {

// The names of `members`, in order.
template <class Enum, std::size_t N>
std::vector<std::string> names(const std::array<Enum, N>& members) {
    std::vector<std::string> out;
    out.reserve(N);
    for (const Enum member : members) out.emplace_back(name(member));
    return out;
}

// The member called `text`; std::invalid_argument naming `what` and every choice otherwise.
template <class Enum, std::size_t N>
Enum named(const std::string& text, const std::array<Enum, N>& members, const char* what) {
    std::string choices;
    for (const Enum member : members) {
        if (text == name(member)) return member;
        choices += (choices.empty() ? "" : ", ") + std::string(name(member));
    }
    fail(what, " must be one of ", choices, ", got '", text, "'");
}

}  // namespace learnsched
