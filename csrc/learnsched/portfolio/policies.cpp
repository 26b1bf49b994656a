// The portfolio's policies (docs/portfolio.md). Each stage's GPU works on at most one
// candidate; candidates are compared in list order and a later one replaces an earlier one
// only by a margin beyond the tie tolerance (finite/tolerance.hpp), as actions are in the
// finite model.
#include <cmath>
#include <limits>

#include "learnsched/portfolio/model.hpp"
#include "learnsched/check.hpp"

namespace learnsched {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The best of candidates scored one by one: a later one wins only if strictly better.
struct Pick {
    PortfolioAction action;
    double score = 0.0;

    // `higher`: larger scores are better (else smaller ones).
    void offer(int c, const Action& a, double s, bool higher = true) {
        const bool wins = action.candidate < 0 ||
                          (higher ? strictly_greater(s, score) : strictly_greater(score, s));
        if (wins) {
            action = PortfolioAction{c, a};
            score = s;
        }
    }
};

}  // namespace

// Portfolio Costed Window (pi0). A forced candidate takes the one-candidate Costed Window
// action. Else every free candidate is priced as Costed Window prices it alone on this GPU:
// V_G, the value of the Window plan it would follow from here (with two return paths, that
// of the better fixed-path Costed Window, finite/path_reference.hpp); it qualifies if Costed
// Window works now (so V_G beats stopping, 0, strictly) and, under a budget, that plan's
// GPU-seconds fit what is left (a plan that cannot run is not priced by V_G). The window
// goes to the qualifying candidate of largest V_G and that action; with none it goes to
// serving. With one candidate and no budget this is the one-candidate Costed Window, action
// for action.
PortfolioAction PortfolioModel::reference_action(const PortfolioState& x) const {
    const Stage& st = stage(x.stage);
    if (const int c = forced_candidate(x); c >= 0) {
        const Lane& ln = lane(c, st.gpu);
        const State s = single_state(x, c);
        const Action a = reference_choice(ln, s);
        if (works(a) && bounded() && !fits_budget(x, window_plan_gpu_s(ln, s, a))) {
            return PortfolioAction{c, decline_action(ln.acc, s)};
        }
        return PortfolioAction{c, a};
    }
    // The inner loop of every rollout score: one load per candidate from the stage's rows.
    const auto C = static_cast<std::size_t>(candidate_count());
    const double* const* go_rows = &stage_go_[static_cast<std::size_t>(x.stage) * C];
    int best = -1;
    double best_go = 0.0;
    for (std::size_t c = 0; c < C; ++c) {
        const CandidateState& cs = x.candidates[c];
        if (cs.done || cs.active || cs.busy_until_s > st.start_s) continue;  // not free
        const double go = go_rows[c][cs.durable];
        if (go == -kInf || (best >= 0 && !strictly_greater(go, best_go))) continue;
        if (bounded() && !fits_budget(x, lane(static_cast<int>(c), st.gpu).go_gpu_s(st.window, cs.durable))) continue;
        best = static_cast<int>(c);
        best_go = go;
    }
    if (best < 0) return PortfolioAction{};
    const int pbar = x.candidates[static_cast<std::size_t>(best)].durable;
    return PortfolioAction{best, reference_choice(lane(best, st.gpu), State{st.window, pbar, pbar, false})};
}

// The greedy baselines' common rule: each candidate's Window action scored by `score`
// (NaN: passed over); the best (the highest, or with `lowest` the lowest) takes the window.
// A forced candidate takes its Window action if it scores, else declines.
template <class Score>
PortfolioAction PortfolioModel::greedy_action(const PortfolioState& x, Score&& score,
                                              bool lowest) const {
    const Stage& st = stage(x.stage);
    const auto scored = [&](int c, Action& a) {
        const Lane& ln = lane(c, st.gpu);
        const State s = single_state(x, c);
        a = window_action(ln.acc, s);
        return score(c, ln, s, a);
    };
    Action a;
    if (const int c = forced_candidate(x); c >= 0) {
        const bool go = !std::isnan(scored(c, a));
        return PortfolioAction{c, go ? a : decline_action(lane(c, st.gpu).acc, single_state(x, c))};
    }
    Pick pick;
    for (int c = 0; c < candidate_count(); ++c) {
        if (!free(x, c)) continue;
        const double v = scored(c, a);
        if (!std::isnan(v)) pick.offer(c, a, v, !lowest);
    }
    return pick.action;
}

// Greedy by benefit density: the candidate whose remaining work earns most per second of it,
// handoff-blind (Static ROI's timing: Phi(l_k + r*delta) / (r*delta)), takes Window's
// action; one with nothing left to earn, nothing that fits now or no budget for the segment
// is passed over.
PortfolioAction PortfolioModel::density_action(const PortfolioState& x) const {
    const double start_s = stage(x.stage).start_s;
    return greedy_action(x, [&](int c, const Lane& ln, const State& s, const Action& a) {
        if (!works(a) || !fits_budget(x, segment_gpu_s(ln.acc.take(s, a)))) return kNaN;
        const double rest_s = ln.acc.remaining(s) * ln.acc.scenario().quantum_s;
        const double d = benefit(c, start_s + rest_s) / rest_s;
        return strictly_greater(d, 0.0) ? d : kNaN;
    }, false);
}

// Greedy by publication: the candidate whose Window plan publishes first, earning something,
// takes Window's action (budget checked for the segment only).
PortfolioAction PortfolioModel::earliest_action(const PortfolioState& x) const {
    return greedy_action(x, [&](int c, const Lane& ln, const State& s, const Action& a) {
        if (!works(a)) return kNaN;
        const Segment seg = ln.acc.take(s, a);
        if (!fits_budget(x, segment_gpu_s(seg))) return kNaN;
        const double t = a.kind == ActionKind::Publish
                             ? seg.publish_s
                             : ln.plan.publish_s(s.window + 1, seg.next.durable);
        return std::isfinite(t) && strictly_greater(benefit(c, t), 0.0) ? t : kNaN;
    }, true);
}

bool PortfolioModel::single_plan_publishes(const PortfolioState& x, int c) const {
    const Lane& ln = lane(c, stage(x.stage).gpu);
    State s = single_state(x, c);
    double plan_gpu_s = 0.0;
    while (s.window < ln.acc.window_count()) {
        const Action a = ln.single->decide(s, Policy::Rollout);
        const Segment seg = ln.acc.take(s, a);
        plan_gpu_s += segment_gpu_s(seg);
        if (a.kind == ActionKind::Publish) return fits_budget(x, plan_gpu_s);
        if (a.kind == ActionKind::Abandon) return false;
        s = seg.next;
    }
    return false;
}

// One by one in list order, as a user of the one-candidate solver runs them: the first
// candidate not done whose Rollout plan (on this GPU's calendar, from its state) publishes
// within the budget left holds the GPU and takes that plan's action, a wait included; a
// busy one holds it too, so the window waits. Candidates whose plan cannot publish are
// passed over.
PortfolioAction PortfolioModel::sequential_action(const PortfolioState& x) const {
    const Stage& st = stage(x.stage);
    const auto planned = [&](int c) {
        const Lane& ln = lane(c, st.gpu);
        const State s = single_state(x, c);
        const Action a = ln.single->decide(s, Policy::Rollout);
        if (works(a) && !fits_budget(x, segment_gpu_s(ln.acc.take(s, a)))) {
            return PortfolioAction{c, decline_action(ln.acc, s)};
        }
        return PortfolioAction{c, a};
    };
    if (const int c = forced_candidate(x); c >= 0) {
        if (!single_plan_publishes(x, c)) return PortfolioAction{c, decline_action(lane(c, st.gpu).acc, single_state(x, c))};
        return planned(c);
    }
    for (int c = 0; c < candidate_count(); ++c) {
        const CandidateState& cs = x.candidates[static_cast<std::size_t>(c)];
        if (cs.done) continue;
        if (!free(x, c)) return PortfolioAction{};  // the head is busy elsewhere
        if (!single_plan_publishes(x, c)) continue;
        const PortfolioAction a = planned(c);
        return a.action.kind == ActionKind::Wait ? PortfolioAction{} : a;
    }
    return PortfolioAction{};
}

// V^pi0 from `x`: pi0 followed to the last stage, its rewards summed from the last one
// backwards, r_1 + (r_2 + (... + 0)), as the backward passes sum a value table (a wait adds
// 0.0, which changes no sum): with one candidate it is the core's V^pi0 bit for bit.
double PortfolioModel::follow_reference(PortfolioState& x, std::vector<double>& rewards) const {
    rewards.clear();
    // Past the horizon no candidate qualifies and pi0 only waits, which adds nothing.
    int horizon = reference_horizon(x);
    while (x.stage < stage_count() && x.stage <= horizon) {
        const PortfolioAction a = reference_action(x);
        if (a.candidate < 0) {
            ++x.stage;
            continue;
        }
        const PortfolioStep step = take(x, a);
        rewards.push_back(step.segment.reward());
        advance(x, step);
        horizon = reference_horizon(x);
    }
    double value = 0.0;
    for (std::size_t i = rewards.size(); i-- > 0;) value = rewards[i] + value;
    return value;
}

}  // namespace learnsched
