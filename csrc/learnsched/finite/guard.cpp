#include "learnsched/finite/guard.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace learnsched {

void validate(const Guard& guard) {
    if (std::isnan(guard.epsilon) || guard.epsilon < 0.0) {
        throw std::invalid_argument("epsilon must be >= 0 s-eq., got " + std::to_string(guard.epsilon));
    }
    if (guard.noise && guard.scores != nullptr) {
        throw std::invalid_argument("a guard takes score noise or score estimates, not both");
    }
}

double checked_estimate(const ScoreEstimator& scores, const State& state, const Action& action) {
    const double q = scores.score(state, action);
    if (!std::isfinite(q)) {
        throw std::invalid_argument("score estimate must be finite, got " + std::to_string(q) +
                                    " for action " + std::string(name(action.kind)) +
                                    " with quanta=" + std::to_string(action.quanta) +
                                    " in window " + std::to_string(state.window));
    }
    return q;
}

}  // namespace learnsched
