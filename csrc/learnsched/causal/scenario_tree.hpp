// The exact stochastic DP of causal scheduling over a small scenario tree.
//
// Branch b is a request trace with probability p_b; branches agree request for request up
// to where they part. A non-anticipative scheduler decides at each decision point of the
// causal model (sim.hpp) from the requests arrived so far only, so branches it cannot
// yet tell apart share its decision. The optimum over such schedulers, in expectation over
// the branches, is computed by recursion over the observation tree with memoisation: no
// causal policy does better on the tree, and with one branch it is the best schedule of
// that trace (the clairvoyant's value whenever lateness does not pay).
#pragma once

#include <cstddef>
#include <vector>

#include "learnsched/causal/run.hpp"

namespace learnsched {

// Most branches a tree may hold (they index a 64-bit set).
inline constexpr std::size_t kMaxBranches = 64;

// The expected value of the optimal non-anticipative schedule over [from_s, to_s).
// std::invalid_argument for probabilities that are not positive or do not sum to 1, or a
// branch count outside [1, kMaxBranches]; std::overflow_error past `max_nodes` distinct
// decision nodes (the tree is too large to solve exactly). With one branch and `prune`,
// moves dominated under full information are not weighed (the value is the same: tested).
double stochastic_dp(const std::vector<const UnlentSchedule*>& branches,
                     const std::vector<double>& probabilities, const CausalCandidate& candidate,
                     double from_s, double to_s, std::size_t max_nodes, bool prune = true);

// The clairvoyant of causal scheduling: the best schedule of one trace knowing all of it
// (the tree DP with one branch), under the same rules as every causal policy: its loans
// may delay later gaps, and it is late only where lateness pays at the price. The
// schedule is replayed on the trace: its value, totals and decisions.
struct ExactSchedule {
    CausalOutcome outcome;
    std::size_t nodes = 0;  // distinct decision states solved
};
ExactSchedule exact_schedule(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                             double from_s, double to_s, std::size_t max_nodes);

}  // namespace learnsched
