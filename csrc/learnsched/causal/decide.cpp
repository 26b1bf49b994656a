#include "learnsched/causal/decide.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"
#include "learnsched/causal/trace.hpp"

namespace learnsched {

namespace {

// The plans a decision compares, in the canonical order of the finite model (ties keep
// the earlier): wait (or the three returns if lent), Window's plan, publish, advance
// with a checkpoint for u = max..1.
std::size_t plan_count(const CausalCandidate& c, const CausalPoint& p) {
    const int rest = c.work_quanta - (p.lent ? p.progress : p.durable);
    return (p.lent ? 3u : 1u) + 2u + static_cast<std::size_t>(std::max(0, rest - 1));
}

CausalPlan plan_at(const CausalCandidate& c, const CausalPoint& p, std::size_t k) {
    const int rest = c.work_quanta - (p.lent ? p.progress : p.durable);
    const std::size_t lead = p.lent ? 3u : 1u;
    if (k < lead) {
        if (!p.lent) return {PlanKind::Wait, 0};
        static constexpr PlanKind kLent[3] = {PlanKind::Abandon, PlanKind::CheckpointReturn,
                                              PlanKind::DiscardReturn};
        return {kLent[k], 0};
    }
    if (k == lead) return {PlanKind::Greedy, rest};
    if (k == lead + 1) return {PlanKind::Publish, rest};
    return {PlanKind::Advance, rest - 1 - static_cast<int>(k - lead - 2)};
}

// Whether plan k is open at p (a checkpoint, plan 1 when lent, needs unsaved work).
bool plan_open(const CausalPoint& p, std::size_t k) {
    return !(p.lent && k == 1) || p.progress > p.durable;
}

Move move_of(const CausalPoint& p, const CausalPlan& plan) {
    switch (plan.kind) {
        case PlanKind::Wait: return Move::Wait;
        case PlanKind::Abandon: return Move::Abandon;
        case PlanKind::CheckpointReturn: return Move::CheckpointReturn;
        case PlanKind::DiscardReturn: return Move::DiscardReturn;
        case PlanKind::Greedy: return p.lent && p.progress > p.durable ? Move::Save : Move::Work;
        case PlanKind::Publish:
        case PlanKind::Advance: return Move::Work;
        case PlanKind::Optimal: break;
    }
    return Move::Wait;
}

// The plan declining is (Costed Window's no-go): wait, or return keeping the completed
// work (checkpoint and return, 1, if any is unsaved; else discard and return, 2).
std::size_t decline(const CausalPoint& p) {
    if (!p.lent) return 0;
    return p.progress > p.durable ? 1 : 2;
}

// The scores of one decision, sample by sample. Each plan's outcome in a sample: its
// reward, and the durable progress it leaves (its continuation V(s'), none if terminal),
// and whether capacity is back by the sample's return deadline. Written out plan by plan
// (no dispatch per plan and sample): a decision reads little more than its table rows.
class Tally {
  public:
    Tally(const CausalCandidate& c, const CausalPoint& p, const GapPool& pool,
          std::size_t plans, DecisionScratch& s)
        : c_(c), p_(p), pool_(pool), s_(s), charge_(1.0 + c.residency_rate),
          load_(!p.lent && p.durable > 0 ? c.load_s : 0.0), base_(p.lent ? p.progress : p.durable),
          rest_(c.work_quanta - base_), lead_(p.lent ? 3u : 1u), plans_(plans),
          reach_cached_(pool.reach() == c.recovery_s) {
        s.score.assign(plans, 0.0);
        s.timely.assign(plans, 0.0);
        s.gate.assign(2, 0.0);
        const auto by_u = static_cast<std::size_t>(rest_) + 1;
        s.cut.assign(by_u, 0.0);
        s.cut_timely.assign(by_u, 0.0);
        s.advance.assign(by_u, 0.0);
        s.reached.assign(by_u, 0.0);
        s.late.assign(by_u, 0.0);
        // This decision's outcomes by record (stamped, so nothing is cleared).
        ++s.epoch;
        if (s.outcomes.size() < pool.size()) {
            s.outcomes.resize(pool.size());
            s.stamp.resize(pool.size(), 0);
        }
        s.late_price.clear();
        s.used.clear();
    }

    // Add sample `draw` with its rows of the policy's table (`values`, null: gate only) and
    // of V_G (`window`, null: no gate). The sums run in sample order whatever is cached.
    void add(const GapPool::Draw& draw, const double* values, const double* window) {
        if (!p_.lent && !by_arrival(p_.t + (load_ + c_.quantum_s), p_.t + draw.remaining_s)) {
            // Not even one quantum is done by the arrival (most samples of a young gap):
            // every plan but waiting is the forced return with nothing gained.
            bool cut_timely = true;
            const double cut_reward = forced_return(draw, cut_timely);
            const double cut = cut_reward + (values == nullptr ? 0.0 : values[p_.durable]);
            if (window != nullptr) s_.gate[0] += cut_reward + window[p_.durable];
            if (values == nullptr) return;
            s_.score[0] += values[p_.durable];
            s_.timely[0] += 1.0;
            all_cut_ += cut;
            all_cut_timely_ += cut_timely ? 1.0 : 0.0;
            return;
        }
        DrawOutcome& o = outcome(draw, values != nullptr);
        // Window's plan (the gate reads it under V_G, the rollout under its own table).
        if (window != nullptr) {
            s_.gate[0] += o.greedy + (o.greedy_durable < 0 ? 0.0 : window[o.greedy_durable]);
        }
        if (p_.lent) {
            if (window != nullptr) s_.gate[1] += o.stop;
            if (values == nullptr) return;
            put(0, o.stop, -1, values);                                   // abandon
            if (p_.progress > p_.durable) {                               // checkpoint, return
                put(1, o.checkpoint, o.checkpoint_durable, values);
            }
            put(2, o.stop, p_.durable, values);                           // discard, return
        } else {
            if (values == nullptr) return;
            put(0, 0.0, p_.durable, values);                              // wait
        }
        put(lead_, o.greedy, o.greedy_durable, values);
        put(lead_ + 1, o.publish, o.publish_durable, values);
        advances(o, values);
        ++o.samples;  // its timeliness is counted once per draw (count())
    }

    // Fold the advances and the cut-short plans in (after the last sample).
    void finish() {
        for (const std::size_t r : s_.used) count(s_.outcomes[r]);
        count(single_);
        double cut = 0.0;
        double cut_timely = 0.0;
        double reached = 0.0;  // samples in which advance u is done: those with most >= u
        for (int u = rest_ - 1; u >= 1; --u) {
            reached += s_.reached[static_cast<std::size_t>(u)];
        }
        for (int u = 1; u <= rest_ - 1; ++u) {
            const auto i = static_cast<std::size_t>(u);
            cut += s_.cut[i];
            cut_timely += s_.cut_timely[i];
            const double busy = load_ + u * c_.quantum_s + c_.save_s;
            const std::size_t k = lead_ + 2 + static_cast<std::size_t>(rest_ - 1 - u);
            s_.score[k] += s_.advance[i] + reached * -(charge_ * (busy + c_.recovery_s)) + cut;
            s_.timely[k] += reached - s_.late[i] + cut_timely;
            reached -= s_.reached[i];
        }
        for (std::size_t k = 1; k < plans_ && !p_.lent; ++k) {
            s_.score[k] += all_cut_;
            s_.timely[k] += all_cut_timely_;
        }
    }

  private:
    // The outcomes of `draw`: worked out once per decision for each drawn past gap (its
    // record and remaining length fix the arrival), every later sample of it reuses them.
    DrawOutcome& outcome(const GapPool::Draw& draw, bool full) {
        if (draw.record < 0) {  // no history: each draw its own
            count(single_);
            work_out(draw, full, single_);
            return single_;
        }
        const auto r = static_cast<std::size_t>(draw.record);
        DrawOutcome& o = s_.outcomes[r];
        if (s_.stamp[r] != s_.epoch) {
            s_.stamp[r] = s_.epoch;
            s_.used.push_back(r);
            work_out(draw, full, o);
        } else if (o.remaining_s != draw.remaining_s) {  // a tail draw beyond every gap
            count(o);
            work_out(draw, full, o);
        }
        return o;
    }

    // The timeliness counts of the samples of outcome `o` (whole numbers, exact in any
    // order), added at once; o.samples is reset.
    void count(DrawOutcome& o) {
        if (o.samples == 0) return;
        const double n = o.samples;
        o.samples = 0;
        double* timely = s_.timely.data();
        if (p_.lent) {
            timely[0] += o.stop_timely ? n : 0.0;
            if (p_.progress > p_.durable) timely[1] += o.checkpoint_timely ? n : 0.0;
            timely[2] += o.stop_timely ? n : 0.0;
        } else {
            timely[0] += n;
        }
        timely[lead_] += o.greedy_timely ? n : 0.0;
        timely[lead_ + 1] += o.publish_timely ? n : 0.0;
        const auto m = static_cast<std::size_t>(o.most);
        if (o.most < rest_ - 1 && o.cut_timely) {
            s_.cut_timely[m + 1] += n;
            s_.cut_timely[static_cast<std::size_t>(rest_)] -= n;
        }
        if (o.most < 1) return;
        s_.reached[m] += n;  // samples whose advances u <= most are done
        for (int u = o.late_from; u <= o.most; ++u) s_.late[static_cast<std::size_t>(u)] += n;
    }

    // The forced return of a plan the arrival of `draw` cuts short: t_ret after it,
    // unsaved work lost. Sets arrival_, record_ and slack_ of the draw.
    double forced_return(const GapPool::Draw& draw, bool& timely) {
        arrival_ = p_.t + draw.remaining_s;
        record_ = draw.record;
        slack_ = pool_.slack(record_);
        const double cut_late = reach_cached_ ? pool_.reach_lateness(record_)
                                              : pool_.lateness(record_, c_.recovery_s);
        timely = !(c_.recovery_s > slack_);
        return -(charge_ * (arrival_ - p_.t + c_.recovery_s)) - c_.lateness_price * cut_late;
    }

    // Every plan's reward, durable progress left and timeliness in the draw (`full`: also
    // those only a table-reading policy scores: checkpoint, publish and the advances).
    void work_out(const GapPool::Draw& draw, bool full, DrawOutcome& o) {
        cut_reward_ = forced_return(draw, cut_timely_);
        o.remaining_s = draw.remaining_s;
        o.samples = 0;
        o.cut_reward = cut_reward_;
        o.cut_timely = cut_timely_;
        o.greedy = greedy_reward(o.greedy_durable);
        o.greedy_timely = greedy_timely_ < 0 ? cut_timely_ : greedy_timely_ > 0;
        if (p_.lent) {
            o.stop = ended(p_.t + c_.recovery_s, charge_ * c_.recovery_s);
            o.stop_timely = last_timely_;
        }
        if (!full) return;
        if (p_.lent && p_.progress > p_.durable) {
            const double saved = p_.t + c_.save_s;
            if (by_arrival(saved, arrival_)) {
                o.checkpoint = ended(saved + c_.recovery_s, charge_ * (c_.save_s + c_.recovery_s));
                o.checkpoint_durable = p_.progress;
                o.checkpoint_timely = last_timely_;
            } else {
                cut_short(o.checkpoint, o.checkpoint_durable, o.checkpoint_timely);
            }
        }
        const double work = load_ + rest_ * c_.quantum_s;  // publish
        if (by_arrival(p_.t + work, arrival_)) {
            const double publish = p_.t + work;
            o.publish = ended(publish + c_.recovery_s, charge_ * (work + c_.recovery_s)) +
                        c_.benefit.value(publish);
            o.publish_durable = -1;
            o.publish_timely = last_timely_;
        } else {
            cut_short(o.publish, o.publish_durable, o.publish_timely);
        }
        work_out_advances(o);
    }

    // The reward of a loan ready at `ready` after costing `cost`; sets the timely flag.
    double ended(double ready, double cost) {
        const double overrun = ready - arrival_;
        last_timely_ = !(overrun > slack_);
        return last_timely_ ? -cost
                            : -cost - c_.lateness_price * pool_.lateness(record_, overrun);
    }

    // A plan the arrival cuts short: the forced return, durable progress kept.
    void cut_short(double& reward, int& durable, bool& timely) const {
        reward = cut_reward_;
        durable = p_.durable;
        timely = cut_timely_;
    }

    void put(std::size_t k, double reward, int durable, const double* values) {
        s_.score[k] += reward + (durable < 0 ? 0.0 : values[durable]);
    }

    // Window's plan from here: (save first if lent with unsaved work), then quantum and
    // save pairs, the last quantum publishing. Sets greedy_timely_ (-1: cut short).
    double greedy_reward(int& durable) {
        const bool saves_first = p_.lent && p_.progress > p_.durable;
        const double start = p_.t + (saves_first ? c_.save_s : load_);
        if (saves_first && !by_arrival(start, arrival_)) {
            durable = p_.durable;
            greedy_timely_ = -1;
            return cut_reward_;
        }
        const double pair = c_.quantum_s + c_.save_s;
        const double publish = start + (rest_ - 1) * pair + c_.quantum_s;
        if (by_arrival(publish, arrival_)) {
            durable = -1;
            const double r =
                ended(publish + c_.recovery_s, charge_ * (publish - p_.t + c_.recovery_s)) +
                c_.benefit.value(publish);
            greedy_timely_ = last_timely_ ? 1 : 0;
            return r;
        }
        int saved = 0;  // quantum and save pairs done by the arrival
        if (arrival_ >= start) {
            saved = static_cast<int>(
                std::min<double>(rest_ - 1, std::floor((arrival_ - start) / pair)));
        }
        durable = base_ + saved;
        greedy_timely_ = -1;
        return cut_reward_;
    }

    // Advances u = rest-1 .. 1: the most done by the arrival, and the lateness price of
    // those late (lateness grows with u: the late ones are the largest, walked down from
    // the most done), kept in s_.late_price from o.late_at by u.
    void work_out_advances(DrawOutcome& o) {
        const auto done = [&](int u) {
            return by_arrival(p_.t + (load_ + u * c_.quantum_s + c_.save_s), arrival_);
        };
        const double room = (arrival_ - p_.t - load_ - c_.save_s) / c_.quantum_s;
        int most = room >= rest_ - 1 ? rest_ - 1 : room < 1.0 ? 0 : static_cast<int>(room);
        while (most >= 1 && !done(most)) --most;  // the estimate, corrected by the rule
        while (most < rest_ - 1 && done(most + 1)) ++most;
        o.most = most;
        o.late_from = most + 1;
        o.late_at = s_.late_price.size();
        const GapPool::Curve curve = record_ < 0 ? GapPool::Curve{} : pool_.curve(record_);
        std::size_t below = curve.count;
        for (int u = most; u >= 1; --u) {
            const double busy = load_ + u * c_.quantum_s + c_.save_s;
            const double overrun = (p_.t + busy + c_.recovery_s) - arrival_;
            if (!(overrun > slack_)) break;
            double lateness = overrun;  // record -1: one request due at the arrival
            if (record_ >= 0) {  // as GapPool::lateness: sum of (overrun - slack)^+
                // lower_bound on [0, below), which holds while the overrun stays above the
                // largest slack left (the late advances beyond reach_s, most at J = 36).
                if (below > 0 && !(curve.slacks[below - 1] < overrun)) {
                    below = static_cast<std::size_t>(
                        std::lower_bound(curve.slacks, curve.slacks + below - 1, overrun) -
                        curve.slacks);
                }
                lateness = curve.weight * (static_cast<double>(below) * overrun - curve.prefix[below]);
            }
            s_.late_price.push_back(c_.lateness_price * lateness);
            o.late_from = u;
        }
        std::reverse(s_.late_price.begin() + static_cast<std::ptrdiff_t>(o.late_at),
                     s_.late_price.end());
    }

    // The advances of one sample, kept by u in s_.advance: those done by the arrival
    // (u <= most) add their continuation row (one contiguous run), the late among them
    // their lateness; their cost, the same in every sample, is added once per sample that
    // got that far (finish); the others are cut short all alike.
    void advances(const DrawOutcome& o, const double* values) {
        const int most = o.most;
        const auto m = static_cast<std::size_t>(most);
        if (most < rest_ - 1) {  // u = most+1 .. rest-1: cut short
            const double q = o.cut_reward + values[p_.durable];
            s_.cut[m + 1] += q;
            s_.cut[static_cast<std::size_t>(rest_)] -= q;
        }
        if (most < 1) return;
        // One pass: the late ones subtract their price right after their row entry, as
        // two passes would (the same operations in the same order).
        double* advance = s_.advance.data();
        const double* next = values + base_;
        const auto late_from = static_cast<std::size_t>(o.late_from);  // <= most + 1
        for (std::size_t u = 1; u < late_from; ++u) advance[u] += next[u];
        const double* price = s_.late_price.data() + o.late_at;  // price[0]: late_from's
        for (std::size_t u = late_from; u <= m; ++u) {
            advance[u] = (advance[u] + next[u]) - price[u - late_from];
        }
    }

    const CausalCandidate& c_;
    const CausalPoint& p_;
    const GapPool& pool_;
    DecisionScratch& s_;
    double charge_;
    double load_;
    int base_;
    int rest_;
    std::size_t lead_;
    std::size_t plans_;
    bool reach_cached_;
    DrawOutcome single_;  // the outcome of a draw without a record
    double arrival_ = 0.0;
    std::int32_t record_ = -1;
    double slack_ = 0.0;
    double cut_reward_ = 0.0;
    bool cut_timely_ = true;
    bool last_timely_ = true;
    int greedy_timely_ = -1;
    double all_cut_ = 0.0;  // idle samples where every working plan is cut short
    double all_cut_timely_ = 0.0;
};

}  // namespace

CausalDecision decide(const CausalCandidate& c, const CausalPoint& point, CausalPolicy policy,
                      double return_level, const CausalForecast& forecast, std::uint64_t& rng,
                      DecisionScratch& scratch) {
    const std::size_t plans = plan_count(c, point);
    const std::size_t lead = point.lent ? 3u : 1u;  // index of Window's plan
    if (policy == CausalPolicy::Window || policy == CausalPolicy::Never) {
        const CausalPlan plan =
            plan_at(c, point, policy == CausalPolicy::Window ? lead : decline(point));
        return {plan, move_of(point, plan)};
    }
    if (forecast.pool == nullptr || forecast.tables == nullptr) {
        throw std::invalid_argument(std::string("policy ") + name(policy) + " needs a forecast");
    }
    const SampleTables& tables = *forecast.tables;
    if (!tables.needs().covers(table_needs(policy))) {
        throw std::invalid_argument(std::string("the forecast's tables were not built for ") +
                                    name(policy));
    }
    const auto n = static_cast<std::size_t>(tables.sample_count());
    scratch.draws.resize(n);
    forecast.pool->draw(point.t - point.gap_start, n, rng, scratch.draws.data());
    const bool gated = policy != CausalPolicy::MeanDp;
    Tally tally(c, point, *forecast.pool, plans, scratch);
    for (std::size_t i = 0; i < n; ++i) {
        const GapPool::Draw& draw = scratch.draws[i];
        const int row = tables.row_after(i, point.t + draw.remaining_s);
        const double* values = policy == CausalPolicy::CostedWindow ? nullptr
                               : policy == CausalPolicy::MeanDp     ? tables.optimal_row(i, row)
                                                                    : tables.reference_row(i, row);
        tally.add(draw, values, gated ? tables.window_row(i, row) : nullptr);
    }
    tally.finish();
    // pi0: Window's plan if its expected value beats stopping (0 idle, abandoning lent).
    const bool go = gated && strictly_greater(scratch.gate[0] / static_cast<double>(n),
                                              scratch.gate[1] / static_cast<double>(n));
    std::size_t incumbent_k = go ? lead : decline(point);
    const double per = 1.0 / static_cast<double>(n);
    const double none = std::numeric_limits<double>::quiet_NaN();
    if (policy == CausalPolicy::CostedWindow) {  // it reads V_G alone: its gate's scores
        const CausalPlan plan = plan_at(c, point, incumbent_k);
        return {plan, move_of(point, plan), scratch.gate[go ? 0 : 1] * per,
                point.lent ? none : scratch.gate[1] * per};
    }
    const double wait_value = point.lent ? none : scratch.score[0] * per;
    if (policy == CausalPolicy::MeanDp) incumbent_k = 0;  // Never's plan: wait, or abandon if lent
    // Eq. 11 over the samples: the first plan that beats the incumbent strictly.
    std::vector<char>& allowed = scratch.allowed;
    allowed.resize(plans);
    for (std::size_t k = 0; k < plans; ++k) allowed[k] = plan_open(point, k);
    if (policy == CausalPolicy::RiskRollout) {
        const double need = return_level * static_cast<double>(n) - 1e-9;
        std::size_t safest = 0;
        bool any = false;
        for (std::size_t k = 0; k < plans; ++k) {
            if (!allowed[k]) continue;
            if (scratch.timely[k] > scratch.timely[safest] ||
                (scratch.timely[k] == scratch.timely[safest] &&
                 strictly_greater(scratch.score[k], scratch.score[safest]))) {
                safest = k;
            }
            allowed[k] = scratch.timely[k] >= need;
            any = any || allowed[k];
        }
        if (!any) {  // nothing is safe enough: the plan most likely to be in time
            const CausalPlan plan = plan_at(c, point, safest);
            return {plan, move_of(point, plan), scratch.score[safest] * per, wait_value};
        }
        if (!allowed[incumbent_k]) {
            incumbent_k = static_cast<std::size_t>(
                std::find(allowed.begin(), allowed.end(), char{1}) - allowed.begin());
        }
    }
    // Each plan's mean divided once (the same quotients as dividing in the comparisons,
    // but off the chain of comparisons, which then waits on no division).
    std::vector<double>& mean = scratch.mean;
    mean.resize(plans);
    for (std::size_t k = 0; k < plans; ++k) mean[k] = scratch.score[k] / static_cast<double>(n);
    std::size_t best = incumbent_k;
    for (std::size_t k = 0; k < plans; ++k) {
        if (allowed[k] && strictly_greater(mean[k], mean[best])) best = k;
    }
    const CausalPlan plan = plan_at(c, point, best);
    return {plan, move_of(point, plan), scratch.score[best] * per, wait_value};
}

}  // namespace learnsched
