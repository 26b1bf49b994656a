// Causal scheduling on a request trace: the scheduler knows the arrivals up to
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
#include <memory>
#include <vector>

#include "learnsched/causal/candidate.hpp"
#include "learnsched/causal/policy.hpp"
#include "learnsched/causal/trace.hpp"

namespace learnsched {

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
    double lent_s() const { return lent_s_; }  // seconds the GPU was lent (load to ready)
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
    // Serve queued requests (with `serve_arrival`, the one that ended a gap first) until
    // the next gap of the horizon (or its end).
    void next_gap(bool serve_arrival = false);
    double charge(double seconds) const { return (1.0 + c_->residency_rate) * seconds; }
    // `seconds` more lent, at the finite model's price.
    void spend(double seconds) {
        lent_s_ += seconds;
        cost_ += charge(seconds);
    }

    const UnlentSchedule* schedule_;
    // Shared, read only: a tree DP copies the simulator at every move it weighs.
    std::shared_ptr<const CausalCandidate> c_;
    double from_s_ = 0.0;
    double to_s_;
    StepResult pending_;    // the step being taken
    std::size_t next_ = 0;  // next request to arrive
    double free_ = 0.0;     // the server is busy until then
    double arrival_ = 0.0;  // the current gap's end
    CausalPoint point_;
    bool deciding_ = false;
    bool done_ = false;
    double value_ = 0.0, benefit_ = 0.0, cost_ = 0.0, lent_s_ = 0.0, lateness_s_ = 0.0;
    double publish_s_ = 0.0;
    int late_ = 0, served_ = 0, handoffs_ = 0, checkpoints_ = 0;
    bool published_ = false;
};

}  // namespace learnsched
