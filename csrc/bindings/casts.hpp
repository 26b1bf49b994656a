// Casts of loosely typed arguments (tuple items, py::object parameters) that name the
// field: pybind11's own cast_error says only "Unable to cast Python instance of type
// <class 'str'> to C++ type '?'", an unnamed RuntimeError.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace learnsched::bindings {

namespace py = pybind11;

// `value` as T, or a TypeError "FIELD must be EXPECTED, got REPR".
template <class T>
T cast_field(const py::handle& value, const std::string& field, const char* expected) {
    const auto refuse = [&]() {
        std::string shown = py::repr(value);
        if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
        return py::type_error(field + " must be " + expected + ", got " + shown);
    };
    try {
        return value.cast<T>();
    } catch (const py::cast_error&) {
        throw refuse();
    } catch (const py::error_already_set& e) {  // py::tuple of None: "not iterable"
        if (!e.matches(PyExc_TypeError)) throw;
        throw refuse();
    }
}

}  // namespace learnsched::bindings
