// learnsched._core: one submodule per area of the core (finite, forecast, causal, portfolio).
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_finite(py::module_& m);
void bind_forecast(py::module_& m);
void bind_causal(py::module_& m);
void bind_portfolio(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "learnsched's C++ solver core (private: use the learnsched package).";
    bind_finite(m);
    bind_forecast(m);
    bind_causal(m);
    bind_portfolio(m);
}
