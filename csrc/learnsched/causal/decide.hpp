// Scoring: a causal policy's decision at a point, from the forecast of the current gap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "learnsched/causal/candidate.hpp"
#include "learnsched/causal/gap_pool.hpp"
#include "learnsched/causal/policy.hpp"
#include "learnsched/forecast/sample_tables.hpp"

namespace learnsched {

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

}  // namespace learnsched
