// Rollout over the portfolio Costed Window (Eq. 11) and the reference's value V^pi0.
//
// Scoring a choice follows pi0 from its successor to the end: O(stages x candidates). Every
// successor of a choice on candidate c differs from the successor of waiting only in c
// (and in the GPU-seconds used, never fewer), so pi0 from it takes the wait-successor's
// steps until c matters: until a stage where pi0 ran c there, where c's price (in either
// state) would win at its place in the scan, or where the budget left no longer admits a
// plan the scan admitted. Those stages cost O(1) here (or the rest of one scan where c's
// price differs in effect at its place but the scan still ends on the same candidate);
// from the first other one on, pi0 is followed in full. The rewards and their backward sum are the same numbers either way.
#include <algorithm>
#include <cmath>
#include <limits>

#include "learnsched/portfolio/model.hpp"
#include "learnsched/check.hpp"

namespace learnsched {

void PortfolioModel::load(const PortfolioState& x, Follow& f) const {
    f.stage = x.stage;
    f.gpu_s = x.gpu_s;
    f.durable.resize(x.candidates.size());
    f.free_at.resize(x.candidates.size());
    for (std::size_t c = 0; c < x.candidates.size(); ++c) {
        const CandidateState& cs = x.candidates[c];
        f.durable[c] = cs.durable;
        f.free_at[c] = cs.done ? kInf : cs.busy_until_s;
    }
}

double PortfolioModel::price(int c, int durable, double free_at, int j, double used) const {
    const Stage& st = stage(j);
    if (free_at > st.start_s) return -kInf;
    const double go = stage_go_[static_cast<std::size_t>(j) * portfolio_.candidates.size() +
                                static_cast<std::size_t>(c)][durable];
    if (go == -kInf) return -kInf;
    if (bounded() && !fits_within(lane(c, st.gpu).go_gpu_s(st.window, durable), used, *portfolio_.budget_gpu_s)) {
        return -kInf;
    }
    return go;
}

// follow_reference(PortfolioState&) without active candidates (so without forced stages):
// reference_action's service branch on columns, bit for bit the same rewards.
double PortfolioModel::follow_reference(Follow& f, Trace* trace) const {
    f.rewards.clear();
    const auto C = static_cast<std::size_t>(candidate_count());
    if (trace) {
        *trace = Trace{};
        trace->first = f.stage;
        trace->durable0 = f.durable;
        trace->free0 = f.free_at;
    }
    const auto horizon_of = [&] {
        int last = -1;
        for (std::size_t c = 0; c < C; ++c) {
            if (f.free_at[c] != kInf) last = std::max(last, last_live_stage(static_cast<int>(c), f.durable[c]));
        }
        return last;
    };
    // An upper bound on the last stage where pi0 may run someone, made exact when reached.
    int horizon = horizon_of();
    for (; f.stage < stage_count(); ++f.stage) {
        if (f.stage > horizon && (horizon = horizon_of()) < f.stage) break;
        const Stage& st = stage(f.stage);
        const double* const* go_rows = &stage_go_[static_cast<std::size_t>(f.stage) * C];
        int best = -1;
        double best_go = -kInf;
        double fit_max = -kInf;
        if (trace) {
            trace->before.resize(trace->before.size() + C);
            trace->before_go.resize(trace->before_go.size() + C);
        }
        for (std::size_t c = 0; c < C; ++c) {
            if (trace) {
                trace->before[trace->before.size() - C + c] = best;
                trace->before_go[trace->before_go.size() - C + c] = best_go;
            }
            if (f.free_at[c] > st.start_s) continue;
            const double go = go_rows[c][f.durable[c]];
            if (!(go > best_go) || (best >= 0 && !strictly_greater(go, best_go))) continue;
            if (bounded()) {
                const double plan_s = lane(static_cast<int>(c), st.gpu).go_gpu_s(st.window, f.durable[c]);
                if (!fits_within(plan_s, f.gpu_s, *portfolio_.budget_gpu_s)) continue;
                fit_max = std::max(fit_max, plan_s);
            }
            best = static_cast<int>(c);
            best_go = go;
        }
        if (trace) {
            trace->chosen.push_back(best);
            trace->used.push_back(f.gpu_s);
            trace->fit_max.push_back(fit_max);
        }
        if (best < 0) {
            if (trace) {
                trace->reward.push_back(0.0);
                trace->step_gpu_s.push_back(0.0);
                trace->next_durable.push_back(0);
                trace->next_free.push_back(0.0);
            }
            continue;
        }
        const auto b = static_cast<std::size_t>(best);
        const Lane& ln = lane(best, st.gpu);
        const WindowStep& w = ln.window[static_cast<std::size_t>(st.window) * (static_cast<std::size_t>(ln.acc.work_quanta()) + 1) +
                                       static_cast<std::size_t>(f.durable[b])];
        f.rewards.push_back(w.reward);
        f.gpu_s += w.gpu_s;
        f.durable[b] = w.durable;
        f.free_at[b] = w.free_at;
        if (w.free_at != kInf) horizon = std::max(horizon, last_live_stage(best, w.durable));
        if (trace) {
            trace->reward.push_back(w.reward);
            trace->step_gpu_s.push_back(w.gpu_s);
            trace->next_durable.push_back(w.durable);
            trace->next_free.push_back(w.free_at);
        }
    }
    double value = 0.0;
    for (std::size_t i = f.rewards.size(); i-- > 0;) value = f.rewards[i] + value;
    return value;
}

double PortfolioModel::follow_reference(Follow& a, const Trace& trace, int c) const {
    const auto C = static_cast<std::size_t>(candidate_count());
    const auto k = static_cast<std::size_t>(c);
    const auto recorded = static_cast<int>(trace.chosen.size());
    std::vector<double> prefix;  // the trace's rewards on the shared stages
    const auto wins = [](double price, int before, double before_go) {
        return price != -kInf && (before < 0 || strictly_greater(price, before_go));
    };
    for (; a.stage < stage_count(); ++a.stage) {
        const int i = a.stage - trace.first;
        const double mine = price(c, a.durable[k], a.free_at[k], a.stage, a.gpu_s);
        if (i >= recorded) {  // past the trace pi0 waits there; only c may still qualify
            if (mine != -kInf) break;
            if (a.stage > last_live_stage(c, a.durable[k])) {
                a.stage = stage_count();
                break;
            }
            continue;
        }
        const auto u = static_cast<std::size_t>(i);
        const int chosen = trace.chosen[u];
        const bool admitted = !bounded() || trace.fit_max[u] == -kInf ||
                              fits_within(trace.fit_max[u], a.gpu_s, *portfolio_.budget_gpu_s);
        if (chosen == c || !admitted) break;  // c matters here: follow pi0 in full from this stage
        int before = trace.before[u * C + k];
        double before_go = trace.before_go[u * C + k];
        const double theirs = price(c, trace.durable0[k], trace.free0[k], a.stage, trace.used[u]);
        const bool mine_leads = wins(mine, before, before_go);
        if (mine_leads || wins(theirs, before, before_go)) {
            // The scans agree before c and differ at c: finish this one from c on.
            if (mine_leads) {
                before = c;
                before_go = mine;
            }
            for (std::size_t d = k + 1; d < C; ++d) {
                const double p = price(static_cast<int>(d), a.durable[d], a.free_at[d], a.stage, a.gpu_s);
                if (wins(p, before, before_go)) {
                    before = static_cast<int>(d);
                    before_go = p;
                }
            }
            if (before != chosen) break;
        }
        if (chosen < 0) continue;
        prefix.push_back(trace.reward[u]);
        a.gpu_s += trace.step_gpu_s[u];
        a.durable[static_cast<std::size_t>(chosen)] = trace.next_durable[u];
        a.free_at[static_cast<std::size_t>(chosen)] = trace.next_free[u];
    }
    double value = a.stage < stage_count() ? follow_reference(a) : 0.0;
    for (std::size_t i = prefix.size(); i-- > 0;) value = prefix[i] + value;
    return value;
}

// One-step rollout over pi0 (Eq. 11): every choice (for_each_choice) scored by
// Q(x, a) = R(x, a) + V^pi0(x'); pi0's action is kept unless another scores strictly higher,
// so V^rollout >= V^pi0 from every state (Prop. 1: pi0's action is among the choices, and
// the scores are exact).
PortfolioAction PortfolioModel::rollout_action(const PortfolioState& x) const {
    const bool columns = std::none_of(x.candidates.begin(), x.candidates.end(),
                                      [](const CandidateState& cs) { return cs.active; });
    PortfolioState next;
    std::vector<double> rewards;
    Follow follow;
    Trace waited;  // pi0 from the successor of waiting
    double wait_value = 0.0;
    if (columns) {
        load(x, follow);
        ++follow.stage;
        wait_value = follow_reference(follow, &waited);
    }
    const auto score = [&](const PortfolioAction& a) {
        const PortfolioStep step = take(x, a);
        if (!columns) {  // active candidates: the general path, state by state
            next = x;
            advance(next, step);
            return step.segment.reward() + follow_reference(next, rewards);
        }
        if (a.candidate < 0) return step.segment.reward() + wait_value;
        follow.stage = x.stage + 1;
        follow.durable = waited.durable0;
        follow.free_at = waited.free0;
        const auto c = static_cast<std::size_t>(a.candidate);
        follow.gpu_s = x.gpu_s + step.gpu_s;  // as advance() sums it
        follow.durable[c] = step.segment.next.durable;
        follow.free_at[c] = step.segment.action.is_terminal() ? kInf : step.segment.ready_s;
        return step.segment.reward() + follow_reference(follow, waited, a.candidate);
    };
    const PortfolioAction a0 = reference_action(x);
    PortfolioAction best = a0;
    double best_q = score(a0);
    for_each_choice(x, [&](const PortfolioAction& a) {
        if (a == a0) return;
        const double q = score(a);
        if (strictly_greater(q, best_q)) {
            best = a;
            best_q = q;
        }
    });
    return best;
}

}  // namespace learnsched
