// Decisions whose cost does not grow with the window length: the one-step
// lookahead of Rollout and DP (Eq. 11 / D.2) without enumerating every advance.
//
// best_action (value_table.hpp) scans every feasible action in canonical order and keeps
// the first that beats the incumbent by more than the tie tolerance. lookahead() returns
// exactly its answer, in O(log J) per change of incumbent instead of O(J):
// - wait or the returns, then publish, are scored one by one as before;
// - the best checkpointed advance comes from range maxima of the key of the DP's sliding
//   maximum (value_table.cpp, relax_resumed_advances) per continuation row and path,
//     key(q) = V_{k+1}(q) - (1 + rho) * q * delta,   Q(s, advance u) ~ key(b + u) + offset(s),
//   searched for the first advance in canonical order (u = max..1, warm before cold) whose
//   exact score R + V(s') beats the incumbent, repeated from there while one does: the
//   maxima only prune (with a bound on their rounding), every winner is scored exactly;
// - advances without a checkpoint are dominated and never scored (see lookahead()).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

// An action with its score Q(s, a) = R(s, a) + V(s'), s-eq.
struct ScoredAction {
    Action action;
    double value = 0.0;
};

// Range maxima of key(q) over one value table, built lazily per continuation row and
// return path (the first decision that needs a row builds it, O(J); thread-safe, so a const
// Model may be shared by threads). Memory: about 1/8 of a table row per row and path built.
class AdvanceIndex {
  public:
    AdvanceIndex() = default;  // serves no table until reset()

    // Empty (no row built) for a table of K windows and J quanta with `paths` return paths,
    // in the memory it already holds: rows keep their capacity across rebuilds.
    void reset(int windows, int work_quanta, int paths);

    // Raise `best` to the first checkpointed advance from `s`, in canonical order, that beats
    // it by more than the tie tolerance, and repeat from there: best_action's scan over those
    // advances. `next_values` must be the table this index serves (its values never change).
    void improve(const SegmentAccounting& acc, const ValueTable& next_values, const State& s,
                 ScoredAction& best) const;

  private:
    struct Row {
        std::vector<double> maxima;  // per tree level (offsets in level_offsets_), blocks first
        double error = 0.0;          // bound on |Q - key - offset| and its rounding, s-eq.
    };
    const Row& row(const SegmentAccounting& acc, const ValueTable& values, int r, int path) const;
    void build(const SegmentAccounting& acc, const ValueTable& values, int r, int path,
               Row& out) const;
    // The largest u in [1, top] whose advance by `path` beats `best`, or 0 if none does.
    int first_winner(const SegmentAccounting& acc, const ValueTable& values, const State& s,
                     int path, int top, double best) const;

    int work_quanta_ = 0;
    int paths_ = 1;
    std::vector<std::size_t> level_offsets_;  // start of each level in Row::maxima; back() = size
    // Held by pointer so that a Model stays movable (its rows hold values, not pointers).
    std::unique_ptr<std::atomic<bool>[]> built_;  // per row: rows_[i] is complete
    std::size_t flags_ = 0;                       // entries of built_
    std::unique_ptr<std::mutex> building_ = std::make_unique<std::mutex>();
    // [(window + 1) * paths + path], each written once; never shrunk, so that a rebuild
    // reuses every row's maxima.
    mutable std::vector<Row> rows_;
};

// best_action(acc, next_values, s, incumbent) through `index` (built over next_values), with
// the winner's score; identical to the linear scan in every case (ties included).
ScoredAction lookahead(const SegmentAccounting& acc, const ValueTable& next_values,
                       const AdvanceIndex& index, const State& s, const Action& incumbent);

}  // namespace learnsched
