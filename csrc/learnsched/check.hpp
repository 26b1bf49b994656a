// What every part of the core validates with: a message built from parts, thrown as
// std::invalid_argument (pybind11 maps it to ValueError), and the infinity of unbounded times.
#pragma once

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace learnsched {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The parts streamed into one string, numbers with 12 significant digits.
template <class... Parts>
std::string joined(const Parts&... parts) {
    std::ostringstream out;
    out.precision(12);
    (out << ... << parts);
    return out.str();
}

// Throw std::invalid_argument with the parts as its message.
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
    throw std::invalid_argument(joined(parts...));
}

}  // namespace learnsched
