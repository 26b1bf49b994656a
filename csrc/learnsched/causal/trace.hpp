// The request trace of causal scheduling (the model: sim.hpp) served with nothing lent,
// and its idle gaps.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <vector>

#include "learnsched/finite/scenario.hpp"
#include "learnsched/finite/tolerance.hpp"

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
                                   double quantum_s, double recovery_s, bool overlap);

// A step ending at `end_s` is done by the arrival (Eq. 10's slack: a few ulps of the times).
inline bool by_arrival(double end_s, double arrival_s) {
    return end_s <= arrival_s + kTieTolerance + 16 * DBL_EPSILON * std::abs(arrival_s);
}

}  // namespace learnsched
