// How far a user's score estimates are from the exact reference-continuation scores over
// the states a policy can reach: the bound the guarded rollout's guarantee needs
// (App. D.3, Eqs. D.5-D.6: |Qhat - Q^pi0| <= epsilon for every candidate and reference
// action wherever the policy can visit, including states reached after replacements).
#pragma once

#include <cstddef>

#include "learnsched/finite/guard.hpp"
#include "learnsched/finite/model.hpp"

namespace learnsched {

enum class Reach : unsigned char {
    // The states the guarded policy visits from the initial state with these estimates and
    // this epsilon: the induction of Eq. D.6 uses the bound there and nowhere else, so a
    // worst error <= epsilon gives V^pi_G(s0) >= V^pi0(s0).
    Guarded,
    // Every state any feasible plan reaches from the initial state: a worst error <= epsilon
    // there bounds every guarded run with any epsilon at or above it.
    All,
};

struct ScoreErrorReport {
    std::size_t states = 0;   // states whose actions were scored
    std::size_t actions = 0;  // (state, action) pairs scored
    double worst = 0.0;       // max |Qhat(s, a) - Q^pi0(s, a)|, s-eq.
    State worst_state;        // where the worst error is (the first such, in visiting order)
    Action worst_action;
    double worst_estimate = 0.0;  // Qhat there, s-eq.
    double worst_exact = 0.0;     // Q^pi0 there, s-eq.
};

// The estimates' worst error over `reach` from the model's initial state, scoring every
// feasible action of every state (each state once). `model` must hold V^pi0 (and, for
// Reach::Guarded, `epsilon` is the guarded policy's bound). std::invalid_argument for a bad
// epsilon or a non-finite estimate (naming the action).
ScoreErrorReport measure_score_error(const Model& model, const ScoreEstimator& scores,
                                     double epsilon, Reach reach);

}  // namespace learnsched
