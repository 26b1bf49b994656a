// The guarded rollout's score-error bound and score estimates (paper Section 4.2, App. D.3).
#pragma once

#include <functional>
#include <utility>

#include "learnsched/finite/action.hpp"
#include "learnsched/finite/scenario.hpp"

namespace learnsched {

// Error of an estimated score, s-eq.: Qhat(s, a) = Q^pi0(s, a) + noise(s, a). It must be a
// deterministic, finite function of (state, action); empty means exact scores.
using ScoreNoise = std::function<double(const State&, const Action&)>;

// A user's own estimate Qhat(s, a) of the reference-continuation score Q^pi0(s, a) =
// R(s, a) + V^pi0(s'), s-eq. (App. D.3), for every feasible action of every state the
// guarded policy visits: a deterministic, finite function of (state, action).
class ScoreEstimator {
  public:
    virtual ~ScoreEstimator() = default;
    virtual double score(const State& state, const Action& action) const = 0;
};

// A ScoreEstimator made of a function (a C++ lambda, or a Python callable via pybind11).
class ScoreFunction final : public ScoreEstimator {
  public:
    explicit ScoreFunction(std::function<double(const State&, const Action&)> f)
        : f_(std::move(f)) {}
    double score(const State& state, const Action& action) const override {
        return f_(state, action);
    }

  private:
    std::function<double(const State&, const Action&)> f_;
};

// Guarded policy pi_G: it replaces pi0's action a0 by the best-scored action a only if
// Ahat(a) = Qhat(a) - Qhat(a0) > 2*epsilon (Eq. D.5). When |Qhat - Q^pi0| <= epsilon wherever
// the policy can visit (guard_check.hpp measures it), the true advantage
// A(a) >= Ahat(a) - 2*epsilon > 0, so V^pi_G >= V^pi0 (Eq. D.6). epsilon = 0 with exact
// scores is Rollout; epsilon = inf is Costed Window.
struct Guard {
    double epsilon = 0.0;  // score-error bound, s-eq. (>= 0; inf allowed)
    ScoreNoise noise;      // Qhat = Q^pi0 + noise(s, a), for tests of the bound
    const ScoreEstimator* scores = nullptr;  // Qhat = scores->score(s, a); not owned
};

// std::invalid_argument for a NaN or negative epsilon, or both noise and scores given.
void validate(const Guard& guard);

// scores.score(state, action), or std::invalid_argument naming the action unless finite.
double checked_estimate(const ScoreEstimator& scores, const State& state, const Action& action);

}  // namespace learnsched
