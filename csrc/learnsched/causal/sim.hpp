// Causal scheduling on a request trace (issue 20): the scheduler knows the arrivals up to
// now, never the end of the idle gap it is in.
//
// The model (docs/causal-study.md states it for users):
// * One GPU serves the trace's requests first come, first served as a fluid queue
//   (Eq. 6): request i arrives at a_i, needs service_i seconds and is due at d_i.
// * The queue empties at g (an idle gap begins); the next arrival A ends the gap. From g
//   on the scheduler decides at every quantum boundary: while idle, wait a quantum or
//   lend (start working; resuming from a checkpoint loads first); while lent, work one
//   more quantum, save a checkpoint and go on, checkpoint and return, discard and
//   return, or abandon. The last quantum publishes. One loan per gap.
// * An arrival forces an immediate return: work not checkpointed (or published) by then
//   is lost, a save in progress included, and capacity is ready t_ret after the arrival.
//   A return already under way is not changed by an arrival.
// * While lent the GPU serves nothing; the queued requests are served from the ready
//   time on, and their lateness (finish - deadline)^+ is what the fluid queue gives.
//   Lateness costs `lateness_price` s-eq. per late request-second; the next gap begins
//   when the queue empties again.
// * Costs as in the finite model: every lent second (load, work, save, return) costs
//   (1 + rho) s-eq.; publishing at t_p earns g (H - t_p)^+.
//
// With a known future this is the finite model on the windows [g, min(D, A + t_ret)]
// (D: the latest ready time meeting every deadline, Eq. 6): a checkpointed advance or a
// publication fits such a window (Eq. 10) exactly when it is causally feasible and never
// late (causal_windows, the clairvoyant's calendar).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "learnsched/finite/benefit.hpp"
#include "learnsched/forecast/sample_tables.hpp"

namespace learnsched {

// Lateness below this is rounding, not a late request (seconds).
inline constexpr double kLateToleranceS = 1e-6;

// Requests in arrival order; service = work / rate, seconds.
struct RequestTrace {
    std::vector<double> arrival;
    std::vector<double> service;
    std::vector<double> deadline;
    std::size_t size() const { return arrival.size(); }
};

// The trace served with nothing lent, and its idle gaps: gap j runs from start[j] (the
// queue empties) to the arrival of request first[j].
class UnlentSchedule {
  public:
    // Validates (finite, sorted arrivals, service > 0, deadline >= arrival) and throws
    // std::invalid_argument naming the first request that misses its deadline unlent.
    explicit UnlentSchedule(RequestTrace trace);

    const RequestTrace& trace() const { return trace_; }
    std::size_t gap_count() const { return first_.size(); }
    double gap_start(std::size_t j) const { return start_[j]; }
    double gap_arrival(std::size_t j) const { return trace_.arrival[first_[j]]; }
    std::size_t gap_first(std::size_t j) const { return first_[j]; }
    // D_j: the latest ready time that keeps every later deadline (Eq. 6), >= the arrival.
    double gap_deadline(std::size_t j) const { return deadline_[j]; }
    // Unlent finish of request i.
    double finish(std::size_t i) const { return finish_[i]; }
    // e_i - A_j for request i of gap j's busy chain: a ready time R makes it late by
    // (R - A_j - slack)^+ (Eq. 6 with the outage [g_j, R]).
    double slack(std::size_t j, std::size_t i) const {
        return trace_.deadline[i] - (served_[i + 1] - served_[first_[j]]) - gap_arrival(j);
    }
    // The first gap starting at or after t.
    std::size_t first_gap_from(double t) const;

  private:
    RequestTrace trace_;
    std::vector<double> finish_;
    std::vector<double> served_;  // served_[i]: service of requests 0..i-1, seconds
    std::vector<double> start_;
    std::vector<std::size_t> first_;
    std::vector<double> deadline_;
};

// The finite-model calendar of the gaps starting in [from_s, to_s), each long enough to
// publish one quantum. Without `overlap`, [g, A]: capacity is back by the arrival, so a
// plan on it (Eq. 10) is causally feasible, never late and never delays the busy period
// after a gap (the queue is busy from A to the next gap): a lower bound of the exact
// clairvoyant. With `overlap`, [g, min(D, A + t_ret, the next gap's start)]: the return
// may run into the arrival while every deadline holds (what a forecast of usable time
// counts; the delay it puts on the busy period is not priced).
std::vector<Window> causal_windows(const UnlentSchedule& schedule, double from_s, double to_s,
                                   double quantum_s, double return_s, bool overlap);

// How the current gap's remaining length is forecast.
enum class GapModel : std::uint8_t {
    Empirical,  // resample past gaps longer than the current one's age (their survival)
    Repeat,     // the last observed gaps again, one per sample
    Mean,       // every sample: the mean past gap, with the mean lateness of a late return
};

// Past gaps, fitted at `now_s` on the past only: a gap enters once `close_s` seconds
// have passed since its end (its record of what a late return would cost counts the
// requests that arrived in that time) and, with `history_s`, if it ended within the last
// `history_s` seconds. Each record keeps its gap length and the slacks below `reach_s`
// (the longest overrun a decision can cause: the return path) of its busy chain.
class GapPool {
  public:
    GapPool(const UnlentSchedule& schedule, double now_s, double history_s, double close_s,
            double reach_s, GapModel model, int repeat_last);

    std::size_t size() const { return length_.size(); }  // records
    GapModel model() const { return model_; }

    struct Draw {
        double remaining_s;  // the gap ends (a request arrives) this long after now
        std::int32_t record; // whose lateness a late return pays (-1: none known)
    };
    // `n` draws of the current gap at age `age_s` (Empirical: among longer past gaps,
    // uniformly; beyond the longest, a Pareto tail P(R > r) = age / (age + r)).
    void draw(double age_s, std::size_t n, std::uint64_t& rng, Draw* out) const;

    // Lateness (request-seconds) of capacity ready `overrun_s` after the arrival:
    // sum over the record's requests of (overrun - slack)^+. Record -1: one request due
    // at the arrival (no history: assume the worst).
    double lateness(std::int32_t record, double overrun_s) const;
    // A record's slacks below reach_s (ascending) with their prefix sums, for walking
    // lateness() over ordered overruns.
    struct Curve {
        const double* slacks = nullptr;
        const double* prefix = nullptr;  // prefix[m]: the sum of slacks[0..m-1]
        std::size_t count = 0;
        double weight = 1.0;
    };
    Curve curve(std::int32_t record) const {
        const auto r = static_cast<std::size_t>(record);
        return Curve{slacks_.data() + offsets_[r], prefix_.data() + offsets_[r] + r,
                     offsets_[r + 1] - offsets_[r], weight_[r]};
    }
    // lateness(record, reach_s): a forced return's, kept per record.
    double reach_lateness(std::int32_t record) const {
        return record < 0 ? reach_ : reach_lateness_[static_cast<std::size_t>(record)];
    }
    double reach() const { return reach_; }
    // The overrun from which a return is late (D - A of the record; 0 for -1).
    double slack(std::int32_t record) const {
        return record < 0 ? 0.0 : slack_min_[static_cast<std::size_t>(record)];
    }

    // Calibration of the remaining-length forecast at `age_s` against `remaining_s`:
    // the randomised PIT and the CRPS (seconds) of the forecast distribution.
    struct Score {
        double pit;
        double crps_s;
    };
    Score score(double age_s, double remaining_s, std::uint64_t& rng) const;

    // The causal windows [g, min(A + min(D - A, t_ret), next gap start)] of the records
    // (time order), each long enough to publish one quantum: the history a calendar
    // forecaster is fitted on.
    std::vector<Window> windows(double quantum_s, double return_s) const;

  private:
    void add(const UnlentSchedule& schedule, std::size_t gap, double close_s, double reach_s);
    void arrange(int repeat_last);

    GapModel model_;
    // Records in the order draws use them (Empirical: by length; Repeat: newest first).
    std::vector<double> length_;
    std::vector<double> slack_min_;
    std::vector<double> start_;                // gap starts, time order (windows())
    std::vector<double> time_arrival_;         // their arrivals
    std::vector<double> time_slack_;           // their D - A
    std::vector<double> next_start_;           // the next gap's start (time order)
    std::vector<std::size_t> offsets_{0};      // record r's slacks: [offsets_[r], offsets_[r+1])
    std::vector<double> slacks_;               // ascending within a record
    std::vector<double> prefix_;               // prefix sums per record (same layout, +1 each)
    std::vector<double> weight_;               // per record: request weight (Mean: 1 / n)
    std::vector<double> suffix_sum_;           // Empirical: sums of length_[i..]
    std::vector<double> suffix_gini_;          // Empirical: sum_{i<=j<k} (length_k - length_j)
    std::size_t repeat_ = 0;                   // Repeat: records in use
    double reach_ = 0.0;
    std::vector<double> reach_lateness_;       // per record: lateness(r, reach_)
};

// The candidate in causal mode: the finite model's work, benefit and one return path.
struct CausalCandidate {
    int work_quanta = 0;        // J
    double quantum_s = 0.0;     // delta
    double benefit_rate = 0.0;  // g, s-eq./s (0 with a schedule)
    BenefitSchedule benefit_schedule;  // g(t) by pieces, if not empty
    double horizon_s = 0.0;     // H
    double return_s = 0.0;      // t_ret
    double residency_rate = 0.0;
    double save_s = 0.0;
    double load_s = 0.0;
    double lateness_price = 0.0;  // s-eq. per late request-second
    BenefitCurve benefit;         // Phi(t_p), made by prepare()
};
// Validate (std::invalid_argument naming the field) and build the benefit curve.
CausalCandidate prepare(CausalCandidate candidate);

enum class CausalPolicy : std::uint8_t {
    Window,        // lend at once in every gap, save after every quantum, work until done
    CostedWindow,  // Window's plan, gated by its expected priced value under the forecast
    Rollout,       // Eq. 11 over the forecast: R(a) + mean_i V_i^pi0(s'), pi0 on ties
    MeanDp,        // R(a) + mean_i V_i*(s'): each sample's own optimum, averaged
    RiskRollout,   // Rollout over the plans whose return is in time with chance >= level
};
const char* name(CausalPolicy policy);
TableNeeds table_needs(CausalPolicy policy);

// What a causal decision plans (scored to the end of the gap) ...
enum class PlanKind : std::uint8_t {
    Wait,              // not now (re-decided at the next quantum boundary)
    Abandon,           // lent: return and drop the candidate
    CheckpointReturn,  // lent: save and return
    DiscardReturn,     // lent: drop unsaved work and return
    Greedy,            // Window's plan: save after every quantum until published
    Publish,           // work the rest without a save, then publish
    Advance,           // work `quanta` more quanta, then checkpoint and return
    Optimal,           // no plan: the clairvoyant's move, optimal on the known trace
};
struct CausalPlan {
    PlanKind kind = PlanKind::Wait;
    int quanta = 0;
};
const char* name(PlanKind kind);

// ... and the one step it takes now.
enum class Move : std::uint8_t { Wait, Work, Save, CheckpointReturn, DiscardReturn, Abandon };
const char* name(Move move);

// A decision point: time, the gap's start, progress and whether the GPU is lent.
struct CausalPoint {
    double t = 0.0;
    double gap_start = 0.0;
    int progress = 0;
    int durable = 0;
    bool lent = false;
};

// The forecast a decision reads: the current gap (pool) and N sampled continuations.
struct CausalForecast {
    const GapPool* pool = nullptr;
    const SampleTables* tables = nullptr;  // N = tables->sample_count()
};

// The plans' outcomes in one draw of the current gap, all but the sample's own
// continuation values: samples that drew the same past gap (one arrival) share them, so a
// decision works them out once per distinct draw (10 for 64 samples 10 s into a gap).
struct DrawOutcome {
    double remaining_s = 0.0;  // the draw they were worked out for
    double cut_reward = 0.0;   // any plan the arrival cuts short (the forced return)
    double greedy = 0.0;       // Window's plan, stop (lent: return now), checkpoint and
    double stop = 0.0;         // return, publish: rewards, the durable progress they leave
    double checkpoint = 0.0;   // (-1: terminal) and whether capacity is back in time
    double publish = 0.0;
    std::size_t late_at = 0;   // the late advances' lateness prices, by u
    int samples = 0;           // samples of this draw not yet counted for timeliness
    int greedy_durable = -1;
    int checkpoint_durable = 0;
    int publish_durable = -1;
    int most = 0;              // the largest advance done by the arrival
    int late_from = 1;         // advances late_from..most are late (none if > most)
    bool cut_timely = true;
    bool greedy_timely = true;
    bool stop_timely = true;
    bool checkpoint_timely = true;
    bool publish_timely = true;
};

// Scratch memory of decisions (reused: a decision allocates nothing once warm).
struct DecisionScratch {
    std::vector<GapPool::Draw> draws;
    std::vector<double> score;
    std::vector<double> timely;
    std::vector<double> gate;
    std::vector<double> cut;  // by u: difference arrays of the advances cut short
    std::vector<double> cut_timely;
    std::vector<double> advance;  // by u: continuations and lateness of those done
    std::vector<double> reached;  // by u: samples whose most done advance is u
    std::vector<double> late;     // by u: samples in which it is late
    std::vector<DrawOutcome> outcomes;  // by record: this decision's if stamp == epoch
    std::vector<std::uint64_t> stamp;
    std::uint64_t epoch = 0;
    std::vector<std::size_t> used;      // the records stamped in this decision
    std::vector<double> late_price;     // DrawOutcome::late_at indexes it
    std::vector<char> allowed;          // by plan: open to the policy
    std::vector<double> mean;           // by plan: its score over the N samples
};

// The policy's plan at `point` and the move it makes now. `rng` advances only for
// policies that read the forecast.
struct CausalDecision {
    CausalPlan plan;
    Move move = Move::Wait;
    // Expected scores (mean over the N samples, s-eq.) of the chosen plan and, idle, of
    // waiting: what lending now gains over waiting (a portfolio ranks candidates by it).
    // Costed Window's are its gate's, under V_G: Window's plan, or stopping (0 idle,
    // abandoning lent) when it declines. NaN for Window, which reads no forecast.
    double value = std::numeric_limits<double>::quiet_NaN();
    double wait_value = std::numeric_limits<double>::quiet_NaN();
};
CausalDecision decide(const CausalCandidate& c, const CausalPoint& point, CausalPolicy policy,
                      double return_level, const CausalForecast& forecast, std::uint64_t& rng,
                      DecisionScratch& scratch);

// The trace over one horizon: gaps that begin in [from_s, to_s) are decision stages.
class CausalSim {
  public:
    CausalSim(const UnlentSchedule& schedule, const CausalCandidate& candidate, double from_s,
              double to_s);

    bool deciding() const { return deciding_; }  // false once the horizon is over
    const CausalPoint& point() const { return point_; }
    // The moves allowed at point().
    bool allows(Move move) const;

    struct StepResult {
        double reward = 0.0;  // benefit - cost - lateness price * lateness, s-eq.
        int late_requests = 0;
        double lateness_s = 0.0;
    };
    // Take `move` (std::invalid_argument if not allowed) and run to the next decision.
    StepResult apply(Move move);

    // Continue with another candidate (a portfolio's next one) at its own progress: only
    // while not lent (std::logic_error otherwise). A run that stopped because its candidate
    // was done resumes at the next gap of the horizon; value and counts keep adding up.
    void resume(const CausalCandidate& candidate, int progress, int durable);

    // Totals so far.
    double value() const { return value_; }
    double benefit() const { return benefit_; }
    double cost() const { return cost_; }
    double lateness_s() const { return lateness_s_; }
    int late_requests() const { return late_; }
    int requests() const { return served_; }
    int handoffs() const { return handoffs_; }
    int checkpoints() const { return checkpoints_; }
    bool published() const { return published_; }
    double publish_s() const { return publish_s_; }
    // Requests with arrival <= t the scheduler has seen (the observation of a tree DP).
    std::size_t observed() const { return next_; }

    // An upper bound of the value still to come: the benefit of publishing the rest as
    // early as possible, at no cost and never late (0 once the horizon is over).
    double bound() const;

    // The state as bytes, for memoising a tree DP (equal states compare equal).
    std::vector<std::uint64_t> key() const;

  private:
    // Serve from the next arrival on with capacity ready at `ready_s`, find the next gap.
    void end_gap(double ready_s);
    // Serve queued requests until the next gap of the horizon (or its end).
    void next_gap();
    // Serve the next request FIFO, adding its lateness to pending_.
    void serve();
    double charge(double seconds) const { return (1.0 + c_.residency_rate) * seconds; }

    const UnlentSchedule* schedule_;
    CausalCandidate c_;
    double from_s_ = 0.0;
    double to_s_;
    StepResult pending_;    // the step being taken
    std::size_t next_ = 0;  // next request to arrive
    double free_ = 0.0;     // the server is busy until then
    double arrival_ = 0.0;  // the current gap's end
    CausalPoint point_;
    bool deciding_ = false;
    bool done_ = false;
    double value_ = 0.0, benefit_ = 0.0, cost_ = 0.0, lateness_s_ = 0.0, publish_s_ = 0.0;
    int late_ = 0, served_ = 0, handoffs_ = 0, checkpoints_ = 0;
    bool published_ = false;
};

// One decision of a run, for --steps.
struct CausalStep {
    CausalPoint point;
    CausalDecision decision;
    CausalSim::StepResult result;
};

struct CausalOutcome {
    double value = 0.0, benefit = 0.0, cost = 0.0, lateness_s = 0.0, publish_s = 0.0;
    int late_requests = 0, requests = 0, handoffs = 0, checkpoints = 0;
    bool published = false;
    std::vector<CausalStep> steps;
};

// Copy a finished run's totals into `out` (its steps are left as they are).
void summarize(const CausalSim& sim, CausalOutcome& out);

// Seed of the decision stream of (seed, horizon, policy): runs are reproducible and
// independent of threads.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t horizon, std::uint64_t policy);

// One policy over one horizon [from_s, to_s), deciding with `forecast`.
CausalOutcome run_causal(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                         double from_s, double to_s, CausalPolicy policy, double return_level,
                         const CausalForecast& forecast, std::uint64_t seed, bool keep_steps);

}  // namespace learnsched
