#include "learnsched/finite/decision_index.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>

#include "learnsched/finite/tolerance.hpp"

namespace learnsched {
namespace {

// Keys per leaf block of the maxima tree: the tree holds ~2/kBlock entries per key, and a
// search scans at most two partial blocks (measured: 16 beats 8 and 32 at J = 36 and 3600).
constexpr int kBlock = 16;

// Up to this many checkpointed advances they are scanned in canonical order instead of
// searched in the index: the scan prunes by each advance's key as the index's leaves do
// (scan_advances), so it costs about what a search's two partial blocks cost, and it never
// builds a row (O(J), which a plan's one decision per window does not amortise).
constexpr int kScanAdvances = 2 * kBlock;

// Below this quantum (s) the dominance of unsaved advances is not relied upon (see
// lookahead): every real scenario is far above it.
constexpr double kDominanceMinQuantum = 1e-6;

// key(q) of the DP's sliding maximum, with charge_delta = (1 + rho) * delta.
inline double advance_key(double value, double charge_delta, int q) {
    return value - charge_delta * q;
}

// One search: the largest q in [lo, hi] whose key reaches `need` and whose exact score
// beats `best`. The blocks [lo / kBlock, hi / kBlock] split into O(log) whole tree nodes,
// visited right to left (canonical order is descending q); a node whose maximum reaches
// `need` is descended right child first. Edge blocks' keys outside [lo, hi] may raise
// their maxima: that only costs a look.
struct Search {
    const SegmentAccounting& acc;
    const ValueTable& values;
    const State& s;
    const std::vector<double>& maxima;
    const std::vector<std::size_t>& offsets;
    int r;
    int base;
    bool cold;
    double charge_delta;
    double need;
    double best;
    int lo;
    int hi;

    int block(std::size_t i) const {
        const int first = static_cast<int>(i) * kBlock;
        for (int q = std::min(hi, first + kBlock - 1); q >= std::max(lo, first); --q) {
            if (advance_key(values(r, q), charge_delta, q) < need) continue;
            const Action a{ActionKind::Advance, q - base, true, cold};
            if (strictly_greater(action_value(acc, values, s, a), best)) return q;
        }
        return -1;
    }

    int descend(std::size_t level, std::size_t i) const {
        if (maxima[offsets[level] + i] < need) return -1;  // no key under it can win
        if (level == 0) return block(i);
        const std::size_t right = 2 * i + 1;
        if (right < offsets[level] - offsets[level - 1]) {
            const int found = descend(level - 1, right);
            if (found >= 0) return found;
        }
        return descend(level - 1, 2 * i);
    }

    int run() const {
        // Deferred left-edge nodes, at most one per level (J < 2^24: fewer than 32 levels);
        // left uninitialised: only entries below `lefts` are ever read.
        constexpr std::size_t kMaxLevels = 32;
        std::array<std::size_t, kMaxLevels> left_nodes;
        std::array<std::size_t, kMaxLevels> left_levels;
        std::size_t lefts = 0;
        auto l = static_cast<std::size_t>(lo / kBlock);
        auto e = static_cast<std::size_t>(hi / kBlock) + 1;  // half-open block range
        for (std::size_t level = 0; l < e; ++level, l >>= 1, e >>= 1) {
            if (e & 1) {  // the rightmost node left at this level: visit it now
                const int found = descend(level, --e);
                if (found >= 0) return found;
            }
            if (l & 1) {  // the leftmost: after every node to its right
                left_levels[lefts] = level;
                left_nodes[lefts++] = l++;
            }
        }
        while (lefts > 0) {
            --lefts;
            const int found = descend(left_levels[lefts], left_nodes[lefts]);
            if (found >= 0) return found;
        }
        return -1;
    }
};

// 64 ulps: the bound on |Q - key - offset| and its rounding, relative to |V| plus the
// largest segment's cost (see AdvanceIndex::build).
constexpr double kRoundingUlps = 64.0 * DBL_EPSILON;

// The most a segment by this path can cost, s-eq. (the work, load, save and return).
inline double largest_cost(const Scenario& sc, const ReturnPath& ret) {
    return (1.0 + ret.residency_rate) *
           (sc.work_quanta * sc.quantum_s + sc.costs.load_s + sc.costs.save_s + ret.recovery_s);
}

// As first_winner's `need` before its row's rounding bound: strictly_greater(Q, best)
// implies Q - best > 0.99 * (1e-9 + 1e-12 |best|) in any rounding.
inline double winning_margin(double best) {
    return best + 0.99 * (kTieTolerance + kRelativeTieTolerance * std::abs(best));
}

// best_action's scan over the checkpointed advances from `s` (u = top..1, warm before cold):
// each advance's key V(b + u) - charge * (b + u) * delta plus its state's offset is its score
// up to 64 ulps of |V(b + u)| plus the largest cost, so one whose key plus that bound is
// below the winning margin cannot beat the best and is not scored; every other is scored
// exactly, as in the scan. O(advances) with a few flops each, and no index row.
void scan_advances(const SegmentAccounting& acc, const ValueTable& values, const State& s,
                   ScoredAction& best) {
    const Scenario& sc = acc.scenario();
    const int base = acc.base(s);
    const int longest = acc.remaining(s) - 1;  // u = remaining is publishing
    const double load_s = acc.pays_load(s) ? sc.costs.load_s : 0.0;
    struct Terms {
        int top = 0;
        double charge_delta = 0.0;
        double floor = 0.0;  // -offset - 64 ulps of the largest cost
        double need = 0.0;   // the key plus 64 ulps of |V| must reach this to win
    };
    std::array<Terms, 2> paths{};
    const int count = acc.path_count();
    const auto raise_needs = [&] {
        const double margin = winning_margin(best.value);
        for (Terms& t : paths) t.need = margin + t.floor;
    };
    for (int p = 0; p < count; ++p) {
        const ReturnPath ret = return_path(sc.costs, p == 1);
        const double charge = 1.0 + ret.residency_rate;
        Terms& t = paths[static_cast<std::size_t>(p)];
        t.top = std::min(acc.max_quanta(s, true, p == 1), longest);
        t.charge_delta = charge * sc.quantum_s;
        const double offset =
            t.charge_delta * base - charge * (load_s + sc.costs.save_s + ret.recovery_s);
        t.floor = -offset - kRoundingUlps * largest_cost(sc, ret);
    }
    raise_needs();
    const double* next = values.row(s.window + 1);
    for (int u = std::max(paths[0].top, paths[1].top); u >= 1; --u) {
        for (int p = 0; p < count; ++p) {
            const Terms& t = paths[static_cast<std::size_t>(p)];
            const int q = base + u;
            const double v = next[q];
            const double reach = advance_key(v, t.charge_delta, q) + kRoundingUlps * std::abs(v);
            if (u > t.top || reach < t.need) continue;
            const Action a{ActionKind::Advance, u, true, p == 1};
            const double score = action_value(acc, values, s, a);
            if (strictly_greater(score, best.value)) {
                best = ScoredAction{a, score};
                raise_needs();
            }
        }
    }
}

}  // namespace

void AdvanceIndex::reset(int windows, int work_quanta, int paths) {
    work_quanta_ = work_quanta;
    paths_ = paths;
    const std::size_t rows =
        (static_cast<std::size_t>(windows) + 1) * static_cast<std::size_t>(paths);
    std::size_t n = (static_cast<std::size_t>(work_quanta) + kBlock) / kBlock;  // blocks of 0..J
    level_offsets_.assign(1, 0);
    for (;;) {
        level_offsets_.push_back(level_offsets_.back() + n);
        if (n == 1) break;
        n = (n + 1) / 2;
    }
    if (rows > flags_) {
        built_ = std::make_unique<std::atomic<bool>[]>(rows);  // all false
        flags_ = rows;
    } else {
        for (std::size_t i = 0; i < rows; ++i) built_[i].store(false, std::memory_order_relaxed);
    }
    if (rows_.size() < rows) rows_.resize(rows);
}

const AdvanceIndex::Row& AdvanceIndex::row(const SegmentAccounting& acc, const ValueTable& values,
                                           int r, int path) const {
    const std::size_t i = static_cast<std::size_t>(r) * static_cast<std::size_t>(paths_) +
                          static_cast<std::size_t>(path);
    // Each row is written once, under the lock; the release store publishes it complete to
    // every acquire load (std::call_once costs a thread-local setup on every call).
    if (!built_[i].load(std::memory_order_acquire)) {
        const std::lock_guard<std::mutex> lock(*building_);
        if (!built_[i].load(std::memory_order_relaxed)) {
            build(acc, values, r, path, rows_[i]);
            built_[i].store(true, std::memory_order_release);
        }
    }
    return rows_[i];
}

void AdvanceIndex::build(const SegmentAccounting& acc, const ValueTable& values, int r, int path,
                         Row& out) const {
    const Scenario& sc = acc.scenario();
    const ReturnPath ret = return_path(sc.costs, path == 1);
    const double charge = 1.0 + ret.residency_rate;
    const double charge_delta = charge * sc.quantum_s;
    const double lowest = -std::numeric_limits<double>::infinity();
    out.maxima.assign(level_offsets_.back(), lowest);
    double largest_value = 0.0;
    for (int q = 0; q <= work_quanta_; ++q) {
        const double v = values(r, q);
        double& m = out.maxima[static_cast<std::size_t>(q / kBlock)];
        m = std::max(m, advance_key(v, charge_delta, q));
        largest_value = std::max(largest_value, std::abs(v));
    }
    for (std::size_t level = 1; level + 1 < level_offsets_.size(); ++level) {
        const std::size_t below = level_offsets_[level - 1];
        const std::size_t count = level_offsets_[level] - below;
        for (std::size_t i = 0; 2 * i < count; ++i) {
            const double right = 2 * i + 1 < count ? out.maxima[below + 2 * i + 1] : lowest;
            out.maxima[level_offsets_[level] + i] = std::max(out.maxima[below + 2 * i], right);
        }
    }
    // Q = fl(V - T) with T the rounded sum of at most five non-negative costs, each term
    // of key and offset one or two roundings: every error is a few ulps of |V| or of the
    // largest segment's cost, so 64 ulps of their sum bounds them all, with room to spare.
    out.error = kRoundingUlps * (largest_value + largest_cost(sc, ret));
}

int AdvanceIndex::first_winner(const SegmentAccounting& acc, const ValueTable& values,
                               const State& s, int path, int top, double best) const {
    const int r = s.window + 1;
    const Row& rw = row(acc, values, r, path);
    const Scenario& sc = acc.scenario();
    const ReturnPath ret = return_path(sc.costs, path == 1);
    const double charge = 1.0 + ret.residency_rate;
    const double charge_delta = charge * sc.quantum_s;
    const int base = acc.base(s);
    // Advance u by this path: Q = V(b + u) - charge*(load + u*delta + t_ck + t_ret)
    //                           = key(b + u) + offset, up to rounding (rw.error).
    const double load_s = acc.pays_load(s) ? sc.costs.load_s : 0.0;
    const double offset = charge_delta * base - charge * (load_s + sc.costs.save_s + ret.recovery_s);
    // strictly_greater(Q, best) implies Q - best > 0.99 * (1e-9 + 1e-12 |best|) in any
    // rounding, so a key below `need` cannot win: the test only prunes.
    const double need = best + 0.99 * (kTieTolerance + kRelativeTieTolerance * std::abs(best)) -
                        offset - rw.error;
    const Search search{acc,   values, s,    rw.maxima, level_offsets_, r,        base,
                        path == 1, charge_delta, need, best, base + 1, base + top};
    const int q = search.run();
    return q < 0 ? 0 : q - base;
}

void AdvanceIndex::improve(const SegmentAccounting& acc, const ValueTable& next_values,
                           const State& s, ScoredAction& best) const {
    const int longest = acc.remaining(s) - 1;  // u = remaining is publishing
    // Per path, the largest u still ahead of the incumbent in canonical order.
    std::array<int, 2> top{std::min(acc.max_quanta(s, true, false), longest),
                           paths_ == 2 ? std::min(acc.max_quanta(s, true, true), longest) : 0};
    // The scan goes on after the winner (u, path): warm from u - 1; cold from u after warm.
    const auto take = [&](const Action& a, double value) {
        best = ScoredAction{a, value};
        top[0] = std::min(top[0], a.quanta - 1);
        top[1] = std::min(top[1], a.cold ? a.quanta - 1 : a.quanta);
    };
    for (bool after_winner = false;; after_winner = true) {
        if (after_winner && std::max(top[0], top[1]) >= 1) {
            // Winners often come in runs (residency above the benefit rate makes every
            // shorter advance better): score the very next advance first.
            const bool cold = top[0] < top[1];  // warm first at equal u
            const Action next{ActionKind::Advance, top[cold ? 1 : 0], true, cold};
            const double q = action_value(acc, next_values, s, next);
            if (strictly_greater(q, best.value)) {
                take(next, q);
                continue;
            }
        }
        std::array<int, 2> won{0, 0};
        for (int p = 0; p < paths_; ++p) {
            const auto i = static_cast<std::size_t>(p);
            if (top[i] >= 1) won[i] = first_winner(acc, next_values, s, p, top[i], best.value);
        }
        if (won[0] == 0 && won[1] == 0) return;
        const bool cold = won[0] < won[1];  // the earlier in order: larger u, warm on ties
        const Action a{ActionKind::Advance, won[cold ? 1 : 0], true, cold};
        take(a, action_value(acc, next_values, s, a));
    }
}

// Why advances without a checkpoint are never scored: one by path p leads to the
// successor of D = wait (service) or of D = discard-return by p (active), which precedes
// every advance in canonical order and fits whenever the advance does. Its cost adds load
// and u*delta > 0 to D's (same recovery, residency on a longer segment); costs are sums of
// non-negative terms and rounding is monotone, so even rounded T_adv >= T_D and
// Q_adv = fl(V(s') - T_adv) <= Q_D. When the scan reaches the advance, the best score is
// Q_D (D won: Q_adv - best <= 0), or the best b that D lost to, or one that beat b by more
// than the tolerance since. The tie test x - y > 1e-9 + 1e-12 max(|x|, |y|) is
// nondecreasing in x and decreasing in y (the slope 1e-12 < 1), so a score no higher than
// one that lost, against a best no lower, loses too. In floating point the test moves by
// at most one rounding of the tolerance (~1e-25 s-eq. near 0), below any difference of
// these scores once delta >= kDominanceMinQuantum (two scores within 2e-9 of 0 differ by
// about u*delta, and larger ones by at least an ulp far above it).
ScoredAction lookahead(const SegmentAccounting& acc, const ValueTable& next_values,
                       const AdvanceIndex& index, const State& s, const Action& incumbent) {
    ScoredAction best{incumbent, action_value(acc, next_values, s, incumbent)};
    const auto consider = [&](const Action& a) {
        const double q = action_value(acc, next_values, s, a);
        if (strictly_greater(q, best.value)) best = ScoredAction{a, q};
    };
    acc.for_each_leading_action(s, consider);
    if (std::min(acc.max_quanta_any(s, true), acc.remaining(s) - 1) <= kScanAdvances) {
        scan_advances(acc, next_values, s, best);  // a short window
    } else {
        index.improve(acc, next_values, s, best);
    }
    if (acc.scenario().quantum_s < kDominanceMinQuantum) acc.for_each_advance(s, false, consider);
    return best;
}

}  // namespace learnsched
