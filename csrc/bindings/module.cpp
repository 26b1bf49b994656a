#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_model(py::module_& m);
void bind_solver(py::module_& m);
void bind_forecast(py::module_& m);
void bind_causal(py::module_& m);
void bind_portfolio(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "learnsched's C++ solver core (private: use the learnsched package).";
    bind_model(m);
    bind_solver(m);
    bind_forecast(m);
    bind_causal(m);
    bind_portfolio(m);
}
