// Online evaluation under fixed sampled calendars: at every true window the
// scheduler knows the current window and scores its actions against the samples'
// continuations; the action is taken on the true window, so Eq. 10 holds on the truth.
#pragma once

#include <vector>

#include "learnsched/forecast/sample_tables.hpp"
#include "learnsched/finite/model.hpp"

namespace learnsched {

// One plan per policy of `policies` (Window, CostedWindow, Rollout, Dp under the forecast),
// re-planning at every window of `truth` with the continuations of `tables` (built for
// `truth`'s candidate), then the clairvoyant: the exact DP on `truth`. Segments carry the
// true window index; a plan's value sums its segments' rewards in order, as Model::solve.
// std::invalid_argument for an invalid scenario or tables of another candidate.
std::vector<Plan> run_online(const Scenario& truth, const SampleTables& tables,
                             const std::vector<Policy>& policies);

}  // namespace learnsched
