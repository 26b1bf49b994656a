// The six policies of the finite experiment (paper Sections 4.1-4.2, App. D).
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
};

std::string_view name(Policy policy);

}  // namespace learnsched
