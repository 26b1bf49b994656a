// learnsched._core.causal: causal scheduling on request traces (UnlentSchedule, GapPool,
// CausalCandidate, causal decisions and runs, the scenario-tree DP).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "casts.hpp"
#include "learnsched/finite/batch.hpp"
#include "learnsched/causal/run.hpp"
#include "learnsched/names.hpp"
#include "learnsched/parallel.hpp"
#include "learnsched/causal/scenario_tree.hpp"

namespace py = pybind11;
using namespace learnsched;
using learnsched::bindings::cast_field;

namespace {

// The dicts runs return (totals and a "steps" dict of columns), typed for the stubs.
using OutcomeDict = py::typing::Dict<py::str, py::object>;

using Doubles = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<double> column(const Doubles& a, const char* field) {
    if (a.ndim() != 1) {
        throw std::invalid_argument(std::string(field) + " must be a 1-D array, got ndim " +
                                    std::to_string(a.ndim()));
    }
    return std::vector<double>(a.data(), a.data() + a.shape(0));
}

Doubles as_array(const std::vector<double>& v) { return Doubles(static_cast<py::ssize_t>(v.size()), v.data()); }

Doubles window_array(const std::vector<Window>& windows) {
    Doubles out({static_cast<py::ssize_t>(windows.size()), py::ssize_t{2}});
    auto w = out.mutable_unchecked<2>();
    for (std::size_t k = 0; k < windows.size(); ++k) {
        w(static_cast<py::ssize_t>(k), 0) = windows[k].start_s;
        w(static_cast<py::ssize_t>(k), 1) = windows[k].end_s;
    }
    return out;
}

// The most draws one call makes (16 bytes each: 256 MiB).
constexpr std::size_t kMaxDraws = std::size_t{1} << 24;

void check_threads(int threads) {
    if (threads < 1 || threads > kMaxThreads) {
        throw std::invalid_argument("threads must be in [1, " + std::to_string(kMaxThreads) +
                                    "], got " + std::to_string(threads));
    }
}

// A record of the pool (-1: none known); the pool's own accessors do not check (hot path).
std::int32_t check_record(const GapPool& pool, std::int32_t record) {
    if (record < -1 || (record >= 0 && static_cast<std::size_t>(record) >= pool.size())) {
        throw std::invalid_argument("record must be -1 or in [0, " + std::to_string(pool.size()) +
                                    "), got " + std::to_string(record));
    }
    return record;
}

void check_level(double level) {
    if (!(level >= 0.0 && level <= 1.0)) {
        throw std::invalid_argument("return_level must be in [0, 1], got " + std::to_string(level));
    }
}

// One run of a batch: the pointers stay valid while the Python call holds their objects.
// One job of run_causal by name, as the caller gave it: run_causal checks each field, so that
// an error names the job and the field (jobs[i].seed).
struct CausalJob {
    py::object candidate, from_s, to_s, policy, return_level, pool, tables, seed, keep_steps;
};

struct Job {
    CausalCandidate candidate;
    double from_s = 0.0, to_s = 0.0;
    CausalPolicy policy = CausalPolicy::Window;
    double return_level = 0.0;
    CausalForecast forecast;
    std::uint64_t seed = 0;
    bool keep_steps = false;
};

py::typing::Dict<py::str, py::array> steps_dict(const CausalOutcome& o) {
    const auto n = static_cast<py::ssize_t>(o.steps.size());
    py::array_t<double> t(n), gap(n), reward(n), lateness(n);
    py::array_t<int> progress(n), durable(n), quanta(n), late(n);
    py::array_t<bool> lent(n);
    py::array_t<std::uint8_t> plan(n), move(n);
    for (py::ssize_t i = 0; i < n; ++i) {
        const CausalStep& s = o.steps[static_cast<std::size_t>(i)];
        t.mutable_at(i) = s.point.t;
        gap.mutable_at(i) = s.point.gap_start;
        progress.mutable_at(i) = s.point.progress;
        durable.mutable_at(i) = s.point.durable;
        lent.mutable_at(i) = s.point.lent;
        plan.mutable_at(i) = static_cast<std::uint8_t>(s.decision.plan.kind);
        quanta.mutable_at(i) = s.decision.plan.quanta;
        move.mutable_at(i) = static_cast<std::uint8_t>(s.decision.move);
        reward.mutable_at(i) = s.result.reward;
        late.mutable_at(i) = s.result.late_requests;
        lateness.mutable_at(i) = s.result.lateness_s;
    }
    py::typing::Dict<py::str, py::array> d;
    d["t"] = t;
    d["gap_start"] = gap;
    d["progress"] = progress;
    d["durable"] = durable;
    d["lent"] = lent;
    d["plan"] = plan;
    d["quanta"] = quanta;
    d["move"] = move;
    d["reward"] = reward;
    d["late_requests"] = late;
    d["lateness_s"] = lateness;
    return d;
}

// Decisions kept across calls (a control loop's): its own draw stream and scratch. It
// holds the Python objects of its pool and tables, so their C++ objects outlive it.
class Decider {
  public:
    Decider(const CausalCandidate& c, const std::string& policy, double level, py::object pool,
            py::object tables, std::uint64_t seed)
        : candidate_(prepare(c)),
          policy_(named(policy, kCausalPolicies, "causal policy")),
          level_(level),
          pool_object_(std::move(pool)), tables_object_(std::move(tables)), rng_(seed) {
        check_level(level_);
        if (!pool_object_.is_none()) {
            forecast_.pool = &cast_field<const GapPool&>(pool_object_, "pool", "a GapPool or None");
        }
        if (!tables_object_.is_none()) {
            forecast_.tables = &cast_field<const SampleTables&>(tables_object_, "tables",
                                                                "SampleTables or None");
            if (forecast_.tables->candidate().work_quanta != candidate_.work_quanta) {
                throw std::invalid_argument("tables were built for another work size");
            }
        }
    }
    py::typing::Tuple<py::str, py::int_, py::str> decide(double t, double gap_start, int progress,
                                                          int durable, bool lent) {
        if (!(t >= gap_start) || !std::isfinite(t) || !std::isfinite(gap_start)) {
            throw std::invalid_argument("t must be finite and >= gap_start, got t = " +
                                        std::to_string(t) + ", gap_start = " +
                                        std::to_string(gap_start));
        }
        if (durable < 0 || durable > progress || progress >= candidate_.work_quanta ||
            (!lent && progress != durable)) {
            throw std::invalid_argument("invalid state: progress " + std::to_string(progress) +
                                        ", durable " + std::to_string(durable) +
                                        (lent ? " (lent)" : " (idle)"));
        }
        const CausalDecision d = learnsched::decide(
            candidate_, CausalPoint{t, gap_start, progress, durable, lent}, policy_, level_,
            forecast_, rng_, scratch_);
        return py::typing::Tuple<py::str, py::int_, py::str>(
            py::make_tuple(plan_names_[static_cast<std::size_t>(d.plan.kind)], d.plan.quanta,
                           move_names_[static_cast<std::size_t>(d.move)]));
    }

  private:
    CausalCandidate candidate_;
    CausalPolicy policy_;
    double level_;
    py::object pool_object_;
    py::object tables_object_;
    CausalForecast forecast_;
    std::uint64_t rng_;
    DecisionScratch scratch_;
    // The names a decision returns, made once (a control loop asks every quantum).
    std::array<py::str, 8> plan_names_ = names<8, PlanKind>();
    std::array<py::str, 6> move_names_ = names<6, Move>();

    template <std::size_t N, typename Enum>
    static std::array<py::str, N> names() {
        std::array<py::str, N> out;
        for (std::size_t k = 0; k < N; ++k) out[k] = py::str(name(static_cast<Enum>(k)));
        return out;
    }
};

const GapPool* pool_of(const py::object& pool, const std::string& field) {
    return pool.is_none() ? nullptr : &cast_field<const GapPool&>(pool, field, "a GapPool or None");
}

const SampleTables* tables_of(const py::object& tables, const std::string& field) {
    return tables.is_none()
               ? nullptr
               : &cast_field<const SampleTables&>(tables, field, "SampleTables or None");
}

OutcomeDict outcome_dict(const CausalOutcome& o) {
    OutcomeDict d;
    d["value"] = o.value;
    d["benefit"] = o.benefit;
    d["cost"] = o.cost;
    d["lent_s"] = o.lent_s;
    d["lateness_s"] = o.lateness_s;
    d["late_requests"] = o.late_requests;
    d["requests"] = o.requests;
    d["handoffs"] = o.handoffs;
    d["checkpoints"] = o.checkpoints;
    d["published"] = o.published;
    d["publish_s"] = o.publish_s;
    d["steps"] = steps_dict(o);
    return d;
}

}  // namespace

void bind_causal(py::module_& core) {
    py::module_ m = core.def_submodule(
        "causal", "Causal scheduling on a request trace: gaps, their forecast, decisions, runs.");
    py::class_<UnlentSchedule>(m, "UnlentSchedule",
                               "A request trace served FIFO with nothing lent, and its idle gaps.")
        .def(py::init([](const Doubles& arrival, const Doubles& service, const Doubles& deadline) {
                 RequestTrace t{column(arrival, "arrival"), column(service, "service"),
                                column(deadline, "deadline")};
                 py::gil_scoped_release release;  // pure C++ from here: O(n)
                 return std::make_unique<UnlentSchedule>(std::move(t));
             }),
             py::arg("arrival"), py::arg("service"), py::arg("deadline"),
             "Requests in arrival order: arrival, service (work / rate) and deadline, seconds.")
        .def_property_readonly("gap_count", &UnlentSchedule::gap_count)
        .def(
            "gaps",
            [](const UnlentSchedule& s) {
                std::vector<double> start, arrival, deadline;
                for (std::size_t j = 0; j < s.gap_count(); ++j) {
                    start.push_back(s.gap_start(j));
                    arrival.push_back(s.gap_arrival(j));
                    deadline.push_back(s.gap_deadline(j));
                }
                return py::typing::Tuple<Doubles, Doubles, Doubles>(
                    py::make_tuple(as_array(start), as_array(arrival), as_array(deadline)));
            },
            "(start, arrival, return deadline D) of every idle gap, seconds.")
        .def(
            "causal_windows",
            [](const UnlentSchedule& s, double from_s, double to_s, double quantum_s,
               double recovery_s, bool overlap) {
                return window_array(
                    causal_windows(s, from_s, to_s, quantum_s, recovery_s, overlap));
            },
            py::arg("from_s"), py::arg("to_s"), py::arg("quantum_s"), py::arg("recovery_s"),
            py::arg("overlap") = false,
            "The gaps starting in [from_s, to_s) that fit a quantum as windows: [g, A], or "
            "with overlap [g, min(D, A + t_ret, next gap start)].");

    py::class_<GapRecords>(m, "GapRecords",
                           "A trace's past gaps, each scanned once, for the pools fitted on them.")
        .def(py::init<const UnlentSchedule&, double, double, double, double, int>(),
             py::arg("schedule"), py::arg("from_s"), py::arg("until_s"), py::arg("close_s"),
             py::arg("reach_s"), py::arg("threads") = 1,
             py::call_guard<py::gil_scoped_release>(),
             "The gaps arriving at or after from_s and closed (arrival + close_s) by until_s, "
             "seconds; each keeps its slacks below reach_s. Scanned on `threads` threads "
             "(the records do not depend on it).")
        .def_property_readonly("size", &GapRecords::size);

    py::class_<GapPool>(m, "GapPool", "Past idle gaps fitted at a time: the current gap's forecast.")
        .def(py::init([](const UnlentSchedule& schedule, double now_s, double history_s,
                         double close_s, double reach_s, const std::string& model,
                         int repeat_last) {
                 const GapModel kind = named(model, kGapModels, "gap model");
                 py::gil_scoped_release release;  // pure C++ from here
                 return std::make_unique<GapPool>(schedule, now_s, history_s, close_s, reach_s,
                                                  kind, repeat_last);
             }),
             py::arg("schedule"), py::arg("now_s"), py::arg("history_s"), py::arg("close_s"),
             py::arg("reach_s"), py::arg("model") = "empirical", py::arg("repeat_last") = 8,
             py::keep_alive<1, 2>())
        .def(py::init([](const GapRecords& records, double now_s, double history_s,
                         std::optional<double> reach_s, const std::string& model,
                         int repeat_last) {
                 const GapModel kind = named(model, kGapModels, "gap model");
                 py::gil_scoped_release release;  // pure C++ from here
                 return std::make_unique<GapPool>(records, now_s, history_s,
                                                  reach_s.value_or(records.reach()), kind,
                                                  repeat_last);
             }),
             py::arg("records"), py::arg("now_s"), py::arg("history_s"),
             py::arg("reach_s") = py::none(), py::arg("model") = "empirical",
             py::arg("repeat_last") = 8,
             "The same fit from shared records (their close_s), which must hold every gap it "
             "reads; reach_s (seconds, at most the records', None: theirs) bounds the slacks "
             "kept (0 where only the gap is forecast, as scores() does).")
        .def_property_readonly("size", &GapPool::size)
        .def(
            "draw",
            [](const GapPool& pool, double age_s, std::size_t n, std::uint64_t seed) {
                if (n > kMaxDraws) {
                    throw std::invalid_argument("n must be <= " + std::to_string(kMaxDraws) +
                                                ", got " + std::to_string(n));
                }
                std::vector<GapPool::Draw> draws(n);
                std::uint64_t rng = seed;
                pool.draw(age_s, n, rng, draws.data());
                std::vector<double> remaining(n);
                py::array_t<int> record(static_cast<py::ssize_t>(n));
                for (std::size_t i = 0; i < n; ++i) {
                    remaining[i] = draws[i].remaining_s;
                    record.mutable_at(static_cast<py::ssize_t>(i)) = draws[i].record;
                }
                return py::typing::Tuple<Doubles, py::array_t<int>>(
                    py::make_tuple(as_array(remaining), record));
            },
            py::arg("age_s"), py::arg("n"), py::arg("seed"),
            "(remaining_s, record) of n draws of the current gap at age age_s.")
        .def(
            "lateness",
            [](const GapPool& pool, std::int32_t record, double overrun_s) {
                return pool.lateness(check_record(pool, record), overrun_s);
            },
            py::arg("record"), py::arg("overrun_s"),
             "Request-seconds of lateness of capacity ready overrun_s after the arrival.")
        .def(
            "slack",
            [](const GapPool& pool, std::int32_t record) {
                return pool.slack(check_record(pool, record));
            },
            py::arg("record"))
        .def(
            "scores",
            [](const GapPool& pool, const Doubles& ages, const Doubles& remaining,
               std::uint64_t seed) {
                const std::vector<double> a = column(ages, "ages");
                const std::vector<double> r = column(remaining, "remaining");
                if (a.size() != r.size()) {
                    throw std::invalid_argument("ages and remaining must have equal lengths");
                }
                std::vector<double> pit(a.size()), crps(a.size());
                {
                    py::gil_scoped_release release;  // pure C++
                    std::uint64_t rng = seed;
                    for (std::size_t i = 0; i < a.size(); ++i) {
                        const GapPool::Score s = pool.score(a[i], r[i], rng);
                        pit[i] = s.pit;
                        crps[i] = s.crps_s;
                    }
                }
                return py::typing::Tuple<Doubles, Doubles>(
                    py::make_tuple(as_array(pit), as_array(crps)));
            },
            py::arg("ages"), py::arg("remaining"), py::arg("seed"),
            "(PIT, CRPS seconds) of the remaining-length forecast at each age against the truth.")
        .def(
            "windows",
            [](const GapPool& pool, double quantum_s, double recovery_s) {
                return window_array(pool.windows(quantum_s, recovery_s));
            },
            py::arg("quantum_s"), py::arg("recovery_s"),
            "The records' causal windows [g, A + min(D - A, t_ret)] in time order, (K, 2).");

    py::class_<CausalCandidate>(m, "CausalCandidate", "The candidate of causal scheduling.")
        .def(py::init([](int work_quanta, double quantum_s, double benefit_rate, double horizon_s,
                         double recovery_s, double residency_rate, double save_s, double load_s,
                         double lateness_price,
                         const std::vector<std::pair<double, double>>& benefit_schedule) {
                 CausalCandidate c;
                 c.work_quanta = work_quanta;
                 c.quantum_s = quantum_s;
                 c.benefit_rate = benefit_rate;
                 for (const auto& [start, rate] : benefit_schedule) {
                     c.benefit_schedule.push_back(BenefitPiece{start, rate});
                 }
                 c.horizon_s = horizon_s;
                 c.recovery_s = recovery_s;
                 c.residency_rate = residency_rate;
                 c.save_s = save_s;
                 c.load_s = load_s;
                 c.lateness_price = lateness_price;
                 return prepare(std::move(c));
             }),
             py::arg("work_quanta"), py::arg("quantum_s"), py::arg("benefit_rate"),
             py::arg("horizon_s"), py::arg("recovery_s"), py::arg("residency_rate"),
             py::arg("save_s"), py::arg("load_s"), py::arg("lateness_price"),
             py::arg("benefit_schedule") = std::vector<std::pair<double, double>>{})
        .def_readonly("work_quanta", &CausalCandidate::work_quanta)
        .def_readonly("quantum_s", &CausalCandidate::quantum_s)
        .def_readonly("benefit_rate", &CausalCandidate::benefit_rate)
        .def_readonly("horizon_s", &CausalCandidate::horizon_s)
        .def_readonly("recovery_s", &CausalCandidate::recovery_s)
        .def_readonly("residency_rate", &CausalCandidate::residency_rate)
        .def_readonly("save_s", &CausalCandidate::save_s)
        .def_readonly("load_s", &CausalCandidate::load_s)
        .def_readonly("lateness_price", &CausalCandidate::lateness_price);

    py::class_<CausalSim>(m, "CausalSim",
                          "One horizon of causal scheduling, a move at a time (tests, tools).")
        .def(py::init<const UnlentSchedule&, const CausalCandidate&, double, double>(),
             py::arg("schedule"), py::arg("candidate"), py::arg("from_s"), py::arg("to_s"),
             py::keep_alive<1, 2>())
        .def_property_readonly("deciding", &CausalSim::deciding)
        .def_property_readonly(
            "point",
            [](const CausalSim& sim) {
                const CausalPoint& p = sim.point();
                return py::typing::Tuple<py::float_, py::float_, py::int_, py::int_, py::bool_>(
                    py::make_tuple(p.t, p.gap_start, p.progress, p.durable, p.lent));
            },
            "(t, gap_start, progress, durable, lent) at the decision point.")
        .def("allows", [](const CausalSim& sim, const std::string& move) {
            return sim.allows(named(move, kMoves, "move"));
        })
        .def(
            "apply",
            [](CausalSim& sim, const std::string& move) {
                const CausalSim::StepResult r = sim.apply(named(move, kMoves, "move"));
                return py::typing::Tuple<py::float_, py::int_, py::float_>(
                    py::make_tuple(r.reward, r.late_requests, r.lateness_s));
            },
            py::arg("move"), "(reward, late requests, lateness_s) of the move's step.")
        .def_property_readonly("value", &CausalSim::value)
        .def_property_readonly("benefit", &CausalSim::benefit)
        .def_property_readonly("cost", &CausalSim::cost)
        .def_property_readonly("lent_s", &CausalSim::lent_s)
        .def_property_readonly("lateness_s", &CausalSim::lateness_s)
        .def_property_readonly("late_requests", &CausalSim::late_requests)
        .def_property_readonly("requests", &CausalSim::requests)
        .def_property_readonly("handoffs", &CausalSim::handoffs)
        .def_property_readonly("checkpoints", &CausalSim::checkpoints)
        .def_property_readonly("bound", &CausalSim::bound);

    py::class_<Decider>(m, "CausalDecider",
                        "Causal decisions with their own draw stream (a control loop's).")
        .def(py::init<const CausalCandidate&, const std::string&, double, py::object, py::object,
                      std::uint64_t>(),
             py::arg("candidate"), py::arg("policy"), py::arg("return_level"), py::arg("pool"),
             py::arg("tables"), py::arg("seed"))
        .def("decide", &Decider::decide, py::arg("t"), py::arg("gap_start"), py::arg("progress"),
             py::arg("durable"), py::arg("lent"),
             "(plan kind, quanta, move) at a quantum boundary of the current gap.");

    py::class_<CausalJob>(m, "CausalJob",
                          "One run of run_causal: a policy over one horizon of the schedule.")
        .def(py::init<py::object, py::object, py::object, py::object, py::object, py::object,
                      py::object, py::object, py::object>(),
             py::arg("candidate"), py::arg("from_s"), py::arg("to_s"), py::arg("policy"),
             py::arg("return_level"), py::arg("pool"), py::arg("tables"), py::arg("seed"),
             py::arg("keep_steps") = false,
             "Fields as given (a CausalCandidate, seconds, a policy name, a level in [0, 1], a "
             "GapPool or None, SampleTables or None, an int in [0, 2**64), a bool): run_causal "
             "checks them.")
        .def_readonly("candidate", &CausalJob::candidate)
        .def_readonly("from_s", &CausalJob::from_s)
        .def_readonly("to_s", &CausalJob::to_s)
        .def_readonly("policy", &CausalJob::policy)
        .def_readonly("return_level", &CausalJob::return_level)
        .def_readonly("pool", &CausalJob::pool)
        .def_readonly("tables", &CausalJob::tables)
        .def_readonly("seed", &CausalJob::seed)
        .def_readonly("keep_steps", &CausalJob::keep_steps);

    m.def(
        "run_causal",
        [](const UnlentSchedule& schedule, const py::typing::List<CausalJob>& jobs, int threads) {
            check_threads(threads);
            std::vector<Job> work;
            work.reserve(jobs.size());
            for (const py::handle& item : jobs) {
                const std::string at = "jobs[" + std::to_string(work.size()) + "]";
                const auto& t = cast_field<const CausalJob&>(item, at, "a CausalJob");
                Job j;
                j.candidate = cast_field<CausalCandidate>(t.candidate, at + ".candidate",
                                                          "a CausalCandidate");
                j.from_s = cast_field<double>(t.from_s, at + ".from_s", "a number");
                j.to_s = cast_field<double>(t.to_s, at + ".to_s", "a number");
                const auto policy = cast_field<std::string>(t.policy, at + ".policy", "a str");
                j.policy = named(policy, kCausalPolicies, "causal policy");
                j.return_level =
                    cast_field<double>(t.return_level, at + ".return_level", "a number");
                check_level(j.return_level);
                j.forecast = CausalForecast{pool_of(t.pool, at + ".pool"),
                                            tables_of(t.tables, at + ".tables")};
                j.seed = cast_field<std::uint64_t>(t.seed, at + ".seed", "an int in [0, 2**64)");
                j.keep_steps = cast_field<bool>(t.keep_steps, at + ".keep_steps", "a bool");
                work.push_back(j);
            }
            std::vector<CausalOutcome> out(work.size());
            {
                py::gil_scoped_release release;  // pure C++: each job writes only its outcome
                run_blocks(work.size(), threads, [&](std::size_t begin, std::size_t end) {
                    for (std::size_t i = begin; i < end; ++i) {
                        const Job& j = work[i];
                        out[i] = run_causal(schedule, j.candidate, j.from_s, j.to_s, j.policy,
                                            j.return_level, j.forecast, j.seed, j.keep_steps);
                    }
                });
            }
            py::typing::List<OutcomeDict> results;
            for (const CausalOutcome& o : out) results.append(outcome_dict(o));
            return results;
        },
        py::arg("schedule"), py::arg("jobs"), py::arg("threads") = 1,
        "Run each CausalJob over the schedule, on threads; one dict of totals and steps per "
        "job.");

    m.def(
        "exact_schedule",
        [](const UnlentSchedule& schedule, const CausalCandidate& candidate, double from_s,
           double to_s, std::size_t max_nodes) {
            ExactSchedule best;
            {
                py::gil_scoped_release release;  // pure C++
                best = exact_schedule(schedule, candidate, from_s, to_s, max_nodes);
            }
            OutcomeDict d = outcome_dict(best.outcome);
            d["nodes"] = best.nodes;
            return d;
        },
        py::arg("schedule"), py::arg("candidate"), py::arg("from_s"), py::arg("to_s"),
        py::arg("max_nodes") = 20000000,
        "The clairvoyant: the best schedule knowing the whole trace, replayed (a dict as "
        "run_causal's, plus the decision states solved).");

    m.def("stream_seed", &stream_seed, py::arg("seed"), py::arg("horizon"), py::arg("policy"),
          "The decision stream of (seed, horizon, policy).");

    m.def(
        "stochastic_dp",
        [](const std::vector<const UnlentSchedule*>& branches,
           const std::vector<double>& probabilities, const CausalCandidate& candidate,
           double from_s, double to_s, std::size_t max_nodes, bool prune) {
            for (std::size_t b = 0; b < branches.size(); ++b) {  // None casts to nullptr
                if (branches[b] == nullptr) {
                    throw std::invalid_argument("branches[" + std::to_string(b) +
                                                "] must be an UnlentSchedule, got None");
                }
            }
            py::gil_scoped_release release;  // pure C++
            return stochastic_dp(branches, probabilities, candidate, from_s, to_s, max_nodes,
                                 prune);
        },
        py::arg("branches"), py::arg("probabilities"), py::arg("candidate"), py::arg("from_s"),
        py::arg("to_s"), py::arg("max_nodes") = 1000000, py::arg("prune") = true,
        "The optimal non-anticipative expected value over a scenario tree of traces, s-eq.");

    m.def("causal_plans", [] { return names(kPlanKinds); },
          "The plan kinds of causal decisions, by their index in steps' plan column.");
    m.def("causal_moves", [] { return names(kMoves); },
          "The moves of causal decisions, by their index in steps' move column.");
    m.def("causal_policies", [] { return names(kCausalPolicies); },
          "The causal policies, in output order.");
    m.def("gap_models", [] { return names(kGapModels); },
          "How a causal decision can forecast the current idle gap.");
}
