#include "learnsched/finite/reference_policies.hpp"

#include <algorithm>

namespace learnsched {
namespace {

// Window's rule, taken where `take_window(pbar)` holds (else wait), in every service state
// of window k. Why not evaluate_policy: every pbar >= 1 pays the load (rule 1), so while
// the rest of the work neither fits (rest > P) nor limits the advance (rest - 1 >= C, for
// the most quanta P / C that fit without / with a checkpoint), Window's action is one and
// the same checkpointed advance of C quanta, with one reward. Those pbar in [1, last] are
// one shifted add; the others go through window_action and take() as before.
template <class TakeWindow>
void window_rule_row(const SegmentAccounting& acc, int k, double* __restrict row,
                     const double* __restrict next, TakeWindow&& take_window) {
    const int J = acc.work_quanta();
    const auto generic = [&](int pbar) {
        const State s{k, pbar, pbar, false};
        const Action a =
            take_window(pbar) ? window_action(acc, s) : Action{ActionKind::Wait, 0, false};
        const Segment seg = acc.take(s, a);  // seg.next.window == k + 1
        row[pbar] = seg.reward() + (a.is_terminal() ? 0.0 : next[seg.next.durable]);  // Eq. 11
    };
    const State loaded{k, 1, 1, false};
    const int advance = acc.max_quanta_any(loaded, true);             // C
    const int publish_from = J - acc.max_quanta_any(loaded, false);  // rest <= P from here
    const int last = advance >= 1 ? std::min(J - 1 - advance, publish_from - 1) : 0;
    generic(0);
    if (last >= 1) {
        const Action a = window_action(acc, loaded);  // the advance of C quanta
        const double reward = acc.reward(loaded, a);
        const double wait = acc.reward(loaded, Action{ActionKind::Wait, 0, false});
        const int u = a.quanta;
        for (int pbar = 1; pbar <= last; ++pbar) {
            row[pbar] = take_window(pbar) ? reward + next[pbar + u] : wait + next[pbar];
        }
    }
    for (int pbar = std::max(last + 1, 1); pbar <= J; ++pbar) generic(pbar);
}

}  // namespace

void fill_window_plan_values(const SegmentAccounting& acc, ValueTable& values) {
    for (int k = acc.window_count() - 1; k >= 0; --k) {
        window_rule_row(acc, k, values.row(k), values.row(k + 1), [](int) { return true; });
    }
}

void fill_reference_values(const SegmentAccounting& acc, const ValueTable& window_values,
                           ValueTable& values) {
    for (int k = acc.window_count() - 1; k >= 0; --k) {
        // Costed Window in service mode: Window's action if V_G beats stopping (0), else wait.
        const double* go = window_values.row(k);
        window_rule_row(acc, k, values.row(k), values.row(k + 1),
                        [go](int pbar) { return strictly_greater(go[pbar], 0.0); });
    }
}

}  // namespace learnsched
