// Continuation values over service states (k, pbar), cached per policy.
//
// Every state after the first window is in service mode with p == pbar, so a policy's
// value from window k on is a function of durable progress alone: (K+1) x (J+1) doubles,
// with row K (after the last window) all zero.
#pragma once

#include <cstddef>
#include <vector>

#include "segment.hpp"

namespace learnsched {

class ValueTable {
  public:
    ValueTable(int windows, int work_quanta)
        : stride_(static_cast<std::size_t>(work_quanta) + 1),
          values_((static_cast<std::size_t>(windows) + 1) * stride_, 0.0) {}

    double operator()(int window, int durable) const { return values_[index(window, durable)]; }
    double& operator()(int window, int durable) { return values_[index(window, durable)]; }

  private:
    std::size_t index(int window, int durable) const {
        return static_cast<std::size_t>(window) * stride_ + static_cast<std::size_t>(durable);
    }
    std::size_t stride_;
    std::vector<double> values_;
};

// Q(s, a) = R(s, a) + V(s'): terminal actions and the last window continue with 0.
inline double action_value(const SegmentAccounting& acc, const ValueTable& next_values, const State& s,
                    const Action& a) {
    const Segment seg = acc.take(s, a);
    const double continuation =
        a.is_terminal() ? 0.0 : next_values(seg.next.window, seg.next.durable);
    return seg.reward() + continuation;  // Eq. 11: R(s, a) + V(s')
}

// Value of state s under `values` (a table lookup in service mode; one step for active).
template <class ChooseAction>
double state_value(const SegmentAccounting& acc, const ValueTable& values, const State& s,
                   ChooseAction&& choose) {
    if (!s.active) return values(s.window, s.durable);
    return action_value(acc, values, s, choose(s));
}

// One-step lookahead (Eq. 11 / D.2): the first action in canonical order that beats the
// incumbent by more than the tie tolerance, scored by R + V(s').
Action best_action(const SegmentAccounting& acc, const ValueTable& next_values, const State& s,
                   Action incumbent);

// Fill `values` backwards with the value of following `choose` in every service state.
template <class ChooseAction>
void evaluate_policy(const SegmentAccounting& acc, ValueTable& values, ChooseAction&& choose) {
    for (int k = acc.window_count() - 1; k >= 0; --k) {
        for (int pbar = 0; pbar <= acc.work_quanta(); ++pbar) {
            const State s{k, pbar, pbar, false};
            values(k, pbar) = action_value(acc, values, s, choose(s));
        }
    }
}

// V* over service states (Eq. D.2), O(K * J) with a monotone deque per window.
ValueTable optimal_values(const SegmentAccounting& acc);

}  // namespace learnsched
