// Model, plans and the batch solver of learnsched._core.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "learnsched/batch.hpp"
#include "learnsched/model.hpp"
#include "learnsched/tolerance.hpp"

namespace py = pybind11;
using namespace learnsched;

namespace {

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

// The tables `policies` read; every table when None.
TableNeeds needed_tables(const std::optional<std::vector<Policy>>& policies) {
    return policies ? table_needs(*policies) : kAllTables;
}

}  // namespace

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
        .def_readonly("steps", &Plan::steps);

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
        .def(
            "decide",
            [](const Model& model, int window, int progress, int durable, bool active,
               Policy policy) {
                return model.decide(State{window, progress, durable, active}, policy);
            },
            // noconvert: an int, numpy integer or float is not taken as a flag.
            py::arg("window"), py::arg("progress"), py::arg("durable"),
            py::arg("active").noconvert(), py::arg("policy"),
            "The policy's action in a validated state; O(J).")
        .def(
            "decide_guarded",
            [](const Model& model, int window, int progress, int durable, bool active,
               double epsilon, std::optional<ScoreNoise> score_noise) {
                return model.decide(State{window, progress, durable, active}, Policy::Guarded,
                                    Guard{epsilon, score_noise.value_or(ScoreNoise{})});
            },
            // noconvert: an int, numpy integer or float is not taken as a flag.
            py::arg("window"), py::arg("progress"), py::arg("durable"),
            py::arg("active").noconvert(), py::arg("epsilon") = 0.0,
            py::arg("score_noise") = py::none(),
            "The guarded policy's action: score-error bound epsilon (s-eq.) and score_noise "
            "(state, action) -> s-eq. (None: exact scores); O(J) plus one call per action.")
        .def(
            "solve",
            [](const Model& model, Policy policy, double epsilon,
               std::optional<ScoreNoise> score_noise) {
                const Guard guard{epsilon, score_noise.value_or(ScoreNoise{})};
                // Pure C++ but for score_noise, which takes the GIL back for each call.
                py::gil_scoped_release release;
                return model.solve(policy, guard);
            },
            py::arg("policy"), py::arg("epsilon") = 0.0, py::arg("score_noise") = py::none(),
            "The policy's plan from the initial state.")
        .def("window_plan_value", &Model::window_plan_value, py::arg("state"),
             "V_G: value of following Window from the state, s-eq.")
        .def("reference_value", &Model::reference_value, py::arg("state"),
             "V^pi0: value of following Costed Window from the state, s-eq.")
        .def("optimal_value", &Model::optimal_value, py::arg("state"),
             "V*: optimal value of the state (Eq. D.2), s-eq.");

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
    m.def("ties", py::vectorize(&ties), py::arg("a"), py::arg("b"),
          "Elementwise: a and b equal up to rounding noise (the policies' tie rule).");
}
