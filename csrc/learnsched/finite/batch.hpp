// Many scenarios x many policies at once, optionally on several threads.
#pragma once

#include <vector>

#include "learnsched/finite/model.hpp"

namespace learnsched {

// Most worker threads a batch may start: each holds one model's tables at a time
// (up to 0.5 GiB, scenario.hpp), and far more threads than cores only add memory.
inline constexpr int kMaxThreads = 1024;

// Row-major results: entry [i * policies.size() + j] is scenario i under policy j.
// Every scenario is validated before any work starts (std::invalid_argument names
// scenarios[i]; threads outside [1, kMaxThreads]). Results do not depend on `threads`
// (each scenario is independent). Policy::Guarded uses exact scores and the score-error
// bound `epsilon` (s-eq.).
std::vector<PlanSummary> solve_batch(const std::vector<Scenario>& scenarios,
                                     const std::vector<Policy>& policies, int threads,
                                     double epsilon = 0.0);

}  // namespace learnsched
