// Core enums as Python enums: the members are the core's list (kFinitePolicies, ...), named
// upper case after name(member) as Python's enums name theirs; the lower-case names are
// what the command line and JSON read.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cctype>
#include <cstddef>
#include <string>

namespace learnsched::bindings {

namespace py = pybind11;

template <class Enum, std::size_t N>
py::enum_<Enum> bind_enum(py::module_& m, const char* python_name,
                          const std::array<Enum, N>& members, const char* doc) {
    py::enum_<Enum> bound(m, python_name, doc);
    for (const Enum member : members) {
        std::string upper(name(member));
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        bound.value(upper.c_str(), member);
    }
    return bound;
}

}  // namespace learnsched::bindings
