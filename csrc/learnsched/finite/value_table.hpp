// Continuation values over service states (k, pbar), cached per policy.
//
// Every state after the first window is in service mode with p == pbar, so a policy's
// value from window k on is a function of durable progress alone: (K+1) x (J+1) doubles,
// with row K (after the last window) all zero.
#pragma once

#include <algorithm>
#include <cstddef>

#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/table_storage.hpp"

namespace learnsched {

class ValueTable {
  public:
    ValueTable() = default;  // empty until reset()
    // All (K+1) x (J+1) entries zero.
    ValueTable(int windows, int work_quanta) {
        if (!shape(windows, work_quanta)) std::fill_n(values_.data(), values_.size(), 0.0);
    }

    // Shape the table for K windows and J quanta in the memory it already holds (growing
    // it if needed): row K is zero; rows 0..K-1 are unspecified until a backward pass
    // (evaluate_policy, optimal_values) overwrites every one of them.
    void reset(int windows, int work_quanta) {
        // A freshly mapped block is zero already: writing row K would only fault it in.
        if (!shape(windows, work_quanta)) std::fill_n(row(windows), stride_, 0.0);
    }

    double operator()(int window, int durable) const { return row(window)[durable]; }
    double& operator()(int window, int durable) { return row(window)[durable]; }

    // Row k (J+1 entries by durable progress): the backward passes store through it, so
    // that a store is not taken to alias the table's own bookkeeping.
    const double* row(int window) const {
        return values_.data() + static_cast<std::size_t>(window) * stride_;
    }
    double* row(int window) { return values_.data() + static_cast<std::size_t>(window) * stride_; }

  private:
    // (K+1) x (J+1) entries of unspecified value; true if they are all zero.
    bool shape(int windows, int work_quanta) {
        stride_ = static_cast<std::size_t>(work_quanta) + 1;
        return values_.resize((static_cast<std::size_t>(windows) + 1) * stride_);
    }

    std::size_t stride_ = 1;
    UninitializedArray<double> values_;
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

// Fill rows 0..K-1 of `values` (shaped for acc: constructed or reset) backwards with the
// value of following `choose` in every service state.
template <class ChooseAction>
void evaluate_policy(const SegmentAccounting& acc, ValueTable& values, ChooseAction&& choose) {
    const int J = acc.work_quanta();
    for (int k = acc.window_count() - 1; k >= 0; --k) {
        double* __restrict row = values.row(k);
        const double* __restrict next = values.row(k + 1);
        for (int pbar = 0; pbar <= J; ++pbar) {
            const State s{k, pbar, pbar, false};
            const Action a = choose(s);
            const Segment seg = acc.take(s, a);  // seg.next.window == k + 1
            row[pbar] = seg.reward() + (a.is_terminal() ? 0.0 : next[seg.next.durable]);  // Eq. 11
        }
    }
}

// The two scratch rows of V*'s monotone deque (J+1 entries each: keys and their quanta),
// kept between builds so that repeated small builds allocate nothing.
struct DequeScratch {
    UninitializedArray<double> keys;
    UninitializedArray<int> quanta;
};

// V* over service states (Eq. D.2), O(K * J) with a monotone deque per window, into
// `values` reset for acc (its memory reused), the deque in `scratch` (grown if needed).
void fill_optimal_values(const SegmentAccounting& acc, ValueTable& values,
                         DequeScratch& scratch);
// The same into a new table.
ValueTable optimal_values(const SegmentAccounting& acc);

}  // namespace learnsched
