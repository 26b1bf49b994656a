// The reference policies' window rules (paper Section 4.1, spec "Policies").
#pragma once

#include "segment.hpp"

namespace learnsched {

// Window: publish if the rest fits; else advance the most quanta that fit with a
// checkpoint (never the whole remainder); with none, wait (service) or, if active,
// checkpoint and return when that fits, else discard and return.
Action window_action(const SegmentAccounting& acc, const State& s);

// Declining is not final: wait, or drop unsaved work and return if active.
Action decline_action(const State& s);

// Never: wait; an active candidate abandons and pays its return.
Action never_action(const State& s);

// Static ROI (handoff-blind): g*(H - l_k - r*delta)^+ - r*delta, in s-eq.
double static_roi(const SegmentAccounting& acc, const State& s);

}  // namespace learnsched
