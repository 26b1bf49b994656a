// The six policies of the finite experiment (paper Sections 4.1-4.2, App. D), and the
// guarded rollout the paper names as the condition for online use (Section 4.2, App. D.3).
#pragma once

#include <string_view>

namespace learnsched {

enum class Policy : unsigned char {
    Never,         // wait; an active candidate abandons
    Window,        // greedy: publish if it fits, else the most checkpointed quanta
    StaticRoi,     // Window, gated by a handoff-blind return on investment
    CostedWindow,  // pi0: Window, gated by the fully priced value of the Window plan
    Rollout,       // LearnSched: one-step rollout over pi0 (Eq. 11)
    Dp,            // exact optimum (Eq. D.2)
    Guarded,       // rollout that replaces pi0's action only by a score margin > 2*epsilon (Eq. D.5)
};

std::string_view name(Policy policy);

}  // namespace learnsched
