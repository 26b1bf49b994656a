#include "learnsched/finite/path_reference.hpp"

#include <utility>

#include "learnsched/finite/reference_policies.hpp"
#include "learnsched/finite/tolerance.hpp"

namespace learnsched {

Scenario fixed_path_scenario(const Scenario& two_path, bool cold) {
    Scenario one = two_path;
    const HandoffCosts& c = two_path.costs;
    const ReturnPath path = return_path(c, cold);
    one.costs = HandoffCosts{path.recovery_s, path.residency_rate, c.save_s, c.load_s, {}};
    one.initial = State{};
    return one;
}

Action path_choice_action(const std::array<FixedPathTables, 2>& paths, const State& s) {
    Action best{};
    double best_value = 0.0;
    bool found = false;
    for (int p = 0; p < 2; ++p) {
        const FixedPathTables& f = paths[static_cast<std::size_t>(p)];
        // An active candidate follows only a path that can return from its window.
        if (s.active && f.acc->max_quanta(s, false) < 0) continue;
        const Action a = costed_window_action(*f.acc, *f.window, s);
        const double value = action_value(*f.acc, *f.reference, s, a);  // V^{CW_p}(s)
        if (!found || strictly_greater(value, best_value)) {  // warm on ties
            best = a.kind == ActionKind::Wait ? a : a.by_path(p == 1);  // a wait returns nothing
            best_value = value;
            found = true;
        }
    }
    return best;  // a valid active state can return by some path
}

void PathChoiceReference::build(const SegmentAccounting& acc) {
    for (int p = 0; p < 2; ++p) {
        FixedPath& f = paths_[static_cast<std::size_t>(p)];
        f.acc.emplace(fixed_path_scenario(acc.scenario(), p == 1));
        f.window.reset(acc.window_count(), acc.work_quanta());
        fill_window_plan_values(*f.acc, f.window);
        f.reference.reset(acc.window_count(), acc.work_quanta());
        fill_reference_values(*f.acc, f.window, f.reference);
    }
}

FixedPathTables PathChoiceReference::tables(int path) const {
    const FixedPath& f = paths_[static_cast<std::size_t>(path)];
    return FixedPathTables{&*f.acc, &f.window, &f.reference};
}

void PathChoiceReference::release(int path, ValueTable& window, ValueTable& reference) {
    FixedPath& f = paths_[static_cast<std::size_t>(path)];
    window = std::move(f.window);
    reference = std::move(f.reference);
}

Action PathChoiceReference::action(const State& s) const {
    return path_choice_action({tables(0), tables(1)}, s);
}

void PathChoiceReference::fill_values(const SegmentAccounting& acc, ValueTable& values) const {
    // The two-path accounting prices a fixed path's action exactly as that path's own does.
    evaluate_policy(acc, values, [&](const State& s) { return action(s); });
}

}  // namespace learnsched
