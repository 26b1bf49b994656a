// The reference pi0 (Costed Window) when a scenario offers both return paths.
//
// Rollout is only as good as its reference: Eq. 12 gives V^pi_R >= V^pi0, and a Costed
// Window that picks each return's path locally (the cheaper segment) can be worth far less
// than Costed Window on the better fixed path, taking Rollout down with it. So with two
// paths, pi0 is, in every state, the action of whichever fixed-path Costed Window (warm
// only, or cold only) is worth more from that state (warm on ties; an active state only
// among the paths that can return from it), and V^pi0 is that policy's own value.
//
// Why it is never worse than either fixed path: by induction over the remaining windows.
// After the last window both are 0. At s, pi0 takes a_p, fixed path p's action, where
// V^{CW_p}(s) = max_q V^{CW_q}(s); its successor s' is worth V^pi0(s') >= V^{CW_p}(s') by
// induction, so V^pi0(s) = R(s, a_p) + V^pi0(s') >= R(s, a_p) + V^{CW_p}(s') = V^{CW_p}(s).
// Rollout over this pi0 then keeps Proposition 1: V^pi_R >= V^pi0 >= max_p V^{CW_p}.
#pragma once

#include <array>
#include <optional>

#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

// The scenario with only one of a two-path scenario's return paths (its actions read
// cold = false) and a fresh initial state: its tables cover every state.
Scenario fixed_path_scenario(const Scenario& two_path, bool cold);

// One fixed path's accounting, Window plan values V_G^p and Costed Window values V^{CW_p};
// row s.window + 1 of each table is the continuation after window s.window.
struct FixedPathTables {
    const SegmentAccounting* acc = nullptr;
    const ValueTable* window = nullptr;
    const ValueTable* reference = nullptr;
};

// pi0's action in `s`: fixed path p's Costed Window action where V^{CW_p}(s) (one step:
// R(s, a_p) + V^{CW_p}(s'), the table's own entry bit for bit) is the larger, warm on ties,
// by the path it returns on; an active state only among the paths that can return from it.
Action path_choice_action(const std::array<FixedPathTables, 2>& paths, const State& s);

class PathChoiceReference {
  public:
    // The fixed-path tables of the two-path accounting `acc`: per path p, the scenario with
    // only that path, its Window plan values V_G^p and its Costed Window values V^{CW_p}
    // (four (K+1) x (J+1) tables, reused by the next build).
    void build(const SegmentAccounting& acc);

    // pi0's action in `s` (a valid state of the built scenario), by the path it returns on.
    Action action(const State& s) const;

    // V^pi0 over service states into `values` (shaped for acc), by its own backward pass.
    void fill_values(const SegmentAccounting& acc, ValueTable& values) const;

    // Fixed path p's tables (p = 1: cold), as built.
    FixedPathTables tables(int path) const;
    // Move fixed path p's V_G^p and V^{CW_p} out (this reference cannot decide after that).
    void release(int path, ValueTable& window, ValueTable& reference);

  private:
    struct FixedPath {
        std::optional<SegmentAccounting> acc;  // the scenario with this path only
        ValueTable window;                     // V_G^p
        ValueTable reference;                  // V^{CW_p}
    };
    std::array<FixedPath, 2> paths_;  // warm, cold
};

}  // namespace learnsched
