// A prepared portfolio (portfolio.hpp): every candidate's finite model on every GPU's
// calendar, its Window-plan tables, the stages, transitions and the policies' decisions.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "learnsched/finite/model.hpp"
#include "learnsched/finite/path_reference.hpp"
#include "learnsched/portfolio/portfolio.hpp"
#include "learnsched/portfolio/benefit.hpp"
#include "learnsched/finite/reference_policies.hpp"
#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/tolerance.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

class PortfolioModel {
  public:
    // Validates the portfolio (std::invalid_argument, StateSpaceError) and prepares what
    // `policies` read: every candidate's accounting and Window-plan tables on every GPU
    // (O(sum of K_g * J_c)); Sequential also builds the one-candidate Rollout model of each.
    PortfolioModel(Portfolio portfolio, const std::vector<PortfolioPolicy>& policies);

    const Portfolio& portfolio() const { return portfolio_; }
    int candidate_count() const { return static_cast<int>(portfolio_.candidates.size()); }
    int gpu_count() const { return static_cast<int>(portfolio_.gpus.size()); }
    int stage_count() const { return static_cast<int>(stages_.size()); }
    const Stage& stage(int i) const { return stages_[static_cast<std::size_t>(i)]; }
    bool bounded() const { return portfolio_.budget_gpu_s.has_value(); }

    PortfolioState initial_state() const;
    // std::invalid_argument naming the first field of `x` that is not a state of this
    // portfolio before its last stage.
    void validate_state(const PortfolioState& x) const;
    // std::invalid_argument unless `a` is feasible in the validated state `x`.
    void validate_action(const PortfolioState& x, const PortfolioAction& a) const;

    // The candidate the stage's GPU must decide alone (its initially active candidate at
    // the GPU's first window), or -1.
    int forced_candidate(const PortfolioState& x) const;
    // Whether candidate c may start on the stage's GPU now (not done, not active, not busy).
    bool free(const PortfolioState& x, int c) const;

    // The actions rollout and DP choose from, in canonical order: wait (unless a candidate
    // is forced), then each candidate in list order with its actions in the finite model's
    // order (SegmentAccounting::for_each_leading_action, then checkpointed advances
    // u = max..1), each by every return path that fits and within the budget. Advances that
    // neither checkpoint nor publish are left out: they reach the successor of waiting (or
    // of discard-return) with more cost, more GPU-seconds and a busier candidate, so they
    // never raise V* (docs/portfolio.md).
    template <class Visit>
    void for_each_choice(const PortfolioState& x, Visit&& visit) const;

    // The step `a` makes from `x` (a must be feasible); advance() applies it to `x`.
    PortfolioStep take(const PortfolioState& x, const PortfolioAction& a) const;
    void advance(PortfolioState& x, const PortfolioStep& step) const;

    // The policy's action in `x` (validated). Dp solves the DP from `x` (StateSpaceError
    // when it is too large).
    PortfolioAction decide(const PortfolioState& x, PortfolioPolicy policy) const;
    // Follow the policy from the initial state through every stage.
    PortfolioPlan solve(PortfolioPolicy policy) const;
    // V^pi0(x): the value of following the reference (CostedWindow) from `x` to the end.
    double reference_value(const PortfolioState& x) const;

    // Phi_c(t_p), s-eq.: what publishing candidate c at t_p earns.
    double benefit(int c, double publish_s) const;

  private:
    friend class PortfolioDp;
    struct WindowStep {
        double reward = 0.0;
        double gpu_s = 0.0;
        double free_at = 0.0;  // ready_s, or +inf once it publishes
        int durable = 0;       // the next state's
    };
    // The Window plan of one accounting from each service state (k, pbar): its value V_G
    // (s-eq.), its GPU-seconds and its publication time (+inf if it never publishes).
    struct WindowPlan {
        ValueTable value;
        ValueTable gpu_s;
        ValueTable publish_s;
    };
    // One return path of a candidate offered two (finite/path_reference.hpp): its accounting, its
    // Window plan and its Costed Window's values V^{CW_p}.
    struct FixedPath {
        SegmentAccounting acc;
        WindowPlan plan;
        ValueTable reference;
    };
    // One candidate on one GPU's calendar.
    struct Lane {
        SegmentAccounting acc;
        WindowPlan plan;               // Window, each return by its locally cheaper path
        std::vector<FixedPath> paths;  // two paths: warm, cold (the one-candidate Costed Window's)
        // pi0's price of the candidate where the one-candidate Costed Window works (publishes or
        // advances): V_G of the Window plan it follows, else -inf; that plan's GPU-seconds;
        // and its segment from each service state, [k * (J + 1) + pbar], not taken again.
        ValueTable go;
        ValueTable go_gpu_s;
        std::vector<WindowStep> window;
        std::unique_ptr<Model> single;  // the one-candidate model (Sequential only)
    };
    const Lane& lane(int c, int gpu) const {
        return lanes_[static_cast<std::size_t>(c) * portfolio_.gpus.size() +
                      static_cast<std::size_t>(gpu)];
    }
    void fill_window_plan(int c, const SegmentAccounting& acc, WindowPlan& plan) const;
    void fill_lane(int c, Lane& lane) const;
    // The one-candidate Costed Window action of the lane's candidate in `s` (with two
    // paths: the better fixed-path Costed Window's), and the Window plan that action follows.
    static Action reference_choice(const Lane& ln, const State& s);
    static const WindowPlan& plan_of(const Lane& ln, const Action& a);
    void index_stages();
    // The last stage at which pi0 may pick candidate c, from durable progress pbar on: after
    // the largest over open candidates, pi0 only waits.
    int last_live_stage(int c, int pbar) const {
        return last_live_[static_cast<std::size_t>(c)][static_cast<std::size_t>(pbar)];
    }
    int reference_horizon(const PortfolioState& x) const;
    State single_state(const PortfolioState& x, int c) const;
    // acc.take(s, a) with candidate c's benefit (its age decay, if any).
    Segment segment(int c, const SegmentAccounting& acc, const State& s, const Action& a) const;
    bool fits_budget(const PortfolioState& x, double gpu_s) const {
        return !bounded() || fits_within(gpu_s, x.gpu_s, *portfolio_.budget_gpu_s);
    }
    // GPU-seconds of `a` from `s` on `lane`, and of the Window plan that `a` starts.
    static double segment_gpu_s(const Segment& seg);
    double window_plan_gpu_s(const Lane& lane, const State& s, const Action& a) const;

    PortfolioAction choose(const PortfolioState& x, PortfolioPolicy policy) const;
    PortfolioAction reference_action(const PortfolioState& x) const;
    template <class Score>
    PortfolioAction greedy_action(const PortfolioState& x, Score&& score, bool lowest) const;
    PortfolioAction density_action(const PortfolioState& x) const;
    PortfolioAction earliest_action(const PortfolioState& x) const;
    PortfolioAction sequential_action(const PortfolioState& x) const;
    PortfolioAction rollout_action(const PortfolioState& x) const;
    // Whether the one-candidate Rollout plan of candidate c from `x` on the stage's GPU publishes
    // within the budget left.
    bool single_plan_publishes(const PortfolioState& x, int c) const;
    // V^pi0 of `x`, which it advances to the end; `rewards` is scratch.
    double follow_reference(PortfolioState& x, std::vector<double>& rewards) const;
    // The same for a state with no active candidate, in the columns of `Follow` (the
    // inner loop of rollout: one row load per candidate and stage).
    struct Follow {
        int stage = 0;
        double gpu_s = 0.0;
        std::vector<int> durable;
        std::vector<double> free_at;  // busy_until_s; +inf once done
        std::vector<double> rewards;
    };
    // What pi0 did at each stage it followed from a state (portfolio_rollout.cpp): the
    // scan's incumbent before each candidate, so that a state differing in one candidate
    // can reuse the stages where that candidate changes nothing.
    struct Trace {
        int first = 0;                   // the state's stage
        std::vector<int> chosen;         // per stage: the candidate pi0 ran, or -1
        std::vector<double> reward;      // per stage (0 for a wait)
        std::vector<double> used;        // per stage: GPU-seconds before it
        std::vector<double> step_gpu_s;  // per stage: the segment's GPU-seconds
        std::vector<int> next_durable;   // per stage: the chosen candidate's after it
        std::vector<double> next_free;
        std::vector<int> before;         // [stage * C + c]: the incumbent before c, or -1
        std::vector<double> before_go;
        std::vector<double> fit_max;     // per stage: the largest plan GPU-s the budget passed
        std::vector<int> durable0;       // the state's columns
        std::vector<double> free0;
    };
    void load(const PortfolioState& x, Follow& f) const;
    double follow_reference(Follow& f, Trace* trace = nullptr) const;
    // V^pi0 of `a`: the state `trace` started from with candidate c (only) changed and
    // a.gpu_s >= the trace's (both at the trace's first stage). Bit for bit
    // follow_reference(a): the stages where c changes nothing are the trace's own.
    double follow_reference(Follow& a, const Trace& trace, int c) const;
    // pi0's price of candidate c from (durable, free_at) at stage j with `used` GPU-seconds:
    // V_G where it qualifies and the budget admits its plan, else -inf.
    double price(int c, int durable, double free_at, int j, double used) const;

    Portfolio portfolio_;
    std::vector<Stage> stages_;
    std::vector<int> holder_;      // per GPU: its initially active candidate, or -1
    std::vector<int> first_stage_;  // per GPU: the stage of its first window
    std::vector<Lane> lanes_;      // [c * G + gpu]
    std::vector<std::optional<AgedBenefit>> aged_;  // per candidate with a half-life
    // Lane(c, stage's GPU).go's row of the stage's window, [stage * C + c]: pi0's inner loop.
    std::vector<const double*> stage_go_;
    std::vector<std::vector<int>> last_live_;  // [c][pbar]
    bool sequential_ = false;
};

inline bool works(const Action& a) {
    return a.kind == ActionKind::Publish || a.kind == ActionKind::Advance;
}

template <class Visit>
void PortfolioModel::for_each_choice(const PortfolioState& x, Visit&& visit) const {
    const Stage& st = stage(x.stage);
    const auto by_candidate = [&](int c) {
        const Lane& ln = lane(c, st.gpu);
        const State s = single_state(x, c);
        const auto offer = [&](const Action& a) {
            if (a.kind == ActionKind::Wait) return;  // the portfolio's own wait leads
            if (works(a) && bounded() && !fits_budget(x, segment_gpu_s(ln.acc.take(s, a)))) return;
            visit(PortfolioAction{c, a});
        };
        ln.acc.for_each_leading_action(s, offer);
        ln.acc.for_each_advance(s, true, offer);
    };
    const int forced = forced_candidate(x);
    if (forced >= 0) {
        by_candidate(forced);
        return;
    }
    visit(PortfolioAction{});
    for (int c = 0; c < candidate_count(); ++c) {
        if (free(x, c)) by_candidate(c);
    }
}

}  // namespace learnsched
