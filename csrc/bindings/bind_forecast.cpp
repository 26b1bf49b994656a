// Decisions under a forecast of the calendar (learnsched._core.ForecastModel).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "learnsched/forecast.hpp"

namespace py = pybind11;
using namespace learnsched;

namespace {

using Windows = py::array_t<double, py::array::c_style | py::array::forcecast>;
using Offsets = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// Samples in compressed form: sample i is windows[offsets[i]:offsets[i+1]], (start, end) rows.
// Every offset is checked before any window is read: a bad one would index out of bounds.
std::vector<Calendar> calendars(const Windows& windows, const Offsets& offsets) {
    if (windows.ndim() != 2 || windows.shape(1) != 2) {
        throw std::invalid_argument("windows must have shape (M, 2), got ndim " +
                                    std::to_string(windows.ndim()));
    }
    if (offsets.ndim() != 1 || offsets.shape(0) < 1) {
        throw std::invalid_argument("offsets must be a 1-D array of N + 1 sample offsets");
    }
    const py::ssize_t n = offsets.shape(0) - 1;
    if (static_cast<std::size_t>(n) > kMaxSamples) {
        throw std::invalid_argument("offsets describe " + std::to_string(n) +
                                    " samples, more than the limit of " +
                                    std::to_string(kMaxSamples));
    }
    const auto w = windows.unchecked<2>();
    const auto o = offsets.unchecked<1>();
    const std::int64_t m = windows.shape(0);
    if (o(0) != 0 || o(n) != m) {
        throw std::invalid_argument("offsets must start at 0 and end at len(windows) = " +
                                    std::to_string(m) + ", got " + std::to_string(o(0)) +
                                    " and " + std::to_string(o(n)));
    }
    for (py::ssize_t i = 0; i < n; ++i) {
        if (o(i + 1) < o(i) || o(i + 1) > m) {
            throw std::invalid_argument(
                "offsets must be non-decreasing and at most len(windows) = " + std::to_string(m) +
                ", got offsets[" + std::to_string(i + 1) + "] = " + std::to_string(o(i + 1)) +
                " after offsets[" + std::to_string(i) + "] = " + std::to_string(o(i)));
        }
    }
    std::vector<Calendar> out(static_cast<std::size_t>(n));
    for (py::ssize_t i = 0; i < n; ++i) {
        Calendar& c = out[static_cast<std::size_t>(i)];
        c.reserve(static_cast<std::size_t>(o(i + 1) - o(i)));
        for (std::int64_t j = o(i); j < o(i + 1); ++j) c.push_back(Window{w(j, 0), w(j, 1)});
    }
    return out;
}

// ForecastModel or SampleTables from the compressed samples, built without the GIL.
template <class Built>
std::unique_ptr<Built> from_samples(const Scenario& scenario, const Windows& windows,
                                    const Offsets& offsets, const std::vector<Policy>& policies,
                                    int threads) {
    const std::vector<Calendar> samples = calendars(windows, offsets);
    py::gil_scoped_release release;  // pure C++ from here: O(N*K*J) tables on threads
    return std::make_unique<Built>(scenario, samples, policies, threads);
}

}  // namespace

void bind_forecast(py::module_& m) {
    py::class_<SampleTables>(m, "SampleTables",
                             "Continuation tables of N sampled calendars, built once.")
        .def(py::init(&from_samples<SampleTables>), py::arg("candidate"), py::arg("windows"),
             py::arg("offsets"), py::arg("policies"), py::arg("threads") = 1,
             "candidate: the work, benefit and costs (its windows are not used); sample i is "
             "windows[offsets[i]:offsets[i+1]], a full calendar.")
        .def_property_readonly("sample_count", &SampleTables::sample_count);

    py::class_<ForecastModel>(m, "ForecastModel",
                              "Decisions at the current window from N sampled continuations.")
        .def(py::init(&from_samples<ForecastModel>), py::arg("current"), py::arg("windows"),
             py::arg("offsets"), py::arg("policies"), py::arg("threads") = 1,
             "current: a one-window scenario; sample i is windows[offsets[i]:offsets[i+1]], "
             "all after the current window.")
        .def(py::init<const Scenario&, const SampleTables&>(), py::arg("current"),
             py::arg("tables"),
             "current: a one-window scenario; each sample of `tables` contributes its windows "
             "from the current window's end on; O(N*J).")
        .def_property_readonly("scenario", &ForecastModel::scenario)
        .def_property_readonly("sample_count", &ForecastModel::sample_count)
        .def(
            "decide",
            [](const ForecastModel& model, int progress, int durable, bool active, Policy policy) {
                return model.decide(State{0, progress, durable, active}, policy);
            },
            py::arg("progress"), py::arg("durable"), py::arg("active"), py::arg("policy"),
            "The policy's action in the current window; O(J).")
        .def(
            "take",
            [](const ForecastModel& model, int progress, int durable, bool active,
               const Action& action) {
                return model.take(State{0, progress, durable, active}, action);
            },
            py::arg("progress"), py::arg("durable"), py::arg("active"), py::arg("action"),
            "The segment a feasible action makes of the current window.")
        .def("mean_window_plan_values", &ForecastModel::mean_window_plan_values,
             "mean_i V_G,i after the current window, per durable progress 0..J (s-eq.).")
        .def("mean_reference_values", &ForecastModel::mean_reference_values,
             "mean_i V_i^pi0 after the current window, per durable progress 0..J (s-eq.).")
        .def("mean_optimal_values", &ForecastModel::mean_optimal_values,
             "mean_i V_i* after the current window, per durable progress 0..J (s-eq.).");
    m.attr("MAX_SAMPLES") = kMaxSamples;
    m.attr("MAX_SAMPLE_STATES") = kMaxSampleStates;
}
