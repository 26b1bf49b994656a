// Causal portfolios: several candidates share one GPU that serves a
// request trace, under the rules of causal scheduling (causal/sim.hpp): the scheduler knows
// the arrivals up to now only, never the end of the idle gap it is in.
//
// One causal run (CausalSim) carries the trace, the loans and their lateness; the candidates
// take turns in it. At every quantum boundary of an idle gap the portfolio asks each
// unfinished candidate's causal decision (its own forecast tables) and lends the GPU to at
// most one of them; once lent, that candidate's decisions move (work, save, return) until it
// returns, publishes or is cut short by an arrival, which forces the return and pays the
// return path. One loan per gap, so a GPU works on at most one candidate in a gap (the
// portfolio's rule 1). Lateness is charged at the candidates' (shared) lateness price.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "learnsched/causal/run.hpp"

namespace learnsched {

// How an idle quantum boundary's GPU is shared out.
enum class CausalPortfolioPolicy : std::uint8_t {
    Sequential,  // one candidate at a time in list order until it publishes or abandons
    Density,     // among candidates whose decision lends now: most benefit per work second
    Gain,        // among them: the largest expected gain of lending now over waiting
};
inline constexpr std::array kCausalPortfolioPolicies{
    CausalPortfolioPolicy::Sequential, CausalPortfolioPolicy::Density, CausalPortfolioPolicy::Gain};
const char* name(CausalPortfolioPolicy policy);

// One decision: at time t, the candidate the GPU is held for (-1: none, waiting) and the
// move taken.
struct CausalPortfolioStep {
    double t = 0.0;
    int candidate = -1;
    Move move = Move::Wait;
};

struct CausalPortfolioOutcome {
    double value = 0.0, benefit = 0.0, cost = 0.0, lateness_s = 0.0;
    double gpu_s = 0.0;  // lent seconds (load, work, save, return): cost / (1 + rho)
    int late_requests = 0, requests = 0, handoffs = 0, checkpoints = 0;
    std::vector<double> publish_s;  // per candidate, seconds; NaN: not published
    std::vector<int> loans;         // per candidate: gaps lent to it
    std::vector<CausalPortfolioStep> steps;
};

// The portfolio over the horizon [from_s, to_s) of `schedule`: candidate c decides by
// `policy` with forecasts[c] (null parts for Window), starting from durable progress
// durable[c] (idle); `seed` seeds the one stream of gap draws that every decision reads.
// Candidates must share the return path (recovery_s, residency_rate) and the lateness price.
// Gain needs a policy that reads a forecast. std::invalid_argument on bad input.
CausalPortfolioOutcome run_portfolio_causal(const UnlentSchedule& schedule,
                                            const std::vector<CausalCandidate>& candidates,
                                            const std::vector<int>& durable,
                                            const std::vector<CausalForecast>& forecasts,
                                            double from_s, double to_s,
                                            CausalPortfolioPolicy portfolio_policy,
                                            CausalPolicy policy, double return_level,
                                            std::uint64_t seed);

}  // namespace learnsched
