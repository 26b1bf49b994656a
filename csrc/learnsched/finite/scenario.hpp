// Scenario and state types of the finite window model (paper Sections 4.1, 6.1, App. D).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "learnsched/finite/benefit.hpp"

namespace learnsched {

// Largest value table a model may hold: (windows + 1) x (work_quanta + 1) entries. A
// model keeps up to three such tables of doubles (384 MiB at the cap); building V* also
// takes two scratch rows of work_quanta + 1 entries (12 bytes each, at most 96 MiB), freed
// before a fresh model allocates its other tables (docs/performance.md has the peak RSS
// that building a Model adds at the cap).
inline constexpr std::size_t kMaxStates = std::size_t{1} << 24;

// A scenario offering two return paths keeps up to seven tables (its reference adds each
// fixed path's V_G and V^pi0, path_reference.hpp): half the states keeps it near the same
// memory (448 MiB at the cap).
inline constexpr std::size_t kMaxTwoPathStates = kMaxStates / 2;

// Most windows a scenario may have: this bounds a plan's length (one step per window,
// ~100 bytes in C++, read from Python as columns; docs/performance.md has the cost of
// Model.solve("never") at K = 2^17, J = 1).
inline constexpr std::size_t kMaxWindows = std::size_t{1} << 17;

// Plans sum up to one segment per window; every bound on a value they compute is kept
// this far below DBL_MAX, so sums and differences of a few of them stay finite too.
inline constexpr double kMagnitudeHeadroom = 16.0;

// An idle window [start_s, end_s]; service capacity must be ready again by end_s.
struct Window {
    double start_s = 0.0;
    double end_s = 0.0;
    double length_s() const { return end_s - start_s; }
};

// Handoff costs (paper App. D.2). Every second costs 1 s-eq.; warm recovery also
// charges residency_rate s-eq. per second from the window start until capacity is ready.
//
// Recovery path as a decision: with cold_recovery_s set, the scenario offers two return
// paths and every action that returns capacity chooses one (Action::cold). The warm path
// is (recovery_s, residency_rate); the cold one is (cold_recovery_s, rho = 0). Parked
// serving state is "held" exactly where the finite model charges rho: the serving state is
// parked when the window's segment starts (l_k) and released when capacity is ready again
// (l_k + load + u*delta + [save]*t_ck + t_ret), so a warm segment pays rho on its whole
// duration and a cold one parks nothing. A wait returns nothing, parks nothing, pays nothing.
// Without cold_recovery_s the scenario has its one path and every value is as before.
struct HandoffCosts {
    double recovery_s = 0.0;      // t_ret: return path until capacity is ready (warm if two)
    double residency_rate = 0.0;  // rho: s-eq. per second of parked serving state
    double save_s = 0.0;          // t_ck: checkpoint save
    double load_s = 0.0;          // t_ld: checkpoint load when resuming
    std::optional<double> cold_recovery_s;  // t_ret of the cold alternative, if offered

    bool offers_choice() const { return cold_recovery_s.has_value(); }
};

// One way back to serving: its return time and the residency price while it is held.
struct ReturnPath {
    double recovery_s = 0.0;
    double residency_rate = 0.0;
};

// The path an action returns by: the warm one (or the only one), or the cold alternative.
inline ReturnPath return_path(const HandoffCosts& c, bool cold) {
    return cold ? ReturnPath{*c.cold_recovery_s, 0.0} : ReturnPath{c.recovery_s, c.residency_rate};
}

inline std::size_t max_states(const HandoffCosts& costs) {
    return costs.offers_choice() ? kMaxTwoPathStates : kMaxStates;
}

// Decision state (k, p, pbar, active) at the start of window k (paper Eq. 1).
struct State {
    int window = 0;
    int progress = 0;  // completed quanta p
    int durable = 0;   // checkpointed quanta pbar <= p
    bool active = false;
};

struct Scenario {
    std::vector<Window> windows;
    int work_quanta = 0;        // J
    double quantum_s = 0.0;     // delta
    double benefit_rate = 0.0;  // g, s-eq. per second before the horizon
    double horizon_s = 0.0;     // H
    // If not empty, g(t) by pieces instead of the constant benefit_rate (which must be 0):
    // publishing at t_p earns the integral of g from t_p to H (BenefitCurve).
    BenefitSchedule benefit_schedule;
    HandoffCosts costs;
    State initial;  // initial.window must be 0

    int window_count() const { return static_cast<int>(windows.size()); }
};

// Throw std::invalid_argument naming the field and value of the first problem:
// unsorted/overlapping/empty windows, NaN/inf, negative costs, bad quanta, more than
// kMaxWindows windows, a state space above kMaxStates, or magnitudes whose plan values
// could overflow (every plan and value of a valid scenario is finite).
void validate(const Scenario& scenario);

// The benefit fields alone: benefit_rate >= 0, a finite horizon_s and, with a schedule,
// benefit_rate == 0 and validate_benefit_schedule (what BenefitCurve assumes).
void validate_benefit(const Scenario& scenario);

// Throw std::invalid_argument naming benefit_rate[i] and its value unless every piece's
// start is finite and within +-limit_s, starts strictly increase and every rate is
// finite and >= 0.
void validate_benefit_schedule(const BenefitSchedule& schedule, double limit_s);

// The scenario's Phi(t_p) (its constant rate or its schedule, until horizon_s).
inline BenefitCurve benefit_curve(const Scenario& scenario) {
    return BenefitCurve(scenario.benefit_rate, scenario.benefit_schedule, scenario.horizon_s);
}

// Throw std::invalid_argument if `state` is not a valid decision state of `scenario`
// (window out of range, durable > progress, unsaved work in service mode, or an active
// candidate none of whose return paths fits its window).
void validate_state(const Scenario& scenario, const State& state);

}  // namespace learnsched
