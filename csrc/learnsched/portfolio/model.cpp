#include "learnsched/portfolio/model.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "learnsched/portfolio/dp.hpp"
#include "learnsched/check.hpp"

namespace learnsched {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Portfolio validated(Portfolio portfolio) {
    validate(portfolio);
    return portfolio;
}

// Every GPU's windows in order of start (ties by GPU index: a stable sort of GPU-major order).
std::vector<Stage> stages_of(const Portfolio& p) {
    std::vector<Stage> stages;
    for (std::size_t g = 0; g < p.gpus.size(); ++g) {
        for (std::size_t k = 0; k < p.gpus[g].size(); ++k) {
            stages.push_back(Stage{static_cast<int>(g), static_cast<int>(k), p.gpus[g][k].start_s});
        }
    }
    std::stable_sort(stages.begin(), stages.end(),
                     [](const Stage& a, const Stage& b) { return a.start_s < b.start_s; });
    return stages;
}

}  // namespace

PortfolioModel::PortfolioModel(Portfolio portfolio, const std::vector<PortfolioPolicy>& policies)
    : portfolio_(validated(std::move(portfolio))), stages_(stages_of(portfolio_)) {
    for (const PortfolioPolicy p : policies) {
        check_policy(p);
        sequential_ = sequential_ || p == PortfolioPolicy::Sequential;
    }
    if (sequential_) check_table_size(portfolio_, true);  // the one-candidate models too
    const int G = gpu_count();
    holder_.assign(static_cast<std::size_t>(G), -1);
    first_stage_.assign(static_cast<std::size_t>(G), -1);
    for (int i = stage_count() - 1; i >= 0; --i) first_stage_[static_cast<std::size_t>(stage(i).gpu)] = i;
    const std::vector<int> runs_on = active_gpus(portfolio_);
    for (int c = 0; c < candidate_count(); ++c) {
        if (runs_on[static_cast<std::size_t>(c)] >= 0) holder_[static_cast<std::size_t>(runs_on[static_cast<std::size_t>(c)])] = c;
    }
    for (const PortfolioCandidate& cand : portfolio_.candidates) {
        aged_.push_back(cand.half_life_s ? std::optional<AgedBenefit>(std::in_place, cand.benefit_rate,
                                                                      cand.benefit_schedule, cand.horizon_s,
                                                                      *cand.half_life_s)
                                         : std::nullopt);
    }
    lanes_.reserve(static_cast<std::size_t>(candidate_count()) * static_cast<std::size_t>(G));
    for (int c = 0; c < candidate_count(); ++c) {
        for (int g = 0; g < G; ++g) {
            const bool there = runs_on[static_cast<std::size_t>(c)] == g;
            Scenario s = candidate_scenario(portfolio_, c, g, there);
            std::unique_ptr<Model> single;
            if (sequential_) single = std::make_unique<Model>(s, TableNeeds{true, true, false});
            lanes_.push_back(Lane{SegmentAccounting(std::move(s)), {}, {}, {}, {}, {}, std::move(single)});
            fill_lane(c, lanes_.back());
        }
    }
    index_stages();
}

void PortfolioModel::index_stages() {
    const auto C = static_cast<std::size_t>(candidate_count());
    stage_go_.resize(stages_.size() * C);
    last_live_.assign(C, {});
    for (std::size_t c = 0; c < C; ++c) {
        last_live_[c].assign(static_cast<std::size_t>(portfolio_.candidates[c].work_quanta) + 1, -1);
    }
    for (std::size_t i = 0; i < stages_.size(); ++i) {
        const Stage& st = stages_[i];
        for (std::size_t c = 0; c < C; ++c) {
            const double* row = lane(static_cast<int>(c), st.gpu).go.row(st.window);
            stage_go_[i * C + c] = row;
            for (std::size_t pbar = 0; pbar < last_live_[c].size(); ++pbar) {
                if (row[pbar] != -kInf) last_live_[c][pbar] = static_cast<int>(i);
            }
        }
    }
}

int PortfolioModel::reference_horizon(const PortfolioState& x) const {
    int last = -1;
    for (int g = 0; g < gpu_count(); ++g) {  // a forced stage is pi0's to decide
        const int c = holder_[static_cast<std::size_t>(g)];
        if (c >= 0 && x.candidates[static_cast<std::size_t>(c)].active) {
            last = std::max(last, first_stage_[static_cast<std::size_t>(g)]);
        }
    }
    for (int c = 0; c < candidate_count(); ++c) {
        const CandidateState& cs = x.candidates[static_cast<std::size_t>(c)];
        if (!cs.done) last = std::max(last, last_live_stage(c, cs.durable));
    }
    return last;
}

// The Window plan's value, GPU-seconds and publication time from every service state,
// backwards: V_G(k, pbar) = R(s, a) + V_G(k+1, pbar') with a = window_action (terminal
// actions continue with 0), as evaluate_policy sums it, so that with the finite model's
// benefit V_G is the core's table bit for bit.
void PortfolioModel::fill_window_plan(int c, const SegmentAccounting& acc, WindowPlan& plan) const {
    const int K = acc.window_count();
    const int J = acc.work_quanta();
    plan.value = ValueTable(K, J);
    plan.gpu_s = ValueTable(K, J);
    plan.publish_s = ValueTable(K, J);
    for (int q = 0; q <= J; ++q) plan.publish_s(K, q) = kInf;
    for (int k = K - 1; k >= 0; --k) {
        for (int pbar = 0; pbar <= J; ++pbar) {
            const State s{k, pbar, pbar, false};
            const Action a = window_action(acc, s);
            const Segment seg = segment(c, acc, s, a);
            const bool end = a.is_terminal();
            const int next = seg.next.durable;
            plan.value(k, pbar) = seg.reward() + (end ? 0.0 : plan.value(k + 1, next));  // Eq. 11
            plan.gpu_s(k, pbar) = segment_gpu_s(seg) + (end ? 0.0 : plan.gpu_s(k + 1, next));
            plan.publish_s(k, pbar) = end ? seg.publish_s : plan.publish_s(k + 1, next);
        }
    }
}

Action PortfolioModel::reference_choice(const Lane& ln, const State& s) {
    if (ln.paths.empty()) return costed_window_action(ln.acc, ln.plan.value, s);
    const auto fixed = [&](int p) {
        const FixedPath& f = ln.paths[static_cast<std::size_t>(p)];
        return FixedPathTables{&f.acc, &f.plan.value, &f.reference};
    };
    return path_choice_action({fixed(0), fixed(1)}, s);
}

const PortfolioModel::WindowPlan& PortfolioModel::plan_of(const Lane& ln, const Action& a) {
    return ln.paths.empty() ? ln.plan : ln.paths[a.cold ? 1 : 0].plan;
}

// Every table of candidate c on one GPU: the local Window plan; with two paths each fixed
// path's Window plan and Costed Window values (as the core's fill_reference_values sums
// them: R + V^{CW_p}(s'), bit for bit with the finite model's benefit); then pi0's price,
// plan GPU-seconds and segment from every service state.
void PortfolioModel::fill_lane(int c, Lane& lane) const {
    const int K = lane.acc.window_count();
    const int J = lane.acc.work_quanta();
    fill_window_plan(c, lane.acc, lane.plan);
    if (lane.acc.path_count() == 2) {
        for (int p = 0; p < 2; ++p) {
            FixedPath f{SegmentAccounting(fixed_path_scenario(lane.acc.scenario(), p == 1)), {}, ValueTable(K, J)};
            fill_window_plan(c, f.acc, f.plan);
            for (int k = K - 1; k >= 0; --k) {
                for (int pbar = 0; pbar <= J; ++pbar) {
                    const State s{k, pbar, pbar, false};
                    const Action a = costed_window_action(f.acc, f.plan.value, s);
                    const Segment seg = segment(c, f.acc, s, a);
                    f.reference(k, pbar) = seg.reward() + (a.is_terminal() ? 0.0 : f.reference(k + 1, seg.next.durable));
                }
            }
            lane.paths.push_back(std::move(f));
        }
    }
    lane.go = ValueTable(K, J);
    lane.go_gpu_s = ValueTable(K, J);
    lane.window.resize(static_cast<std::size_t>(K) * (static_cast<std::size_t>(J) + 1));
    for (int k = 0; k < K; ++k) {
        for (int pbar = 0; pbar <= J; ++pbar) {
            const State s{k, pbar, pbar, false};
            const Action a = reference_choice(lane, s);
            const WindowPlan& plan = plan_of(lane, a);
            lane.go(k, pbar) = works(a) ? plan.value(k, pbar) : -kInf;
            lane.go_gpu_s(k, pbar) = plan.gpu_s(k, pbar);
            const Segment seg = segment(c, lane.acc, s, a);
            lane.window[static_cast<std::size_t>(k) * (static_cast<std::size_t>(J) + 1) + static_cast<std::size_t>(pbar)] =
                WindowStep{seg.reward(), segment_gpu_s(seg), a.is_terminal() ? kInf : seg.ready_s, seg.next.durable};
        }
    }
}

Segment PortfolioModel::segment(int c, const SegmentAccounting& acc, const State& s, const Action& a) const {
    Segment seg = acc.take(s, a);
    if (a.kind == ActionKind::Publish && aged_[static_cast<std::size_t>(c)]) {
        seg.benefit = aged_[static_cast<std::size_t>(c)]->value(seg.publish_s);
    }
    return seg;
}

double PortfolioModel::benefit(int c, double publish_s) const {
    const auto& aged = aged_[static_cast<std::size_t>(c)];
    return aged ? aged->value(publish_s) : lane(c, 0).acc.benefit().value(publish_s);
}

double PortfolioModel::segment_gpu_s(const Segment& seg) {
    // Summed as take() sums the segment's duration (Eq. 10's left side), so equal bit for bit.
    return seg.cost.load + seg.cost.work + seg.cost.save + seg.cost.recovery;
}

double PortfolioModel::window_plan_gpu_s(const Lane& ln, const State& s, const Action& a) const {
    const Segment seg = ln.acc.take(s, a);
    return segment_gpu_s(seg) + (a.is_terminal() ? 0.0 : plan_of(ln, a).gpu_s(s.window + 1, seg.next.durable));
}

PortfolioState PortfolioModel::initial_state() const {
    PortfolioState x;
    x.candidates.resize(portfolio_.candidates.size());
    for (std::size_t c = 0; c < x.candidates.size(); ++c) {
        const State& init = portfolio_.candidates[c].initial;
        CandidateState& cs = x.candidates[c];
        cs.progress = init.progress;
        cs.durable = init.durable;
        cs.active = init.active;
        if (init.active) cs.busy_until_s = kInf;  // its GPU's until that GPU's first window
    }
    return x;
}

int PortfolioModel::forced_candidate(const PortfolioState& x) const {
    const Stage& st = stage(x.stage);
    if (st.window != 0) return -1;
    const int c = holder_[static_cast<std::size_t>(st.gpu)];
    return c >= 0 && x.candidates[static_cast<std::size_t>(c)].active ? c : -1;
}

bool PortfolioModel::free(const PortfolioState& x, int c) const {
    const CandidateState& cs = x.candidates[static_cast<std::size_t>(c)];
    return !cs.done && !cs.active && cs.busy_until_s <= stage(x.stage).start_s;
}

State PortfolioModel::single_state(const PortfolioState& x, int c) const {
    const CandidateState& cs = x.candidates[static_cast<std::size_t>(c)];
    return State{stage(x.stage).window, cs.progress, cs.durable, cs.active};
}

void PortfolioModel::validate_state(const PortfolioState& x) const {
    if (x.stage < 0 || x.stage >= stage_count()) {
        fail("stage must be in [0, ", stage_count(), "), got ", x.stage);
    }
    if (x.candidates.size() != portfolio_.candidates.size()) {
        fail("candidates must hold one state per candidate (", portfolio_.candidates.size(),
             "), got ", x.candidates.size());
    }
    if (!std::isfinite(x.gpu_s) || x.gpu_s < 0.0) fail("gpu_s must be finite and >= 0, got ", x.gpu_s);
    for (std::size_t c = 0; c < x.candidates.size(); ++c) {
        const CandidateState& cs = x.candidates[c];
        const int J = portfolio_.candidates[c].work_quanta;
        const std::string who = "candidates[" + std::to_string(c) + "]";
        if (cs.progress < 0 || cs.progress > J) {
            fail(who, ".progress must be in [0, work_quanta=", J, "], got ", cs.progress);
        }
        if (cs.durable < 0 || cs.durable > cs.progress) {
            fail(who, ".durable must be in [0, progress=", cs.progress, "], got ", cs.durable);
        }
        if (std::isnan(cs.busy_until_s)) fail(who, ".busy_until_s must not be NaN");
        if (!cs.active) {
            if (cs.durable != cs.progress) {
                fail(who, ": a service-mode candidate keeps no unsaved work: progress=", cs.progress,
                     " must equal durable=", cs.durable, " unless active");
            }
            continue;
        }
        const int g = active_gpus(portfolio_)[c];
        if (cs.done || g < 0 || x.stage > first_stage_[static_cast<std::size_t>(g)]) {
            fail(who, ".active: only a candidate active initially is, until its GPU's first window");
        }
    }
}

void PortfolioModel::validate_action(const PortfolioState& x, const PortfolioAction& a) const {
    const int forced = forced_candidate(x);
    if (a.candidate == -1) {
        if (forced >= 0) fail("the GPU must decide its active candidate ", forced, " first: no wait");
        if (a.action.kind != ActionKind::Wait) fail("candidate -1 can only wait");
        return;
    }
    if (a.candidate < 0 || a.candidate >= candidate_count()) {
        fail("candidate must be in [-1, ", candidate_count(), "), got ", a.candidate);
    }
    if (forced >= 0 ? a.candidate != forced : !free(x, a.candidate)) {
        fail("candidate ", a.candidate, " cannot start on this GPU now (done, busy, or another is forced)");
    }
    const Lane& ln = lane(a.candidate, stage(x.stage).gpu);
    const State s = single_state(x, a.candidate);
    if (a.action.kind == ActionKind::Wait || !ln.acc.fits(s, a.action)) {
        fail("action ", name(a.action.kind), " of ", a.action.quanta,
             " quanta is not feasible for candidate ", a.candidate, " (Eq. 10)");
    }
    if (works(a.action) && !fits_budget(x, segment_gpu_s(ln.acc.take(s, a.action)))) {
        fail("action ", name(a.action.kind), " of ", a.action.quanta, " quanta exceeds the budget left");
    }
}

PortfolioStep PortfolioModel::take(const PortfolioState& x, const PortfolioAction& a) const {
    const Stage& st = stage(x.stage);
    PortfolioStep step;
    step.stage = x.stage;
    step.gpu = st.gpu;
    step.candidate = a.candidate;
    if (a.candidate < 0) {  // the window goes to serving: free (rule 7)
        step.segment.window = st.window;
        step.segment.start_s = st.start_s;
        step.segment.publish_s = kNaN;
        step.segment.ready_s = kNaN;
        return step;
    }
    step.segment = segment(a.candidate, lane(a.candidate, st.gpu).acc, single_state(x, a.candidate), a.action);
    step.gpu_s = segment_gpu_s(step.segment);
    return step;
}

void PortfolioModel::advance(PortfolioState& x, const PortfolioStep& step) const {
    ++x.stage;
    if (step.candidate < 0) return;
    CandidateState& cs = x.candidates[static_cast<std::size_t>(step.candidate)];
    const Segment& seg = step.segment;
    x.gpu_s += step.gpu_s;
    cs.active = false;
    cs.busy_until_s = seg.ready_s;
    cs.progress = seg.next.progress;
    cs.durable = seg.next.durable;
    cs.done = seg.action.is_terminal();
}

PortfolioAction PortfolioModel::choose(const PortfolioState& x, PortfolioPolicy policy) const {
    switch (policy) {
        case PortfolioPolicy::Sequential: return sequential_action(x);
        case PortfolioPolicy::Density: return density_action(x);
        case PortfolioPolicy::Earliest: return earliest_action(x);
        case PortfolioPolicy::CostedWindow: return reference_action(x);
        case PortfolioPolicy::Rollout: return rollout_action(x);
        case PortfolioPolicy::Dp: return PortfolioDp(*this).decide(x);
    }
    check_policy(policy);
    return {};
}

PortfolioAction PortfolioModel::decide(const PortfolioState& x, PortfolioPolicy policy) const {
    check_policy(policy);
    if (policy == PortfolioPolicy::Sequential && !sequential_) {
        fail("policy sequential reads today's models, which this portfolio was prepared without");
    }
    validate_state(x);
    return choose(x, policy);
}

PortfolioPlan PortfolioModel::solve(PortfolioPolicy policy) const {
    check_policy(policy);
    if (policy == PortfolioPolicy::Sequential && !sequential_) {
        fail("policy sequential reads today's models, which this portfolio was prepared without");
    }
    std::unique_ptr<PortfolioDp> dp;
    if (policy == PortfolioPolicy::Dp) dp = std::make_unique<PortfolioDp>(*this);
    PortfolioPlan plan;
    plan.policy = policy;
    plan.publish_s.assign(portfolio_.candidates.size(), kNaN);
    plan.steps.reserve(stages_.size());
    PortfolioState x = initial_state();
    while (x.stage < stage_count()) {
        const PortfolioAction a = dp ? dp->decide(x) : choose(x, policy);
        PortfolioStep step = take(x, a);
        const Segment& seg = step.segment;
        plan.value += seg.reward();
        plan.benefit += seg.benefit;
        plan.cost += seg.cost;
        plan.gpu_s += step.gpu_s;
        if (seg.action.kind == ActionKind::Publish) {
            plan.publish_s[static_cast<std::size_t>(step.candidate)] = seg.publish_s;
        }
        advance(x, step);
        plan.steps.push_back(std::move(step));
    }
    return plan;
}

double PortfolioModel::reference_value(const PortfolioState& x) const {
    validate_state(x);
    PortfolioState y = x;
    std::vector<double> rewards;
    return follow_reference(y, rewards);
}

}  // namespace learnsched
