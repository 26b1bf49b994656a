// learnsched._core.portfolio: portfolios of candidates on several GPUs (portfolio/).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "enums.hpp"
#include "learnsched/portfolio/portfolio.hpp"
#include "learnsched/portfolio/causal.hpp"
#include "learnsched/portfolio/dp.hpp"
#include "learnsched/portfolio/model.hpp"
#include "learnsched/names.hpp"

namespace py = pybind11;
using namespace learnsched;
using learnsched::bindings::bind_enum;

namespace {

using WindowPairs = std::vector<std::pair<double, double>>;

std::vector<Window> to_windows(const WindowPairs& pairs) {
    std::vector<Window> out;
    out.reserve(pairs.size());
    for (const auto& [start, end] : pairs) out.push_back(Window{start, end});
    return out;
}

Portfolio make_portfolio(const std::vector<WindowPairs>& gpus, const SharedReturn& returns,
                         std::optional<double> budget_gpu_s,
                         std::vector<PortfolioCandidate> candidates) {
    Portfolio p;
    p.gpus.reserve(gpus.size());
    for (const WindowPairs& w : gpus) p.gpus.push_back(to_windows(w));
    p.returns = returns;
    p.budget_gpu_s = budget_gpu_s;
    p.candidates = std::move(candidates);
    return p;
}

py::typing::Dict<py::str, py::object> causal_outcome_dict(const CausalPortfolioOutcome& o) {
    py::typing::Dict<py::str, py::object> d;
    d["value"] = o.value;
    d["benefit"] = o.benefit;
    d["cost"] = o.cost;
    d["lateness_s"] = o.lateness_s;
    d["gpu_s"] = o.gpu_s;
    d["late_requests"] = o.late_requests;
    d["requests"] = o.requests;
    d["handoffs"] = o.handoffs;
    d["checkpoints"] = o.checkpoints;
    d["publish_s"] = o.publish_s;
    d["loans"] = o.loans;
    std::vector<double> t;
    std::vector<int> candidate;
    std::vector<std::string> move;
    for (const CausalPortfolioStep& step : o.steps) {
        t.push_back(step.t);
        candidate.push_back(step.candidate);
        move.emplace_back(name(step.move));
    }
    py::dict steps;
    steps["t"] = t;
    steps["candidate"] = candidate;
    steps["move"] = move;
    d["steps"] = steps;
    return d;
}

}  // namespace

void bind_portfolio(py::module_& core) {
    py::module_ m = core.def_submodule(
        "portfolio", "Portfolios: candidates sharing the idle windows of several GPUs.");
    py::register_exception<StateSpaceError>(m, "StateSpaceError", PyExc_ValueError);

    bind_enum(m, "PortfolioPolicy", kPortfolioPolicies, "The portfolio's policies.");

    py::class_<PortfolioCandidate>(m, "PortfolioCandidate", "One finite-model job of a portfolio.")
        .def(py::init([](std::string name, int work_quanta, double quantum_s, double benefit_rate,
                         double horizon_s, double save_s, double load_s,
                         std::optional<double> half_life_s, const State& initial,
                         const std::vector<std::pair<double, double>>& benefit_schedule) {
                 BenefitSchedule schedule;
                 schedule.reserve(benefit_schedule.size());
                 for (const auto& [start, rate] : benefit_schedule) schedule.push_back({start, rate});
                 return PortfolioCandidate{std::move(name), work_quanta, quantum_s, benefit_rate,
                                           std::move(schedule), horizon_s, save_s, load_s,
                                           half_life_s, initial};
             }),
             py::arg("name"), py::arg("work_quanta"), py::arg("quantum_s"),
             py::arg("benefit_rate"), py::arg("horizon_s"), py::arg("save_s"), py::arg("load_s"),
             py::arg("half_life_s"), py::arg("initial"),
             py::arg("benefit_schedule") = std::vector<std::pair<double, double>>{},
             "benefit_schedule: (start_s, rate) pieces of g(t); if given, benefit_rate must be 0.")
        .def_readonly("name", &PortfolioCandidate::name)
        .def_readonly("work_quanta", &PortfolioCandidate::work_quanta)
        .def_readonly("quantum_s", &PortfolioCandidate::quantum_s)
        .def_readonly("benefit_rate", &PortfolioCandidate::benefit_rate)
        .def_readonly("horizon_s", &PortfolioCandidate::horizon_s)
        .def_readonly("save_s", &PortfolioCandidate::save_s)
        .def_readonly("load_s", &PortfolioCandidate::load_s)
        .def_readonly("half_life_s", &PortfolioCandidate::half_life_s)
        .def_readonly("initial", &PortfolioCandidate::initial);

    py::class_<SharedReturn>(m, "SharedReturn", "The serving engine's return path(s).")
        .def(py::init<double, double, std::optional<double>>(), py::arg("recovery_s"),
             py::arg("residency_rate"), py::arg("cold_recovery_s") = py::none())
        .def_readonly("recovery_s", &SharedReturn::recovery_s)
        .def_readonly("residency_rate", &SharedReturn::residency_rate)
        .def_readonly("cold_recovery_s", &SharedReturn::cold_recovery_s);

    py::class_<Portfolio>(m, "Portfolio", "Candidates sharing the idle windows of GPUs.")
        .def(py::init(&make_portfolio), py::arg("gpus"), py::arg("returns"),
             py::arg("budget_gpu_s"), py::arg("candidates"))
        .def_property_readonly("gpu_count", [](const Portfolio& p) { return p.gpus.size(); })
        .def_readonly("returns", &Portfolio::returns)
        .def_readonly("budget_gpu_s", &Portfolio::budget_gpu_s)
        .def_readonly("candidates", &Portfolio::candidates);
    m.def("validate_portfolio", py::overload_cast<const Portfolio&>(&validate), py::arg("portfolio"),
          "ValueError naming the field of the first problem (StateSpaceError when too large).");

    py::class_<CandidateState>(m, "CandidateState", "One candidate's part of a portfolio state.")
        .def(py::init([](int progress, int durable, bool active, bool done, double busy_until_s) {
                 return CandidateState{progress, durable, active, done, busy_until_s};
             }),
             py::arg("progress"), py::arg("durable"), py::arg("active").noconvert(),
             py::arg("done").noconvert(), py::arg("busy_until_s"))
        .def_readonly("progress", &CandidateState::progress)
        .def_readonly("durable", &CandidateState::durable)
        .def_readonly("active", &CandidateState::active)
        .def_readonly("done", &CandidateState::done)
        .def_readonly("busy_until_s", &CandidateState::busy_until_s);

    py::class_<PortfolioState>(m, "PortfolioState", "The state at the start of a stage.")
        .def(py::init([](int stage, double gpu_s, std::vector<CandidateState> candidates) {
                 return PortfolioState{stage, gpu_s, std::move(candidates)};
             }),
             py::arg("stage"), py::arg("gpu_s"), py::arg("candidates"))
        .def_readonly("stage", &PortfolioState::stage)
        .def_readonly("gpu_s", &PortfolioState::gpu_s)
        .def_readonly("candidates", &PortfolioState::candidates);

    py::class_<PortfolioAction>(m, "PortfolioAction", "A stage's choice: candidate -1 waits.")
        .def(py::init<int, Action>(), py::arg("candidate"), py::arg("action"))
        .def_readonly("candidate", &PortfolioAction::candidate)
        .def_readonly("action", &PortfolioAction::action)
        .def("__eq__",
             [](const PortfolioAction& a, const py::object& other) -> py::object {
                 if (!py::isinstance<PortfolioAction>(other)) {
                     return py::reinterpret_borrow<py::object>(Py_NotImplemented);
                 }
                 return py::bool_(a == other.cast<const PortfolioAction&>());
             })
        .def("__hash__", [](const PortfolioAction& a) {
            return py::hash(py::make_tuple(a.candidate, static_cast<int>(a.action.kind),
                                           a.action.quanta, a.action.checkpoint, a.action.cold));
        })
        .def("__repr__", [](const PortfolioAction& a) {
            return "PortfolioAction(" + std::to_string(a.candidate) + ", " +
                   py::repr(py::cast(a.action)).cast<std::string>() + ")";
        });

    py::class_<PortfolioStep>(m, "PortfolioStep", "One stage of a portfolio plan.")
        .def_readonly("stage", &PortfolioStep::stage)
        .def_readonly("gpu", &PortfolioStep::gpu)
        .def_readonly("candidate", &PortfolioStep::candidate)
        .def_readonly("segment", &PortfolioStep::segment)
        .def_readonly("gpu_s", &PortfolioStep::gpu_s);

    py::class_<PortfolioPlan>(m, "PortfolioPlan", "A portfolio policy's plan.")
        .def_readonly("policy", &PortfolioPlan::policy)
        .def_readonly("value", &PortfolioPlan::value)
        .def_readonly("benefit", &PortfolioPlan::benefit)
        .def_readonly("gpu_s", &PortfolioPlan::gpu_s)
        .def_readonly("cost", &PortfolioPlan::cost)
        .def_readonly("publish_s", &PortfolioPlan::publish_s, "Per candidate; NaN if unpublished.")
        .def_readonly("steps", &PortfolioPlan::steps, "One per stage (copied per read).");

    py::class_<PortfolioModel>(m, "PortfolioModel", "A validated, prepared portfolio.")
        .def(py::init([](Portfolio portfolio, const std::vector<PortfolioPolicy>& policies) {
                 py::gil_scoped_release release;  // validation and tables: pure C++
                 return PortfolioModel(std::move(portfolio), policies);
             }),
             py::arg("portfolio"), py::arg("policies"))
        .def_property_readonly("stage_count", &PortfolioModel::stage_count)
        .def("stage",
             [](const PortfolioModel& model, int i) {
                 if (i < 0 || i >= model.stage_count()) {
                     throw py::index_error("stage must be in [0, " +
                                           std::to_string(model.stage_count()) + "), got " +
                                           std::to_string(i));
                 }
                 const Stage& st = model.stage(i);
                 return py::make_tuple(st.gpu, st.window, st.start_s);
             },
             py::arg("i"), "(gpu, window, start_s) of stage i.")
        .def("initial_state", &PortfolioModel::initial_state)
        .def(
            "decide",
            [](const PortfolioModel& model, const PortfolioState& x, PortfolioPolicy policy) {
                py::gil_scoped_release release;  // pure C++; arguments already converted
                return model.decide(x, policy);
            },
            py::arg("state"), py::arg("policy"), "The policy's action in a validated state.")
        .def(
            "choices",
            [](const PortfolioModel& model, const PortfolioState& x) {
                model.validate_state(x);
                std::vector<PortfolioAction> out;
                model.for_each_choice(x, [&](const PortfolioAction& a) { out.push_back(a); });
                return out;
            },
            py::arg("state"),
            "The choices rollout and DP score, in canonical order (wait first unless a "
            "candidate is forced; advances without a checkpoint left out).")
        .def(
            "step",
            [](const PortfolioModel& model, const PortfolioState& x, const PortfolioAction& a) {
                model.validate_state(x);
                model.validate_action(x, a);
                PortfolioStep step = model.take(x, a);
                PortfolioState next = x;
                model.advance(next, step);
                return py::make_tuple(step, next);
            },
            py::arg("state"), py::arg("action"),
            "(step, next state) of a feasible action; ValueError otherwise.")
        .def(
            "solve",
            [](const PortfolioModel& model, PortfolioPolicy policy) {
                py::gil_scoped_release release;  // pure C++
                return model.solve(policy);
            },
            py::arg("policy"), "The policy's plan from the initial state.")
        .def("reference_value", &PortfolioModel::reference_value, py::arg("state"),
             "V^pi0: value of following the portfolio Costed Window from the state, s-eq.")
        .def(
            "optimal_value",
            [](const PortfolioModel& model, const PortfolioState& x) {
                model.validate_state(x);
                py::gil_scoped_release release;  // pure C++
                return PortfolioDp(model).value(x);
            },
            py::arg("state"), "V*: the DP's value of the state (Eq. D.2), s-eq.")
        .def(
            "benefit",
            [](const PortfolioModel& model, int c, double publish_s) {
                if (c < 0 || c >= model.candidate_count()) {
                    throw py::index_error("candidate must be in [0, " +
                                          std::to_string(model.candidate_count()) + "), got " +
                                          std::to_string(c));
                }
                return model.benefit(c, publish_s);
            },
            py::arg("candidate"), py::arg("publish_s"),
             "Phi_c(t_p): what candidate c earns by publishing at publish_s, s-eq.");

    m.attr("MAX_CANDIDATES") = kMaxCandidates;
    m.attr("MAX_GPUS") = kMaxGpus;
    m.attr("MAX_DP_STATES") = kMaxDpStates;
    m.attr("MAX_DP_STAGES") = kMaxDpStages;

    m.def(
        "run_portfolio_causal",
        [](const UnlentSchedule& schedule, const std::vector<CausalCandidate>& candidates,
           const std::vector<int>& durable,
           const std::vector<std::optional<const GapPool*>>& pools,
           const std::vector<std::optional<const SampleTables*>>& tables, double from_s,
           double to_s,
           const std::string& portfolio_policy, const std::string& policy, double return_level,
           std::uint64_t seed) {
            if (pools.size() != candidates.size() || tables.size() != candidates.size()) {
                throw std::invalid_argument("give one pool and one tables (or None) per candidate");
            }
            if (!(return_level >= 0.0 && return_level <= 1.0)) {
                throw std::invalid_argument("return_level must be in [0, 1], got " +
                                            std::to_string(return_level));
            }
            std::vector<CausalForecast> forecasts;
            for (std::size_t c = 0; c < candidates.size(); ++c) {
                forecasts.push_back(
                    CausalForecast{pools[c].value_or(nullptr), tables[c].value_or(nullptr)});
            }
            const CausalPortfolioPolicy shared =
                named(portfolio_policy, kCausalPortfolioPolicies, "causal portfolio policy");
            const CausalPolicy own = named(policy, kCausalPolicies, "candidate policy");
            CausalPortfolioOutcome out;
            {
                py::gil_scoped_release release;  // pure C++
                out = run_portfolio_causal(schedule, candidates, durable, forecasts, from_s, to_s,
                                           shared, own, return_level, seed);
            }
            return causal_outcome_dict(out);
        },
        py::arg("schedule"), py::arg("candidates"), py::arg("durable"), py::arg("pools"),
        py::arg("tables"), py::arg("from_s"), py::arg("to_s"), py::arg("portfolio_policy"),
        py::arg("policy"), py::arg("return_level"), py::arg("seed"),
        "A causal portfolio over [from_s, to_s) of the schedule: totals, per-candidate "
        "publish_s (NaN: not published) and loans, and its steps: per decision t, the "
        "candidate the GPU is held for (-1: waiting) and the move.");
    m.def("causal_portfolio_policies", [] { return names(kCausalPortfolioPolicies); },
          "The causal portfolio policies, in output order.");
}
