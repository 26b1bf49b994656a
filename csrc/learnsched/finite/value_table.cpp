#include "learnsched/finite/value_table.hpp"

#include <algorithm>

#include "learnsched/finite/tolerance.hpp"

namespace learnsched {

Action best_action(const SegmentAccounting& acc, const ValueTable& next_values, const State& s,
                   Action incumbent) {
    double best = action_value(acc, next_values, s, incumbent);
    acc.for_each_action(s, [&](const Action& a) {
        const double q = action_value(acc, next_values, s, a);
        if (strictly_greater(q, best)) {
            best = q;
            incumbent = a;
        }
    });
    return incumbent;
}

namespace {

// Best checkpointed advance by one return path from every pbar >= 1 of window k:
//   max_{q in [pbar+1, min(pbar+U, J-1)]} V_{k+1}(q) - c*(t_ld + (q-pbar)*delta + t_ck + t_ret)
// = c*pbar*delta - c*(t_ld + t_ck + t_ret) + max_q [V_{k+1}(q) - c*q*delta],
// a sliding-window maximum whose both ends only move right: a monotone deque.
// `row` is V_k, `next` is V_{k+1}; the deque holds each entry's q and key side by side
// (scratch rows of J+1 entries), so that comparing keys loads no index first.
void relax_resumed_advances(const SegmentAccounting& acc, double* __restrict row,
                            const double* __restrict next, int k, bool cold,
                            double* __restrict keys, int* __restrict quanta) {
    const Scenario& sc = acc.scenario();
    const int J = sc.work_quanta;
    const int reach = acc.max_quanta(State{k, 1, 1, false}, true, cold);  // same for every pbar >= 1
    if (reach < 1) return;
    const ReturnPath path = return_path(sc.costs, cold);
    const double charge = 1.0 + path.residency_rate;
    const double fixed = charge * (sc.costs.load_s + sc.costs.save_s + path.recovery_s);
    const double delta = sc.quantum_s;

    std::size_t head = 0;
    std::size_t tail = 0;
    int next_q = 2;
    for (int pbar = 1; pbar <= J - 2; ++pbar) {
        for (const int hi = std::min(pbar + reach, J - 1); next_q <= hi; ++next_q) {
            const double key = next[next_q] - charge * next_q * delta;
            while (tail > head && keys[tail - 1] <= key) --tail;
            keys[tail] = key;
            quanta[tail++] = next_q;
        }
        while (head < tail && quanta[head] <= pbar) ++head;
        if (head == tail) continue;
        const double advance = keys[head] + charge * pbar * delta - fixed;
        row[pbar] = std::max(row[pbar], advance);
    }
}

}  // namespace

void fill_optimal_values(const SegmentAccounting& acc, ValueTable& v, DequeScratch& scratch) {
    const int K = acc.window_count();
    const int J = acc.work_quanta();
    const auto row_size = static_cast<std::size_t>(J) + 1;
    scratch.keys.resize(row_size);  // the deque: every entry written before it is read
    scratch.quanta.resize(row_size);
    double* keys = scratch.keys.data();
    int* quanta = scratch.quanta.data();
    for (int k = K - 1; k >= 0; --k) {
        double* __restrict row = v.row(k);
        const double* __restrict next = v.row(k + 1);
        // Every pbar >= 1 pays the load (rule 1): below J - P (P: the most quanta any path
        // fits without a checkpoint) the rest does not fit, and waiting is all there is.
        const int publish_from = std::max(1, J - acc.max_quanta_any(State{k, 1, 1, false}, false));
        const auto wait_or_publish = [&](int pbar) {
            const State s{k, pbar, pbar, false};
            double best = next[pbar];  // wait
            for (int p = 0; p < acc.path_count(); ++p) {
                if (acc.can_publish(s, p == 1)) {
                    const Action publish{ActionKind::Publish, J - pbar, false, p == 1};
                    best = std::max(best, acc.reward(s, publish));
                }
            }
            row[pbar] = best;
        };
        wait_or_publish(0);
        std::copy(next + 1, next + std::min(publish_from, J + 1), row + 1);  // waits
        for (int pbar = publish_from; pbar <= J; ++pbar) wait_or_publish(pbar);
        for (int p = 0; p < acc.path_count(); ++p) {
            // A fresh start (pbar = 0) loads nothing, so its reach differs: scan it directly.
            const State fresh{k, 0, 0, false};
            for (int u = std::min(acc.max_quanta(fresh, true, p == 1), J - 1); u >= 1; --u) {
                const Segment seg = acc.take(fresh, Action{ActionKind::Advance, u, true, p == 1});
                row[0] = std::max(row[0], seg.reward() + next[seg.next.durable]);  // Eq. D.2
            }
            relax_resumed_advances(acc, row, next, k, p == 1, keys, quanta);
        }
        // Advancing without a checkpoint reaches the waiting successor at a higher cost
        // (spec, DP paragraph), so it never raises V*.
    }
}

ValueTable optimal_values(const SegmentAccounting& acc) {
    ValueTable v;
    v.reset(acc.window_count(), acc.work_quanta());
    DequeScratch scratch;
    fill_optimal_values(acc, v, scratch);
    return v;
}

}  // namespace learnsched
