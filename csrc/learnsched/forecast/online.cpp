#include "learnsched/forecast/online.hpp"

#include <cstddef>
#include <limits>

namespace learnsched {

std::vector<Plan> run_online(const Scenario& truth, const SampleTables& tables,
                             const std::vector<Policy>& policies) {
    validate(truth);
    std::vector<Plan> plans(policies.size() + 1);
    for (Plan& plan : plans) plan.publish_s = std::numeric_limits<double>::quiet_NaN();
    std::vector<State> states(policies.size(), truth.initial);
    std::vector<bool> live(policies.size(), true);
    std::size_t alive = policies.size();
    Scenario current = truth;
    current.initial = State{};
    for (int k = 0; k < truth.window_count() && alive > 0; ++k) {
        current.windows.assign(1, truth.windows[static_cast<std::size_t>(k)]);
        const ForecastModel model(current, tables);  // the samples' rows after window k
        for (std::size_t p = 0; p < policies.size(); ++p) {
            if (!live[p]) continue;
            State s = states[p];
            s.window = 0;
            const Action a = model.decide(s, policies[p]);
            Segment seg = model.take(s, a);
            seg.window = k;
            seg.next.window = k + 1;
            Plan& plan = plans[p];
            plan.value += seg.reward();  // summed as Model::solve sums
            plan.benefit += seg.benefit;
            plan.cost += seg.cost;
            if (a.kind == ActionKind::Publish) plan.publish_s = seg.publish_s;
            plan.steps.push_back(seg);
            if (a.is_terminal()) {
                live[p] = false;
                --alive;
            } else {
                states[p] = seg.next;
            }
        }
    }
    for (std::size_t p = 0; p < policies.size(); ++p) plans[p].policy = policies[p];
    plans.back() = Model(truth, table_needs(Policy::Dp)).solve(Policy::Dp);
    return plans;
}

}  // namespace learnsched
