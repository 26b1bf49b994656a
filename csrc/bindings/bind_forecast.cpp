// learnsched._core.forecast: decisions under a forecast of the calendar (ForecastModel).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "casts.hpp"
#include "learnsched/finite/batch.hpp"
#include "learnsched/forecast/sample_tables.hpp"
#include "learnsched/forecast/online.hpp"
#include "learnsched/parallel.hpp"

namespace py = pybind11;
using namespace learnsched;
using learnsched::bindings::cast_field;

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

// A JSON-style number: a float or an int (not a bool) that converts exactly enough.
bool plain_number(PyObject* x, double& out) {
    if (PyFloat_CheckExact(x)) {
        out = PyFloat_AS_DOUBLE(x);
        return true;
    }
    if (PyLong_CheckExact(x)) {
        out = PyLong_AsDouble(x);
        if (out == -1.0 && PyErr_Occurred()) {  // beyond any double: the slow path says so
            PyErr_Clear();
            return false;
        }
        return true;
    }
    return false;
}

// Append calendar `item` (a list or tuple of [start, end] lists or tuples of plain numbers,
// finite, each ending after it starts, sorted and non-overlapping, at least one) to `out`;
// false (nothing appended) if anything is unusual, for the slow path to name.
bool pack_plain(PyObject* item, std::vector<double>& out) {
    if (!PyList_CheckExact(item) && !PyTuple_CheckExact(item)) return false;
    PyObject* fast = item;  // a list or tuple: PySequence_Fast_* read it without copies
    const Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    if (k == 0) return false;
    const std::size_t mark = out.size();
    double previous_end = -std::numeric_limits<double>::infinity();
    for (Py_ssize_t j = 0; j < k; ++j) {
        PyObject* pair = PySequence_Fast_GET_ITEM(fast, j);
        double start = 0.0;
        double end = 0.0;
        if ((!PyList_CheckExact(pair) && !PyTuple_CheckExact(pair)) ||
            PySequence_Fast_GET_SIZE(pair) != 2 ||
            !plain_number(PySequence_Fast_GET_ITEM(pair, 0), start) ||
            !plain_number(PySequence_Fast_GET_ITEM(pair, 1), end) || !std::isfinite(start) ||
            !std::isfinite(end) || !(end > start) || start < previous_end) {
            out.resize(mark);
            return false;
        }
        out.push_back(start);
        out.push_back(end);
        previous_end = end;
    }
    return true;
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

void bind_forecast(py::module_& core) {
    py::module_ m = core.def_submodule(
        "forecast", "Forecasts: sampled calendars, their tables and online runs.");
    py::class_<SampleTables>(m, "SampleTables",
                             "Continuation tables of N sampled calendars, built once.")
        .def(py::init(&from_samples<SampleTables>), py::arg("candidate"), py::arg("windows"),
             py::arg("offsets"), py::arg("policies"), py::arg("threads") = 1,
             "candidate: the work, benefit and costs (its windows are not used); sample i is "
             "windows[offsets[i]:offsets[i+1]], a full calendar.")
        .def_property_readonly("sample_count", &SampleTables::sample_count)
        .def_property_readonly("distinct_count", &SampleTables::distinct_count,
                               "Tables built: one per distinct sample.")
        .def(
            "row_after",
            [](const SampleTables& t, int sample, double time_s, const std::string& table) {
                if (sample < 0 || sample >= t.sample_count()) {
                    throw py::index_error("sample " + std::to_string(sample) + " out of range");
                }
                const auto i = static_cast<std::size_t>(sample);
                const int row = t.row_after(i, time_s);
                const bool built = table == "window"      ? t.needs().window
                                   : table == "reference" ? t.needs().reference
                                   : table == "optimal"   ? t.needs().optimal
                                                          : false;
                if (!built) {
                    throw std::invalid_argument("table must be a built one of window, "
                                                "reference, optimal; got '" + table + "'");
                }
                const double* v = table == "window"      ? t.window_row(i, row)
                                  : table == "reference" ? t.reference_row(i, row)
                                                         : t.optimal_row(i, row);
                return std::vector<double>(v, v + t.candidate().work_quanta + 1);
            },
            py::arg("sample"), py::arg("time_s"), py::arg("table"),
            "Sample `sample`'s row of V_G ('window'), V^pi0 ('reference') or V* ('optimal') "
            "after time_s (its first window starting at or after it), per durable progress.")
        .def(
            "row_sum",
            [](const SampleTables& t, double time_s) {
                // The table floor of a decision under a forecast: every sample's row of
                // V^pi0 after time_s looked up and read whole (what any scoring must read).
                if (!t.needs().reference) {
                    throw std::invalid_argument("row_sum reads V^pi0, which was not built");
                }
                const int width = t.candidate().work_quanta + 1;
                double sum = 0.0;
                for (std::size_t i = 0; i < static_cast<std::size_t>(t.sample_count()); ++i) {
                    const double* row = t.reference_row(i, t.row_after(i, time_s));
                    for (int q = 0; q < width; ++q) sum += row[q];
                }
                return sum;
            },
            py::arg("time_s"),
            "Sum of every sample's V^pi0 row after time_s: the table floor of one decision "
            "(N row lookups and N * (J + 1) entries), for benchmarks.");

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
    m.def(
        "pack_calendars",
        [](const std::string& name, const py::typing::List<py::object>& samples,
           const py::typing::Callable<py::object(py::str, py::object)>& check) {
            // The common case is read in C++; any other calendar goes through `check`
            // (the Python checker), which names its first problem or returns it checked.
            std::vector<double> flat;
            std::vector<std::int64_t> offsets{0};
            for (py::ssize_t i = 0; i < static_cast<py::ssize_t>(samples.size()); ++i) {
                py::object item = samples[static_cast<std::size_t>(i)];
                if (!pack_plain(item.ptr(), flat)) {
                    const py::object checked = check(name + "[" + std::to_string(i) + "]", item);
                    if (!pack_plain(checked.ptr(), flat)) {
                        throw std::invalid_argument(name + "[" + std::to_string(i) +
                                                    "]: the checker returned no calendar");
                    }
                }
                offsets.push_back(static_cast<std::int64_t>(flat.size() / 2));
            }
            Windows windows({static_cast<py::ssize_t>(flat.size() / 2), py::ssize_t{2}});
            std::copy(flat.begin(), flat.end(), windows.mutable_data());
            return py::typing::Tuple<Windows, py::array_t<std::int64_t>>(py::make_tuple(
                windows, py::array_t<std::int64_t>(static_cast<py::ssize_t>(offsets.size()),
                                                   offsets.data())));
        },
        py::arg("name"), py::arg("samples"), py::arg("check"),
        "Calendars (lists of [start, end] pairs) as (windows (M, 2), offsets (N + 1)); a "
        "calendar that is not plain lists of finite numbers, sorted, is passed to check.");

    m.def(
        "run_online",
        [](const py::typing::List<py::typing::Tuple<py::object, py::ellipsis>>& cases,
           const std::vector<Policy>& policies, int threads) {
            if (threads < 1 || threads > kMaxThreads) {
                throw std::invalid_argument("threads must be in [1, " +
                                            std::to_string(kMaxThreads) + "], got " +
                                            std::to_string(threads));
            }
            struct Case {
                Scenario truth;
                std::vector<Calendar> samples;
            };
            std::vector<Case> work;
            work.reserve(cases.size());
            for (const py::handle& item : cases) {
                const std::string at = "cases[" + std::to_string(work.size()) + "]";
                const auto t = cast_field<py::tuple>(item, at, "a tuple");
                if (t.size() != 3) {
                    throw std::invalid_argument(at + " must be (scenario, windows, offsets)");
                }
                work.push_back(Case{
                    cast_field<Scenario>(t[0], at + ".scenario", "a Scenario"),
                    calendars(cast_field<Windows>(t[1], at + ".windows", "a float64 array"),
                              cast_field<Offsets>(t[2], at + ".offsets", "an int64 array"))});
            }
            std::vector<std::vector<Plan>> out(work.size());
            {
                py::gil_scoped_release release;  // pure C++: each case writes only its plans
                run_blocks(work.size(), threads, [&](std::size_t begin, std::size_t end) {
                    for (std::size_t i = begin; i < end; ++i) {
                        const SampleTables tables(work[i].truth, work[i].samples, policies, 1);
                        out[i] = run_online(work[i].truth, tables, policies);
                    }
                });
            }
            return out;
        },
        py::arg("cases"), py::arg("policies"), py::arg("threads") = 1,
        "Each case (true scenario, sample windows, offsets: full calendars) run online: one "
        "plan per policy, then the clairvoyant's, on threads over the cases.");
    m.attr("MAX_SAMPLES") = kMaxSamples;
    m.attr("MAX_SAMPLE_STATES") = kMaxSampleStates;
}
