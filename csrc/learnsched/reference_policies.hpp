// The reference policies' window rules (paper Section 4.1, spec "Policies").
#pragma once

#include <algorithm>

#include "segment.hpp"
#include "tolerance.hpp"
#include "value_table.hpp"

namespace learnsched {

// Window: publish if the rest fits; else advance the most quanta that fit with a
// checkpoint (never the whole remainder); with none, wait (service) or, if active,
// checkpoint and return when that fits, else discard and return.
inline Action window_action(const SegmentAccounting& acc, const State& s) {
    const int rest = acc.remaining(s);
    if (acc.can_publish(s)) return Action{ActionKind::Publish, rest, false};
    const int u = std::min(acc.max_quanta(s, true), rest - 1);
    if (u >= 1) return Action{ActionKind::Advance, u, true};
    if (!s.active) return Action{ActionKind::Wait, 0, false};
    if (acc.max_quanta(s, true) >= 0) return Action{ActionKind::CheckpointReturn, 0, true};
    return Action{ActionKind::DiscardReturn, 0, false};
}

// Declining is not final: wait, or drop unsaved work and return if active.
inline Action decline_action(const State& s) {
    return s.active ? Action{ActionKind::DiscardReturn, 0, false} : Action{ActionKind::Wait, 0, false};
}

// Never: wait; an active candidate abandons and pays its return.
inline Action never_action(const State& s) {
    return s.active ? Action{ActionKind::Abandon, 0, false} : Action{ActionKind::Wait, 0, false};
}

// Static ROI (handoff-blind): g*(H - l_k - r*delta)^+ - r*delta, in s-eq.
inline double static_roi(const SegmentAccounting& acc, const State& s) {
    const Scenario& sc = acc.scenario();
    const double rest_s = acc.remaining(s) * sc.quantum_s;
    const double start_s = sc.windows[static_cast<std::size_t>(s.window)].start_s;
    return sc.benefit_rate * std::max(0.0, sc.horizon_s - start_s - rest_s) - rest_s;
}

// Costed Window (pi0): Window's action if the Window plan, priced by `window_values`
// (V_G), beats abandoning now strictly; otherwise decline. Under a forecast the table
// holds the mean of V_G over the samples' continuations.
inline Action costed_window_action(const SegmentAccounting& acc, const ValueTable& window_values,
                                   const State& s) {
    const double go =
        state_value(acc, window_values, s, [&](const State& x) { return window_action(acc, x); });
    const double stop = s.active ? acc.reward(s, Action{ActionKind::Abandon, 0, false}) : 0.0;
    return strictly_greater(go, stop) ? window_action(acc, s) : decline_action(s);
}

}  // namespace learnsched
