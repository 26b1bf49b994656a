#include "learnsched/finite/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "learnsched/finite/tolerance.hpp"
#include "learnsched/check.hpp"

namespace learnsched {
namespace {

void require_finite(const char* field, double value) {
    if (!std::isfinite(value)) fail(field, " must be finite, got ", value);
}

void require_non_negative(const char* field, double value) {
    require_finite(field, value);
    if (value < 0.0) fail(field, " must be >= 0, got ", value);
}

void validate_windows(const std::vector<Window>& windows) {
    if (windows.empty()) fail("windows must hold at least one [start, end] window");
    for (std::size_t k = 0; k < windows.size(); ++k) {
        const Window& w = windows[k];
        if (!std::isfinite(w.start_s) || !std::isfinite(w.end_s)) {
            fail("windows[", k, "] must be finite, got [", w.start_s, ", ", w.end_s, "]");
        }
        if (!(w.end_s > w.start_s)) {
            fail("windows[", k, "] must end after it starts, got [", w.start_s, ", ", w.end_s, "]");
        }
        if (k > 0 && w.start_s < windows[k - 1].end_s) {
            fail("windows[", k, "] starts at ", w.start_s, " before windows[", k - 1,
                 "] ends at ", windows[k - 1].end_s, " (windows must be sorted and non-overlapping)");
        }
    }
}

// Each field can be finite while a quantity the model computes from them is not
// (1e308-second windows, g*H near DBL_MAX, K segments near 1e307 s-eq. each): reject
// those before they turn into inf. A plan's value is a benefit minus at most K segment
// costs, so bounding both bounds every plan, value-table entry and timeline.
void validate_magnitudes(const Scenario& scenario) {
    constexpr double kLimit = std::numeric_limits<double>::max() / kMagnitudeHeadroom;
    for (std::size_t k = 0; k < scenario.windows.size(); ++k) {
        const Window& w = scenario.windows[k];
        if (!(w.length_s() <= kLimit)) {
            fail("windows[", k, "] is too long to represent: [", w.start_s, ", ", w.end_s, "]");
        }
        if (!(std::abs(w.start_s) <= kLimit) || !(std::abs(w.end_s) <= kLimit)) {
            fail("windows[", k, "] is too far from time 0: [", w.start_s, ", ", w.end_s,
                 "] (times must be within +-", kLimit, " s)");
        }
    }
    const HandoffCosts& c = scenario.costs;
    const double slowest_recovery_s = std::max(c.recovery_s, c.cold_recovery_s.value_or(0.0));
    const double longest_segment_s =
        c.load_s + scenario.work_quanta * scenario.quantum_s + c.save_s + slowest_recovery_s;
    if (!(longest_segment_s <= kLimit)) {
        fail("work_quanta x quantum_s plus the handoff costs overflows: ",
             scenario.work_quanta, " x ", scenario.quantum_s);
    }
    const double segment_cost = longest_segment_s * (1.0 + c.residency_rate);
    if (!(segment_cost <= kLimit)) {
        fail("residency_rate ", c.residency_rate, " x the longest segment ", longest_segment_s,
             " s overflows");
    }
    const double plan_cost = segment_cost * static_cast<double>(scenario.windows.size());
    if (!(plan_cost <= kLimit)) {
        fail("windows x the longest segment's cost overflows: ", scenario.windows.size(), " x ",
             segment_cost, " s-eq.");
    }
    const double earliest_s = scenario.windows.front().start_s;
    double benefit = scenario.benefit_rate * std::abs(scenario.horizon_s - earliest_s);
    if (!(benefit <= kLimit) || !(std::abs(scenario.horizon_s) <= kLimit)) {
        fail("benefit_rate x (horizon_s - windows[0] start) overflows: ", scenario.benefit_rate,
             " x (", scenario.horizon_s, " - ", earliest_s, ")");
    }
    if (!scenario.benefit_schedule.empty()) {
        // Phi never increases with t_p (rates >= 0): the earliest publication earns the most.
        benefit = benefit_curve(scenario).value(earliest_s);
        if (!(benefit <= kLimit)) {
            fail("the benefit schedule's integral from windows[0] start ", earliest_s,
                 " to horizon_s ", scenario.horizon_s, " overflows: ", benefit, " s-eq.");
        }
    }
    if (!(plan_cost + benefit <= kLimit)) {
        fail("benefit_rate x (horizon_s - windows[0] start) plus windows x the longest "
             "segment's cost overflows: ", benefit, " + ", plan_cost, " s-eq.");
    }
}

}  // namespace

void validate(const Scenario& scenario) {
    validate_windows(scenario.windows);
    if (scenario.work_quanta < 1) fail("work_quanta must be >= 1, got ", scenario.work_quanta);
    require_finite("quantum_s", scenario.quantum_s);
    if (!(scenario.quantum_s > 0.0)) fail("quantum_s must be > 0, got ", scenario.quantum_s);
    validate_benefit(scenario);
    require_non_negative("recovery_s", scenario.costs.recovery_s);
    require_non_negative("residency_rate", scenario.costs.residency_rate);
    require_non_negative("save_s", scenario.costs.save_s);
    require_non_negative("load_s", scenario.costs.load_s);
    if (scenario.costs.offers_choice()) {
        require_non_negative("cold_recovery_s", *scenario.costs.cold_recovery_s);
    }

    validate_magnitudes(scenario);

    if (scenario.windows.size() > kMaxWindows) {
        fail("windows must hold at most ", kMaxWindows, " windows, got ", scenario.windows.size());
    }
    const std::size_t states =
        (scenario.windows.size() + 1) * (static_cast<std::size_t>(scenario.work_quanta) + 1);
    const bool two_paths = scenario.costs.offers_choice();
    if (states > max_states(scenario.costs)) {
        fail("(windows + 1) x (work_quanta + 1) = ", scenario.windows.size() + 1, " x ",
             static_cast<std::size_t>(scenario.work_quanta) + 1, " = ", states,
             " states exceeds the limit of ", max_states(scenario.costs),
             two_paths ? " for a scenario offering two return paths" : "");
    }
    if (scenario.initial.window != 0) {
        fail("initial.window must be 0, got ", scenario.initial.window);
    }
    validate_state(scenario, scenario.initial);
}

void validate_benefit(const Scenario& scenario) {
    require_non_negative("benefit_rate", scenario.benefit_rate);
    require_finite("horizon_s", scenario.horizon_s);
    if (scenario.benefit_schedule.empty()) return;
    if (scenario.benefit_rate != 0.0) {
        fail("benefit_rate must be 0 when a benefit schedule is given, got ",
             scenario.benefit_rate);
    }
    validate_benefit_schedule(scenario.benefit_schedule,
                              std::numeric_limits<double>::max() / kMagnitudeHeadroom);
}

void validate_benefit_schedule(const BenefitSchedule& schedule, double limit_s) {
    for (std::size_t i = 0; i < schedule.size(); ++i) {
        const BenefitPiece& piece = schedule[i];
        if (!std::isfinite(piece.start_s) || !(std::abs(piece.start_s) <= limit_s)) {
            fail("benefit_rate[", i, "] start must be finite and within +-", limit_s, " s, got ",
                 piece.start_s);
        }
        if (!std::isfinite(piece.rate) || piece.rate < 0.0) {
            fail("benefit_rate[", i, "] rate must be finite and >= 0 s-eq./s, got ", piece.rate);
        }
        if (i > 0 && !(piece.start_s > schedule[i - 1].start_s)) {
            fail("benefit_rate[", i, "] starts at ", piece.start_s, ", not after benefit_rate[",
                 i - 1, "] at ", schedule[i - 1].start_s, " (pieces must be sorted by start)");
        }
    }
}

void validate_state(const Scenario& scenario, const State& state) {
    if (state.window < 0 || state.window >= scenario.window_count()) {
        fail("window must be in [0, ", scenario.window_count(), "), got ", state.window);
    }
    if (state.progress < 0 || state.progress > scenario.work_quanta) {
        fail("progress must be in [0, work_quanta=", scenario.work_quanta, "], got ",
             state.progress);
    }
    if (state.durable < 0 || state.durable > state.progress) {
        fail("durable must be in [0, progress=", state.progress, "], got ", state.durable);
    }
    if (!state.active && state.durable != state.progress) {
        fail("a service-mode state keeps no unsaved work: progress=", state.progress,
             " must equal durable=", state.durable, " unless active");
    }
    const Window& w = scenario.windows[static_cast<std::size_t>(state.window)];
    const HandoffCosts& c = scenario.costs;
    const double fastest_recovery_s =
        std::min(c.recovery_s, c.cold_recovery_s.value_or(c.recovery_s));
    if (state.active && !fits_within(fastest_recovery_s, w.start_s, w.end_s)) {
        fail("an active candidate must be able to return within its window: recovery_s=",
             fastest_recovery_s, " exceeds windows[", state.window, "] length ", w.length_s());
    }
}

}  // namespace learnsched
