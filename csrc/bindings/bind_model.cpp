// Scenario, state, action and policy types of learnsched._core.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "learnsched/finite/action.hpp"
#include "learnsched/finite/policy.hpp"
#include "learnsched/finite/scenario.hpp"

namespace py = pybind11;
using namespace learnsched;

namespace {

using WindowPairs = std::vector<std::pair<double, double>>;
using SchedulePairs = std::vector<std::pair<double, double>>;  // (start_s, rate) per piece

Scenario make_scenario(const WindowPairs& windows, int work_quanta, double quantum_s,
                       double benefit_rate, double horizon_s, const HandoffCosts& costs,
                       const State& initial, const SchedulePairs& benefit_schedule = {}) {
    Scenario s;
    s.windows.reserve(windows.size());
    for (const auto& [start, end] : windows) s.windows.push_back(Window{start, end});
    s.work_quanta = work_quanta;
    s.quantum_s = quantum_s;
    s.benefit_rate = benefit_rate;
    s.horizon_s = horizon_s;
    s.costs = costs;
    s.initial = initial;
    s.benefit_schedule.reserve(benefit_schedule.size());
    for (const auto& [start, rate] : benefit_schedule) s.benefit_schedule.push_back({start, rate});
    return s;
}

SchedulePairs schedule_pairs(const Scenario& s) {
    SchedulePairs out;
    out.reserve(s.benefit_schedule.size());
    for (const BenefitPiece& p : s.benefit_schedule) out.emplace_back(p.start_s, p.rate);
    return out;
}

// Item i of `pieces`, or std::out_of_range naming the column and row.
template <class T>
const T& piece(const std::vector<T>& pieces, const std::vector<int>& index, std::size_t row,
               const char* column) {
    const int i = index[row];
    if (i < 0 || static_cast<std::size_t>(i) >= pieces.size()) {
        throw std::out_of_range(std::string(column) + "[" + std::to_string(row) + "] must be in [0, " +
                                std::to_string(pieces.size()) + "), got " + std::to_string(i));
    }
    return pieces[static_cast<std::size_t>(i)];
}

// Many scenarios sharing their windows, costs and initial states, built in one call: one
// Python call per scenario costs more than validating it.
std::vector<Scenario> scenario_rows(const std::vector<WindowPairs>& windows,
                                    const std::vector<HandoffCosts>& costs,
                                    const std::vector<State>& initial,
                                    const std::vector<int>& window_set,
                                    const std::vector<int>& work_quanta,
                                    const std::vector<double>& quantum_s,
                                    const std::vector<double>& benefit_rate,
                                    const std::vector<double>& horizon_s,
                                    const std::vector<int>& cost_set,
                                    const std::vector<int>& initial_set) {
    const std::size_t n = window_set.size();
    for (const std::size_t size : {work_quanta.size(), quantum_s.size(), benefit_rate.size(),
                                   horizon_s.size(), cost_set.size(), initial_set.size()}) {
        if (size != n) {
            throw std::invalid_argument("every row column must have " + std::to_string(n) +
                                        " entries (window_set's), got " + std::to_string(size));
        }
    }
    std::vector<Scenario> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(make_scenario(piece(windows, window_set, i, "window_set"), work_quanta[i],
                                    quantum_s[i], benefit_rate[i], horizon_s[i],
                                    piece(costs, cost_set, i, "cost_set"),
                                    piece(initial, initial_set, i, "initial_set")));
    }
    return out;
}

std::vector<std::pair<double, double>> window_pairs(const Scenario& s) {
    std::vector<std::pair<double, double>> out;
    out.reserve(s.windows.size());
    for (const Window& w : s.windows) out.emplace_back(w.start_s, w.end_s);
    return out;
}

}  // namespace

void bind_model(py::module_& m) {
    py::enum_<ActionKind>(m, "ActionKind", "Window macro-action kinds, in canonical order.")
        .value("WAIT", ActionKind::Wait)
        .value("ABANDON", ActionKind::Abandon)
        .value("CHECKPOINT_RETURN", ActionKind::CheckpointReturn)
        .value("DISCARD_RETURN", ActionKind::DiscardReturn)
        .value("PUBLISH", ActionKind::Publish)
        .value("ADVANCE", ActionKind::Advance);

    py::enum_<Policy>(m, "Policy", "The six policies of the finite model and the guarded rollout.")
        .value("NEVER", Policy::Never)
        .value("WINDOW", Policy::Window)
        .value("STATIC_ROI", Policy::StaticRoi)
        .value("COSTED_WINDOW", Policy::CostedWindow)
        .value("ROLLOUT", Policy::Rollout)
        .value("DP", Policy::Dp)
        .value("GUARDED", Policy::Guarded);
    m.def(
        "policy_name", [](Policy policy) { return std::string(name(policy)); }, py::arg("policy"),
        "The policy's name in the Python API (e.g. 'costed_window').");

    py::class_<Action>(m, "Action", "One window's macro-action.")
        .def(py::init([](ActionKind kind, int quanta, bool checkpoint, bool cold) {
                 if (name(kind) == "unknown") {  // py::enum_ accepts any integer
                     throw std::invalid_argument("kind must be an ActionKind, got " +
                                                 std::to_string(static_cast<int>(kind)));
                 }
                 if (quanta < 0) {
                     throw std::invalid_argument("quanta must be >= 0, got " +
                                                 std::to_string(quanta));
                 }
                 return Action{kind, quanta, checkpoint, cold};
             }),
             py::arg("kind"), py::arg("quanta") = 0, py::arg("checkpoint") = false,
             py::arg("cold") = false)
        .def_readonly("kind", &Action::kind)
        .def_readonly("quanta", &Action::quanta, "Quanta run in this window.")
        .def_readonly("checkpoint", &Action::checkpoint, "Whether the segment saves a checkpoint.")
        .def_readonly("cold", &Action::cold,
                      "Whether it returns by the cold alternative path (two-path scenarios).")
        .def_property_readonly("name", [](const Action& a) { return std::string(name(a.kind)); },
                               "The action kind as a lowercase name, e.g. 'advance'.")
        .def("__eq__",
             [](const Action& a, const py::object& other) -> py::object {
                 if (!py::isinstance<Action>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
                 return py::bool_(a == other.cast<const Action&>());
             })
        .def("__hash__", [](const Action& a) {
            return py::hash(py::make_tuple(static_cast<int>(a.kind), a.quanta, a.checkpoint, a.cold));
        })
        .def("__repr__", [](const Action& a) {
            return "Action(" + std::string(name(a.kind)) + ", quanta=" + std::to_string(a.quanta) +
                   ", checkpoint=" + (a.checkpoint ? "True" : "False") +
                   (a.cold ? ", cold=True)" : ")");
        });

    py::class_<HandoffCosts>(m, "HandoffCosts", "Handoff costs in seconds and s-eq./s.")
        .def(py::init([](double recovery_s, double residency_rate, double save_s, double load_s,
                         std::optional<double> cold_recovery_s) {
                 return HandoffCosts{recovery_s, residency_rate, save_s, load_s, cold_recovery_s};
             }),
             py::arg("recovery_s"), py::arg("residency_rate"), py::arg("save_s"),
             py::arg("load_s"), py::arg("cold_recovery_s") = py::none())
        .def_readonly("recovery_s", &HandoffCosts::recovery_s)
        .def_readonly("residency_rate", &HandoffCosts::residency_rate)
        .def_readonly("save_s", &HandoffCosts::save_s)
        .def_readonly("load_s", &HandoffCosts::load_s)
        .def_readonly("cold_recovery_s", &HandoffCosts::cold_recovery_s,
                      "t_ret of the cold alternative path, or None when only one path is offered.");

    py::class_<State>(m, "State", "Decision state (window, progress, durable, active).")
        .def(py::init<int, int, int, bool>(), py::arg("window"), py::arg("progress"),
             py::arg("durable"), py::arg("active").noconvert())  // a flag is True or False
        .def_readonly("window", &State::window)
        .def_readonly("progress", &State::progress)
        .def_readonly("durable", &State::durable)
        .def_readonly("active", &State::active);

    py::class_<Scenario>(m, "Scenario", "A finite-model scenario (not validated until used).")
        .def(py::init(&make_scenario), py::arg("windows"), py::arg("work_quanta"),
             py::arg("quantum_s"), py::arg("benefit_rate"), py::arg("horizon_s"),
             py::arg("costs"), py::arg("initial"), py::arg("benefit_schedule") = SchedulePairs{},
             "benefit_schedule: (start_s, rate) pieces of g(t); if given, benefit_rate must be 0.")
        .def_property_readonly("windows", &window_pairs)
        .def_readonly("work_quanta", &Scenario::work_quanta)
        .def_readonly("quantum_s", &Scenario::quantum_s)
        .def_readonly("benefit_rate", &Scenario::benefit_rate)
        .def_property_readonly("benefit_schedule", &schedule_pairs,
                               "(start_s, rate) pieces of g(t); empty for a constant benefit_rate.")
        .def(
            "benefit",
            [](const Scenario& s, double publish_s) {
                validate_benefit(s);  // the curve assumes a valid schedule
                return benefit_curve(s).value(publish_s);
            },
            py::arg("publish_s"),
            "Phi(publish_s): the integral of the benefit rate from publish_s to horizon_s, s-eq. "
            "(checks the benefit fields first).")
        .def_readonly("horizon_s", &Scenario::horizon_s)
        .def_readonly("costs", &Scenario::costs)
        .def_readonly("initial", &Scenario::initial);

    m.def("scenario_rows", &scenario_rows, py::arg("windows"), py::arg("costs"),
          py::arg("initial"), py::arg("window_set"), py::arg("work_quanta"), py::arg("quantum_s"),
          py::arg("benefit_rate"), py::arg("horizon_s"), py::arg("cost_set"),
          py::arg("initial_set"),
          "Scenarios (not validated until used) that share pieces: row i has windows[window_set[i]], "
          "costs[cost_set[i]], initial[initial_set[i]] and the i-th work_quanta, quantum_s, "
          "benefit_rate and horizon_s.");
    m.def("validate", &validate, py::arg("scenario"),
          "Raise ValueError naming the first invalid field of the scenario.");
    m.attr("MAX_STATES") = kMaxStates;
    m.attr("MAX_TWO_PATH_STATES") = kMaxTwoPathStates;
    m.attr("MAX_WINDOWS") = kMaxWindows;
}
