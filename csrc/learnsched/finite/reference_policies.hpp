// The reference policies' window rules (paper Section 4.1, spec "Policies").
//
// Recovery path (two-path scenarios): none of these rules values the future, so each picks
// a returning action's path locally, by cheapest_path: the path whose segment fits and
// earns the larger reward R(s, a) (the warm path on ties). Window picks its action by the
// most work any path fits; Never's abandon and every decline return by the cheapest path.
#pragma once

#include <algorithm>

#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/tolerance.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

// cheapest_path with two paths offered: the variant with the larger reward that fits.
inline Action cheaper_of_two_paths(const SegmentAccounting& acc, const State& s, const Action& a) {
    const Action warm = a.by_path(false);
    const Action cold = a.by_path(true);
    if (!acc.fits(s, warm)) return cold;
    if (!acc.fits(s, cold)) return warm;
    return strictly_greater(acc.reward(s, cold), acc.reward(s, warm)) ? cold : warm;
}

// `a` by the path with the larger reward among those where it fits (warm on ties). With one
// path (or when only the warm variant fits) `a` itself. Kept this small so that it inlines
// into the value-table loops, where an out-of-line call per entry costs more than the
// entry's own work (docs/performance.md).
inline Action cheapest_path(const SegmentAccounting& acc, const State& s, const Action& a) {
    return acc.path_count() == 1 ? a : cheaper_of_two_paths(acc, s, a);
}

// Window: publish if the rest fits; else advance the most quanta that fit with a
// checkpoint (never the whole remainder); with none, wait (service) or, if active,
// checkpoint unsaved work and return when that fits, else (or with nothing unsaved)
// discard and return. With two paths the most work either path fits, by the cheaper path
// that fits it.
inline Action window_action(const SegmentAccounting& acc, const State& s) {
    const int rest = acc.remaining(s);
    if (acc.can_publish_any(s)) return cheapest_path(acc, s, Action{ActionKind::Publish, rest, false});
    const int u = std::min(acc.max_quanta_any(s, true), rest - 1);
    if (u >= 1) return cheapest_path(acc, s, Action{ActionKind::Advance, u, true});
    if (!s.active) return Action{ActionKind::Wait, 0, false};
    if (s.progress > s.durable && acc.max_quanta_any(s, true) >= 0) {
        return cheapest_path(acc, s, Action{ActionKind::CheckpointReturn, 0, true});
    }
    return cheapest_path(acc, s, Action{ActionKind::DiscardReturn, 0, false});
}

// Declining is not final: wait, or drop unsaved work and return if active.
inline Action decline_action(const SegmentAccounting& acc, const State& s) {
    return s.active ? cheapest_path(acc, s, Action{ActionKind::DiscardReturn, 0, false})
                    : Action{ActionKind::Wait, 0, false};
}

// Never: wait; an active candidate abandons and pays its (cheapest) return.
inline Action never_action(const SegmentAccounting& acc, const State& s) {
    return s.active ? cheapest_path(acc, s, Action{ActionKind::Abandon, 0, false})
                    : Action{ActionKind::Wait, 0, false};
}

// Static ROI (handoff-blind): Phi(l_k + r*delta) - r*delta = g*(H - l_k - r*delta)^+ -
// r*delta for a constant rate, in s-eq.
inline double static_roi(const SegmentAccounting& acc, const State& s) {
    const Scenario& sc = acc.scenario();
    const double rest_s = acc.remaining(s) * sc.quantum_s;
    const double start_s = sc.windows[static_cast<std::size_t>(s.window)].start_s;
    return acc.benefit().value_after(start_s, rest_s) - rest_s;
}

// Costed Window (pi0): Window's action if the Window plan, priced by `window_values`
// (V_G), beats abandoning now strictly; otherwise decline. Under a forecast the table
// holds the mean of V_G over the samples' continuations.
inline Action costed_window_action(const SegmentAccounting& acc, const ValueTable& window_values,
                                   const State& s) {
    const double go =
        state_value(acc, window_values, s, [&](const State& x) { return window_action(acc, x); });
    // V_ab: abandoning pays the cheapest return (never_action's path).
    const double stop = s.active ? acc.reward(s, never_action(acc, s)) : 0.0;
    return strictly_greater(go, stop) ? window_action(acc, s) : decline_action(acc, s);
}

// V_G: evaluate_policy with window_action, into `values` shaped for acc (constructed or
// reset), bit for bit the same values.
void fill_window_plan_values(const SegmentAccounting& acc, ValueTable& values);

// V^pi0: evaluate_policy with costed_window_action over `window_values` (V_G), into
// `values` shaped for acc, bit for bit the same values.
void fill_reference_values(const SegmentAccounting& acc, const ValueTable& window_values,
                           ValueTable& values);

}  // namespace learnsched
