// The guarded rollout's score-error bound and score estimates (paper Section 4.2, App. D.3).
#pragma once

#include <functional>

#include "action.hpp"
#include "scenario.hpp"

namespace learnsched {

// Error of an estimated score, s-eq.: Qhat(s, a) = Q^pi0(s, a) + noise(s, a). It must be a
// deterministic, finite function of (state, action); empty means exact scores.
using ScoreNoise = std::function<double(const State&, const Action&)>;

// Guarded policy pi_G: it replaces pi0's action a0 by the best-scored action a only if
// Ahat(a) = Qhat(a) - Qhat(a0) > 2*epsilon (Eq. D.5). When |noise| <= epsilon wherever the
// policy can visit, the true advantage A(a) >= Ahat(a) - 2*epsilon > 0, so V^pi_G >= V^pi0
// (Eq. D.6). epsilon = 0 with exact scores is Rollout; epsilon = inf is Costed Window.
struct Guard {
    double epsilon = 0.0;  // score-error bound, s-eq. (>= 0; inf allowed)
    ScoreNoise noise;
};

// std::invalid_argument for a NaN or negative epsilon.
void validate(const Guard& guard);

}  // namespace learnsched
