#include "model.hpp"

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "reference_policies.hpp"
#include "tolerance.hpp"

namespace learnsched {
namespace {

Scenario validated(Scenario scenario) {
    validate(scenario);
    return scenario;
}

}  // namespace

Model::Model(Scenario scenario)
    : acc_(validated(std::move(scenario))),
      window_values_(acc_.window_count(), acc_.work_quanta()),
      reference_values_(acc_.window_count(), acc_.work_quanta()),
      optimal_values_(optimal_values(acc_)) {
    evaluate_policy(acc_, window_values_, [&](const State& s) { return window_action(acc_, s); });
    evaluate_policy(acc_, reference_values_,
                    [&](const State& s) { return costed_window_action(s); });
}

Action Model::costed_window_action(const State& s) const {
    return learnsched::costed_window_action(acc_, window_values_, s);
}

Action Model::choose(const State& s, Policy policy) const {
    switch (policy) {
        case Policy::Never: return never_action(s);
        case Policy::Window: return window_action(acc_, s);
        case Policy::StaticRoi:
            return strictly_greater(static_roi(acc_, s), 0.0) ? window_action(acc_, s)
                                                               : decline_action(s);
        case Policy::CostedWindow: return costed_window_action(s);
        case Policy::Rollout:  // Eq. 11: keep pi0's action unless another scores strictly higher
            return best_action(acc_, reference_values_, s, costed_window_action(s));
        case Policy::Dp:  // from wait (or abandon), which leads the canonical order
            return best_action(acc_, optimal_values_, s, never_action(s));
    }
    throw std::invalid_argument("policy must be one of the six Policy values, got " +
                                std::to_string(static_cast<int>(policy)));
}

Action Model::decide(const State& state, Policy policy) const {
    validate_state(scenario(), state);
    return choose(state, policy);
}

Plan Model::solve(Policy policy) const {
    Plan plan;
    plan.policy = policy;
    plan.publish_s = std::numeric_limits<double>::quiet_NaN();
    plan.steps.reserve(static_cast<std::size_t>(acc_.window_count()));
    State s = scenario().initial;
    while (s.window < acc_.window_count()) {
        const Action a = choose(s, policy);
        Segment seg = acc_.take(s, a);
        plan.value += seg.reward();
        plan.benefit += seg.benefit;
        plan.cost += seg.cost;
        if (a.kind == ActionKind::Publish) plan.publish_s = seg.publish_s;
        s = seg.next;
        plan.steps.push_back(std::move(seg));
        if (a.is_terminal()) break;
    }
    return plan;
}

double Model::window_plan_value(const State& state) const {
    validate_state(scenario(), state);
    return state_value(acc_, window_values_, state,
                       [&](const State& s) { return window_action(acc_, s); });
}

double Model::reference_value(const State& state) const {
    validate_state(scenario(), state);
    return state_value(acc_, reference_values_, state,
                       [&](const State& s) { return costed_window_action(s); });
}

double Model::optimal_value(const State& state) const {
    validate_state(scenario(), state);
    return state_value(acc_, optimal_values_, state,
                       [&](const State& s) { return choose(s, Policy::Dp); });
}

}  // namespace learnsched
