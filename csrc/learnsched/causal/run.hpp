// Runs: one causal policy over one horizon of a trace, deciding at every point.
#pragma once

#include <cstdint>
#include <vector>

#include "learnsched/causal/decide.hpp"
#include "learnsched/causal/sim.hpp"

namespace learnsched {

// One decision of a run, for --steps.
struct CausalStep {
    CausalPoint point;
    CausalDecision decision;
    CausalSim::StepResult result;
};

struct CausalOutcome {
    double value = 0.0, benefit = 0.0, cost = 0.0, lateness_s = 0.0, publish_s = 0.0;
    double lent_s = 0.0;  // seconds the GPU was lent
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
