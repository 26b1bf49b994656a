// learnsched._core.finite: the finite model (scenario, state, action, policy), its plans
// and the batch solver.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "enums.hpp"
#include "learnsched/finite/action.hpp"
#include "learnsched/finite/batch.hpp"
#include "learnsched/finite/guard_check.hpp"
#include "learnsched/finite/model.hpp"
#include "learnsched/finite/policy.hpp"
#include "learnsched/finite/scenario.hpp"
#include "learnsched/finite/tolerance.hpp"

namespace py = pybind11;
using namespace learnsched;
using learnsched::bindings::bind_enum;

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

// The finite model's value types: scenario, state, action and policy.
void bind_types(py::module_& m) {
    py::enum_<ActionKind>(m, "ActionKind", "Window macro-action kinds, in canonical order.")
        .value("WAIT", ActionKind::Wait)
        .value("ABANDON", ActionKind::Abandon)
        .value("CHECKPOINT_RETURN", ActionKind::CheckpointReturn)
        .value("DISCARD_RETURN", ActionKind::DiscardReturn)
        .value("PUBLISH", ActionKind::Publish)
        .value("ADVANCE", ActionKind::Advance);

    bind_enum(m, "Policy", kFinitePolicies,
              "The six policies of the finite model and the guarded rollout.");
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
    m.def("validate", static_cast<void (*)(const Scenario&)>(&validate), py::arg("scenario"),
          "Raise ValueError naming the first invalid field of the scenario.");
    m.attr("MAX_STATES") = kMaxStates;
    m.attr("MAX_TWO_PATH_STATES") = kMaxTwoPathStates;
    m.attr("MAX_WINDOWS") = kMaxWindows;
}

}  // namespace

// Model.decide's arguments, taken as the caller passed them (every object is accepted here:
// decide checks each one, so that its errors name the field) and shown in signatures and
// stubs as the type they should be.
namespace decide_args {
inline int any_object(PyObject*) { return 1; }
class Int : public py::object {
    PYBIND11_OBJECT_DEFAULT(Int, py::object, any_object)
};
class Flag : public py::object {
    PYBIND11_OBJECT_DEFAULT(Flag, py::object, any_object)
};
class PolicyName : public py::object {
    PYBIND11_OBJECT_DEFAULT(PolicyName, py::object, any_object)
};
class Epsilon : public py::object {
    PYBIND11_OBJECT_DEFAULT(Epsilon, py::object, any_object)
};
class Noise : public py::object {
    PYBIND11_OBJECT_DEFAULT(Noise, py::object, any_object)
};
// decide's result: an Action object (one per distinct action, see ActionCache).
class Result : public py::object {
    PYBIND11_OBJECT_DEFAULT(Result, py::object, any_object)
};
}  // namespace decide_args

namespace pybind11::detail {
template <>
struct handle_type_name<decide_args::Int> {
    static constexpr auto name = const_name("int");
};
template <>
struct handle_type_name<decide_args::Flag> {
    static constexpr auto name = const_name("bool");
};
template <>
struct handle_type_name<decide_args::PolicyName> {
    static constexpr auto name = const_name("str | Policy");
};
template <>
struct handle_type_name<decide_args::Epsilon> {
    static constexpr auto name = const_name("float");
};
template <>
struct handle_type_name<decide_args::Result> {
    static constexpr auto name = const_name("Action");
};
template <>
struct handle_type_name<decide_args::Noise> {
    static constexpr auto name =
        const_name("collections.abc.Callable[[State, Action], float] | None");
};
}  // namespace pybind11::detail

namespace {

using ScoreCallable = std::function<double(const State&, const Action&)>;
// A Python callback (state, action) -> s-eq.: a py::function typed for the stubs.
using ScoreCallback = py::typing::Callable<double(const State&, const Action&)>;

// A Python callback (state, action) -> s-eq. as the core calls it, its result checked: a
// non-number (a string, None, a bool) is a TypeError naming the callback, where pybind11's
// own cast would raise an unnamed RuntimeError. The function is held in a shared_ptr whose
// deleter takes the GIL, so the core may copy it on any thread.
ScoreCallable checked_callback(const char* name, const py::function& callback) {
    std::shared_ptr<py::function> held(new py::function(callback), [](py::function* f) {
        py::gil_scoped_acquire gil;
        delete f;
    });
    const std::string what = std::string(name) + "(state, action) must return ";
    return [held, what](const State& state, const Action& action) -> double {
        py::gil_scoped_acquire gil;
        const py::object score = (*held)(state, action);
        if (py::isinstance<py::bool_>(score) || py::isinstance<py::str>(score) ||
            py::isinstance<py::bytes>(score) || !PyNumber_Check(score.ptr())) {
            throw py::type_error(what + "a number (s-eq.), got " +
                                 std::string(py::str(py::type::of(score).attr("__name__"))));
        }
        const double value = PyFloat_AsDouble(score.ptr());
        if (value == -1.0 && PyErr_Occurred()) {  // an int beyond any double, a bad __float__
            PyErr_Clear();
            throw py::value_error(what + "a finite number (s-eq.), got " +
                                  std::string(py::repr(score)).substr(0, 80));
        }
        return value;
    };
}

// The guard of a call from Python: exact scores, score noise, or the user's estimates
// (held in `estimator`, which must outlive the guard).
Guard python_guard(double epsilon, const std::optional<py::function>& noise,
                   const std::optional<py::function>& scores,
                   std::optional<ScoreFunction>& estimator) {
    Guard guard{epsilon, noise ? checked_callback("score_noise", *noise) : ScoreNoise{}, nullptr};
    if (scores) guard.scores = &estimator.emplace(checked_callback("scores", *scores));
    return guard;
}

// --- Model.decide: the Python layer's checks in C++ on the common path --------------------

// Equal actions as one Python object: an Action is immutable from Python, so decide hands
// out a cached object instead of allocating (and registering) an instance per call. One
// direct-mapped table for the process, read and written only with the GIL held; its 1024
// objects are never freed (they may outlive the module at interpreter exit).
class ActionCache {
  public:
    py::object get(const Action& a) {
        const auto quanta = static_cast<std::uint32_t>(a.quanta);
        const std::uint64_t key = static_cast<std::uint64_t>(a.kind) |
                                  static_cast<std::uint64_t>(a.checkpoint) << 8 |
                                  static_cast<std::uint64_t>(a.cold) << 9 |
                                  static_cast<std::uint64_t>(quanta) << 16;
        Entry& e = entries_[(key * 0x9E3779B97F4A7C15ULL) >> (64 - kBits)];
        if (e.object != nullptr && e.key == key) {
            return py::reinterpret_borrow<py::object>(e.object);
        }
        py::object made = py::cast(a);
        Py_XDECREF(e.object);
        e.key = key;
        e.object = made.inc_ref().ptr();
        return made;
    }

  private:
    static constexpr int kBits = 10;
    struct Entry {
        std::uint64_t key = 0;
        PyObject* object = nullptr;
    };
    std::array<Entry, std::size_t{1} << kBits> entries_{};
};

ActionCache& action_cache() {
    static ActionCache* cache = new ActionCache();  // leaked on purpose, see ActionCache
    return *cache;
}

// learnsched.solver's range for a state field: a C int, symmetric.
constexpr long kStateFieldMax = 2147483647;

// A plain int in range (not a bool, numpy integer or subclass: those take the checked path).
bool plain_int(const py::handle& h, int& out) {
    if (!PyLong_CheckExact(h.ptr())) return false;
    int overflow = 0;
    const long v = PyLong_AsLongAndOverflow(h.ptr(), &overflow);
    if (overflow != 0 || v < -kStateFieldMax || v > kStateFieldMax) return false;
    out = static_cast<int>(v);
    return true;
}

bool plain_flag(const py::handle& h, bool& out) {
    out = h.ptr() == Py_True;
    return out || h.ptr() == Py_False;
}

// The last policy name decide matched: callers pass one object (a literal or a Policy
// member) call after call. Held by a reference, so that its address is not reused by another
// object; read and written only with the GIL held.
struct LastPolicy {
    PyObject* object = nullptr;
    Policy value = Policy::Rollout;
};

LastPolicy& last_policy() {
    static LastPolicy* last = new LastPolicy();  // leaked on purpose, as the action cache
    return *last;
}

// A policy by name (a str or learnsched.Policy member) or core value (any: decide refuses
// values outside the enum). The guarded policy comes here too: no_guard() below holds for
// the call, which is then exactly what the checked path gives it (epsilon 0, exact scores).
bool plain_policy(const py::handle& h, Policy& out) {
    LastPolicy& last = last_policy();
    if (h.ptr() == last.object) {
        out = last.value;
        return true;
    }
    if (PyUnicode_Check(h.ptr())) {
        Py_ssize_t size = 0;
        const char* text = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
        if (text == nullptr) {
            PyErr_Clear();  // not UTF-8 encodable: no policy's name; the checked path says so
            return false;
        }
        const std::string_view given(text, static_cast<std::size_t>(size));
        for (const Policy p : {Policy::Rollout, Policy::Dp, Policy::CostedWindow, Policy::Window,
                               Policy::Never, Policy::StaticRoi, Policy::Guarded}) {
            if (given == name(p)) {
                Py_XDECREF(last.object);
                last.object = h.inc_ref().ptr();
                last.value = out = p;
                return true;
            }
        }
        return false;
    }
    if (!py::isinstance<Policy>(h)) return false;
    out = h.cast<Policy>();
    return true;
}

bool no_guard(const py::handle& epsilon, const py::handle& noise, const py::handle& scores) {
    return noise.is_none() && scores.is_none() && PyFloat_CheckExact(epsilon.ptr()) &&
           PyFloat_AS_DOUBLE(epsilon.ptr()) == 0.0;
}

decide_args::Result decide(const Model& model, const decide_args::Int& window,
                           const decide_args::Int& progress, const decide_args::Int& durable,
                           const decide_args::Flag& active, const decide_args::PolicyName& policy,
                           const decide_args::Epsilon& epsilon,
                           const decide_args::Noise& score_noise,
                           const decide_args::Noise& scores) {
    State s;
    Policy p = Policy::Rollout;
    if (plain_int(window, s.window) && plain_int(progress, s.progress) &&
        plain_int(durable, s.durable) && plain_flag(active, s.active) &&
        plain_policy(policy, p) && no_guard(epsilon, score_noise, scores)) {
        return decide_args::Result(action_cache().get(model.decide(s, p)));
    }
    // Anything else (numpy integers, the guarded policy, a bad argument): the Python layer's
    // checks convert it or raise naming the field, with the messages of every other call.
    // They come with the model's class (learnsched.Model builds a subclass defining
    // check_arguments), so that the extension never imports the package.
    const py::object self = py::cast(&model, py::return_value_policy::reference);
    if (!py::hasattr(self, "check_arguments")) {
        throw py::type_error(
            "decide takes a plain int window, progress and durable, a bool active, a policy and "
            "no guard arguments, unless the model's class defines check_arguments");
    }
    const auto args = self.attr("check_arguments")(window, progress, durable, active, policy,
                                                   epsilon, score_noise, scores)
                          .cast<py::tuple>();
    const State checked{args[0].cast<int>(), args[1].cast<int>(), args[2].cast<int>(),
                        args[3].cast<bool>()};
    std::optional<ScoreFunction> estimator;
    const Guard guard =
        python_guard(args[5].cast<double>(), args[6].cast<std::optional<py::function>>(),
                     args[7].cast<std::optional<py::function>>(), estimator);
    const Action a = model.decide(checked, args[4].cast<Policy>(), guard);
    return decide_args::Result(action_cache().get(a));
}

// The floor decide is measured against (bench/test_bench_decide.py): the same arguments
// through the same binding, no work, a cached result.
decide_args::Result decide_floor(const Model&, const decide_args::Int&, const decide_args::Int&,
                                 const decide_args::Int&, const decide_args::Flag&,
                                 const decide_args::PolicyName&, const decide_args::Epsilon&,
                                 const decide_args::Noise&, const decide_args::Noise&) {
    return decide_args::Result(action_cache().get(Action{}));
}

using BatchArrays = py::typing::Dict<py::str, py::array_t<double>>;

BatchArrays batch_arrays(const std::vector<Scenario>& scenarios, const std::vector<Policy>& policies,
                      int threads, double epsilon) {
    std::vector<PlanSummary> rows;
    {
        py::gil_scoped_release release;  // pure C++ from here; arguments already converted
        rows = solve_batch(scenarios, policies, threads, epsilon);
    }
    const auto n = static_cast<py::ssize_t>(scenarios.size());
    const auto p = static_cast<py::ssize_t>(policies.size());
    constexpr auto kCauses = static_cast<py::ssize_t>(CostSplit::kFields.size());
    py::array_t<double> value({n, p}), benefit({n, p}), publish({n, p}), cost({n, p, kCauses});
    auto v = value.mutable_unchecked<2>();
    auto b = benefit.mutable_unchecked<2>();
    auto t = publish.mutable_unchecked<2>();
    auto c = cost.mutable_unchecked<3>();
    for (py::ssize_t i = 0; i < n; ++i) {
        for (py::ssize_t j = 0; j < p; ++j) {
            const PlanSummary& r = rows[static_cast<std::size_t>(i * p + j)];
            v(i, j) = r.value;
            b(i, j) = r.benefit;
            t(i, j) = r.publish_s;
            const auto split = r.cost.as_array();
            for (py::ssize_t q = 0; q < kCauses; ++q) {
                c(i, j, q) = split[static_cast<std::size_t>(q)];
            }
        }
    }
    BatchArrays out;
    out["value"] = value;
    out["benefit"] = benefit;
    out["publish_s"] = publish;
    out["cost"] = cost;
    return out;
}

// `obj` as a contiguous 1-D array of exactly T (a copy only if it is strided), or TypeError /
// ValueError naming the argument: no silent casts (a float is not a window, an int not a flag).
template <class T>
py::array_t<T, py::array::c_style> column(const py::object& obj, const char* what,
                                          const char* dtype, py::ssize_t size) {
    const auto fail_type = [&](const std::string& got) {
        throw py::type_error(std::string(what) + " must be a 1-D numpy array of " + dtype +
                             ", got " + got);
    };
    if (!py::isinstance<py::array>(obj)) fail_type(py::str(py::type::of(obj).attr("__name__")));
    const auto array = py::reinterpret_borrow<py::array>(obj);
    if (!array.dtype().is(py::dtype::of<T>())) fail_type("dtype " + std::string(py::str(array.dtype())));
    if (array.ndim() != 1) {
        throw py::value_error(std::string(what) + " must be 1-D, got " +
                              std::to_string(array.ndim()) + " dimensions");
    }
    if (size >= 0 && array.shape(0) != size) {
        throw py::value_error(std::string(what) + " must have the length of window (" +
                              std::to_string(size) + "), got " + std::to_string(array.shape(0)));
    }
    return py::array_t<T, py::array::c_style>::ensure(array);
}

using Decisions = std::tuple<py::array_t<std::uint8_t>, py::array_t<int>, py::array_t<bool>,
                             py::array_t<bool>>;

Decisions decide_many(const Model& model, const py::object& window, const py::object& progress,
                      const py::object& durable, const py::object& active, Policy policy,
                      double epsilon) {
    const auto windows = column<int>(window, "window", "int32", -1);
    const py::ssize_t n = windows.shape(0);
    const auto progresses = column<int>(progress, "progress", "int32", n);
    const auto durables = column<int>(durable, "durable", "int32", n);
    const auto actives = column<bool>(active, "active", "bool", n);
    py::array_t<std::uint8_t> kind(n);
    py::array_t<int> quanta(n);
    py::array_t<bool> checkpoint(n), cold(n);
    const StateColumns states{windows.data(), progresses.data(), durables.data(),
                              reinterpret_cast<const std::uint8_t*>(actives.data()),
                              static_cast<std::size_t>(n)};
    const ActionColumns out{kind.mutable_data(), quanta.mutable_data(), checkpoint.mutable_data(),
                            cold.mutable_data()};
    {
        py::gil_scoped_release release;  // pure C++ from here; arrays already checked
        model.decide_many(states, policy, Guard{epsilon, {}}, out);
    }
    return {kind, quanta, checkpoint, cold};
}

// A column of any dtype (the plan's columns differ), named numpy.typing.NDArray[typing.Any]
// in the stubs: a bare numpy.ndarray lacks type arguments under numpy < 2.3's stubs.
class AnyArray : public py::array {
public:
    using py::array::array;
};
}  // namespace

namespace pybind11::detail {
template <>
struct handle_type_name<AnyArray> {
    static constexpr auto name = const_name("numpy.typing.NDArray[typing.Any]");
};
}  // namespace pybind11::detail

namespace {
using PlanColumns = py::typing::Dict<py::str, AnyArray>;

// A plan's segments as one array per field, filled in one pass: reading `steps` builds a
// Python object per segment and field, which costs ~250x the plan's C++ walk.
PlanColumns plan_columns(const Plan& plan) {
    const auto n = static_cast<py::ssize_t>(plan.steps.size());
    constexpr auto kCauses = static_cast<py::ssize_t>(CostSplit::kFields.size());
    py::array_t<int> window(n), quanta(n), progress(n), durable(n);
    py::array_t<std::uint8_t> kind(n);
    py::array_t<bool> checkpoint(n), cold(n);
    py::array_t<double> start(n), publish(n), ready(n), benefit(n), cost({n, kCauses});
    auto w = window.mutable_unchecked<1>();
    auto q = quanta.mutable_unchecked<1>();
    auto p = progress.mutable_unchecked<1>();
    auto d = durable.mutable_unchecked<1>();
    auto k = kind.mutable_unchecked<1>();
    auto ck = checkpoint.mutable_unchecked<1>();
    auto cd = cold.mutable_unchecked<1>();
    auto l = start.mutable_unchecked<1>();
    auto t = publish.mutable_unchecked<1>();
    auto r = ready.mutable_unchecked<1>();
    auto b = benefit.mutable_unchecked<1>();
    auto c = cost.mutable_unchecked<2>();
    for (py::ssize_t i = 0; i < n; ++i) {
        const Segment& seg = plan.steps[static_cast<std::size_t>(i)];
        w(i) = seg.window;
        k(i) = static_cast<std::uint8_t>(seg.action.kind);
        q(i) = seg.action.quanta;
        ck(i) = seg.action.checkpoint;
        cd(i) = seg.action.cold;
        l(i) = seg.start_s;
        t(i) = seg.publish_s;
        r(i) = seg.ready_s;
        b(i) = seg.benefit;
        p(i) = seg.next.progress;
        d(i) = seg.next.durable;
        const auto split = seg.cost.as_array();
        for (py::ssize_t j = 0; j < kCauses; ++j) c(i, j) = split[static_cast<std::size_t>(j)];
    }
    PlanColumns out;
    out["window"] = window;
    out["kind"] = kind;
    out["quanta"] = quanta;
    out["checkpoint"] = checkpoint;
    out["cold"] = cold;
    out["start_s"] = start;
    out["publish_s"] = publish;
    out["ready_s"] = ready;
    out["cost"] = cost;
    out["benefit"] = benefit;
    out["progress"] = progress;
    out["durable"] = durable;
    return out;
}

// The tables `policies` read; every table when None.
TableNeeds needed_tables(const std::optional<std::vector<Policy>>& policies) {
    return policies ? table_needs(*policies) : kAllTables;
}

// Model, plans and the batch solver.
void bind_solver(py::module_& m) {
    py::class_<CostSplit>(m, "CostSplit", "Cost in s-eq. split by cause.")
        .def_readonly("work", &CostSplit::work)
        .def_readonly("save", &CostSplit::save)
        .def_readonly("load", &CostSplit::load)
        .def_readonly("recovery", &CostSplit::recovery)
        .def_readonly("residency", &CostSplit::residency)
        .def_property_readonly("total", &CostSplit::total);

    py::class_<Segment>(m, "Segment", "One window of a plan.")
        .def_readonly("window", &Segment::window)
        .def_readonly("action", &Segment::action)
        .def_readonly("start_s", &Segment::start_s)
        .def_readonly("publish_s", &Segment::publish_s, "NaN unless the segment publishes.")
        .def_readonly("ready_s", &Segment::ready_s, "NaN for a wait.")
        .def_readonly("cost", &Segment::cost)
        .def_readonly("benefit", &Segment::benefit)
        .def_readonly("next", &Segment::next, "State at the next window.");

    py::class_<Plan>(m, "Plan", "A policy's plan from the initial state.")
        .def_readonly("policy", &Plan::policy)
        .def_readonly("value", &Plan::value)
        .def_readonly("benefit", &Plan::benefit)
        .def_readonly("publish_s", &Plan::publish_s, "NaN if never published.")
        .def_readonly("cost", &Plan::cost)
        .def_readonly("steps", &Plan::steps, "A list of copies of the segments (copied per read).")
        .def_property_readonly(
            "step_count", [](const Plan& plan) { return plan.steps.size(); },
            "Number of segments, without copying them.")
        .def("columns", &plan_columns,
             "The segments as arrays, one entry per step: window, kind (ActionKind values), "
             "quanta, checkpoint, cold, start_s, publish_s (NaN unless publishing), ready_s "
             "(NaN for a wait), cost (n, 5: in the order of cost_fields()), benefit, progress "
             "and durable (the next state's).");

    py::class_<Model>(m, "Model", "A validated scenario with cached continuation values.")
        .def(py::init([](Scenario scenario, const std::optional<std::vector<Policy>>& policies) {
                 const TableNeeds tables = needed_tables(policies);
                 py::gil_scoped_release release;  // O(K*J) table construction, pure C++
                 return Model(std::move(scenario), tables);
             }),
             py::arg("scenario"), py::arg("policies") = py::none(),
             "Build the tables the policies read (None: every policy's).")
        .def(
            "rebuild",
            [](Model& model, Scenario scenario,
               const std::optional<std::vector<Policy>>& policies) {
                const TableNeeds tables = needed_tables(policies);
                py::gil_scoped_release release;  // pure C++, as in the constructor
                model.rebuild(std::move(scenario), tables);
            },
            py::arg("scenario"), py::arg("policies") = py::none(),
            "Prepare another scenario in this model's memory (tables keep their capacity); "
            "a scenario that fails validation leaves the model unchanged. Not while another "
            "thread uses this model.")
        .def_property_readonly("scenario", &Model::scenario)
        .def("decide", &decide, py::arg("window"), py::arg("progress"), py::arg("durable"),
             py::arg("active") = false, py::arg("policy") = "rollout", py::arg("epsilon") = 0.0,
             py::arg("score_noise") = py::none(), py::arg("scores") = py::none(),
             "learnsched.Model.decide itself (every argument checked here, with its messages): "
             "the policy's action in a validated state; O(log J) per change of incumbent (a "
             "continuation row's first decision indexes it, O(J)). Equal actions are one object.")
        .def("_decide_floor", &decide_floor, py::arg("window"), py::arg("progress"),
             py::arg("durable"), py::arg("active") = false, py::arg("policy") = "rollout",
             py::arg("epsilon") = 0.0, py::arg("score_noise") = py::none(),
             py::arg("scores") = py::none(),
             "decide's binding without its work (the benchmarks' floor): a cached wait.")
        .def("decide_many", &decide_many, py::arg("window"), py::arg("progress"),
             py::arg("durable"), py::arg("active"), py::arg("policy"), py::arg("epsilon") = 0.0,
             "The policy's actions in many states: 1-D arrays window, progress, durable (int32) "
             "and active (bool) of equal length; guarded scores exactly with bound epsilon "
             "(s-eq.). Returns (kind: uint8 ActionKind values, quanta: int32, checkpoint: bool, "
             "cold: bool), one entry per state; ValueError names the first invalid states[i].")
        .def(
            "solve",
            [](const Model& model, Policy policy, double epsilon,
               const std::optional<ScoreCallback>& score_noise,
               const std::optional<ScoreCallback>& scores) {
                std::optional<ScoreFunction> estimator;
                const Guard guard = python_guard(epsilon, score_noise, scores, estimator);
                // Pure C++ but for the callbacks, which take the GIL back for each call.
                py::gil_scoped_release release;
                return model.solve(policy, guard);
            },
            py::arg("policy"), py::arg("epsilon") = 0.0, py::arg("score_noise") = py::none(),
            py::arg("scores") = py::none(), "The policy's plan from the initial state.")
        .def(
            "reference_score",
            [](const Model& model, const State& state, const Action& action) {
                return model.reference_score(state, action);
            },
            py::arg("state"), py::arg("action"),
            "Q^pi0(s, a) = R(s, a) + V^pi0(s'), s-eq., of a feasible action (Eq. 11).")
        .def(
            "feasible_actions",
            [](const Model& model, const State& state) {
                validate_state(model.scenario(), state);
                std::vector<Action> out;
                model.accounting().for_each_action(state, [&](const Action& a) { out.push_back(a); });
                return out;
            },
            py::arg("state"), "Every feasible action of a valid state, in canonical order.")
        .def("window_plan_value", &Model::window_plan_value, py::arg("state"),
             "V_G: value of following Window from the state, s-eq.")
        .def("reference_value", &Model::reference_value, py::arg("state"),
             "V^pi0: value of following Costed Window from the state, s-eq.")
        .def("optimal_value", &Model::optimal_value, py::arg("state"),
             "V*: optimal value of the state (Eq. D.2), s-eq.");

    py::enum_<Reach>(m, "Reach", "Which states guard_check scores.")
        .value("GUARDED", Reach::Guarded)
        .value("ALL", Reach::All);
    py::class_<ScoreErrorReport>(m, "ScoreErrorReport",
                                 "The worst error of score estimates over the reached states.")
        .def_readonly("states", &ScoreErrorReport::states)
        .def_readonly("actions", &ScoreErrorReport::actions)
        .def_readonly("worst", &ScoreErrorReport::worst, "max |Qhat - Q^pi0|, s-eq.")
        .def_readonly("worst_state", &ScoreErrorReport::worst_state)
        .def_readonly("worst_action", &ScoreErrorReport::worst_action)
        .def_readonly("worst_estimate", &ScoreErrorReport::worst_estimate)
        .def_readonly("worst_exact", &ScoreErrorReport::worst_exact);
    m.def(
        "measure_score_error",
        [](const Model& model, const ScoreCallback& scores, double epsilon, Reach reach) {
            const ScoreFunction estimator(checked_callback("scores", scores));
            return measure_score_error(model, estimator, epsilon, reach);
        },
        py::arg("model"), py::arg("scores"), py::arg("epsilon"), py::arg("reach"),
        "The worst |scores(s, a) - Q^pi0(s, a)| over every feasible action of the states reach "
        "names (App. D.3's bound), with where it is.");
    m.def("solve_batch", &batch_arrays, py::arg("scenarios"), py::arg("policies"),
          py::arg("threads") = 1, py::arg("epsilon") = 0.0,
          "Solve every scenario under every policy (guarded: exact scores, bound epsilon); dict of "
          "arrays value, benefit, publish_s (n, p) and cost (n, p, 5: in the order of cost_fields()).");
    m.def(
        "cost_fields",
        [] {
            const auto& fields = CostSplit::kFields;
            return std::vector<std::string>(fields.begin(), fields.end());
        },
        "The cost causes in the order of solve_batch's cost columns.");
    m.attr("MAX_THREADS") = kMaxThreads;
    m.attr("TIE_TOLERANCE") = kTieTolerance;
    m.attr("RELATIVE_TIE_TOLERANCE") = kRelativeTieTolerance;
    m.def(
        "ties",
        [](const py::array_t<double, py::array::forcecast>& a,
           const py::array_t<double, py::array::forcecast>& b) {
            // Shapes checked first: pybind11's vectorize reports a mismatch as an unnamed
            // RuntimeError ("incompatible size/dimension of inputs").
            for (py::ssize_t i = 1; i <= std::min(a.ndim(), b.ndim()); ++i) {
                const py::ssize_t x = a.shape(a.ndim() - i), y = b.shape(b.ndim() - i);
                if (x != y && x != 1 && y != 1) {
                    throw py::value_error("a and b must broadcast to one shape, got shapes " +
                                          std::string(py::str(py::tuple(a.attr("shape")))) +
                                          " and " +
                                          std::string(py::str(py::tuple(b.attr("shape")))));
                }
            }
            return py::vectorize(&ties)(a, b);
        },
        py::arg("a"), py::arg("b"),
          "Elementwise: a and b equal up to rounding noise (the policies' tie rule).");
}

}  // namespace

void bind_finite(py::module_& core) {
    py::module_ m = core.def_submodule(
        "finite", "The finite model: scenarios, states, actions, policies, plans and the solver.");
    bind_types(m);
    bind_solver(m);
}
