#include "learnsched/causal/policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"

namespace learnsched {

const char* name(CausalPolicy policy) {
    switch (policy) {
        case CausalPolicy::Never: return "never";
        case CausalPolicy::Window: return "window";
        case CausalPolicy::CostedWindow: return "costed_window";
        case CausalPolicy::Rollout: return "rollout";
        case CausalPolicy::MeanDp: return "mean_dp";
        case CausalPolicy::RiskRollout: return "risk_rollout";
    }
    return "unknown";
}

TableNeeds table_needs(CausalPolicy policy) {
    switch (policy) {
        case CausalPolicy::Never:
        case CausalPolicy::Window: return {};
        case CausalPolicy::CostedWindow: return {true, false, false};
        case CausalPolicy::Rollout:
        case CausalPolicy::RiskRollout: return {true, true, false};
        case CausalPolicy::MeanDp: return {false, false, true};
    }
    throw std::invalid_argument("unknown causal policy " +
                                std::to_string(static_cast<int>(policy)));
}

const char* name(PlanKind kind) {
    switch (kind) {
        case PlanKind::Wait: return "wait";
        case PlanKind::Abandon: return "abandon";
        case PlanKind::CheckpointReturn: return "checkpoint_return";
        case PlanKind::DiscardReturn: return "discard_return";
        case PlanKind::Greedy: return "greedy";
        case PlanKind::Publish: return "publish";
        case PlanKind::Advance: return "advance";
        case PlanKind::Optimal: return "optimal";
    }
    return "unknown";
}

const char* name(Move move) {
    switch (move) {
        case Move::Wait: return "wait";
        case Move::Work: return "work";
        case Move::Save: return "save";
        case Move::CheckpointReturn: return "checkpoint_return";
        case Move::DiscardReturn: return "discard_return";
        case Move::Abandon: return "abandon";
    }
    return "unknown";
}

}  // namespace learnsched
