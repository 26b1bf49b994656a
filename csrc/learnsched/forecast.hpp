// Decisions when the calendar is not known (issue 9): at each true window the scheduler
// knows the current window [l_k, d_k] and sees the windows after d_k only through N
// sampled calendars. Each sample's continuation tables are the exact finite model's
// (V_G, V^pi0, V*, O(K*J) each); a decision scores the current window's actions by
// R(a) + mean_i V_i(s'), the expected value over the samples.
#pragma once

#include <vector>

#include "policy.hpp"
#include "segment.hpp"
#include "value_table.hpp"

namespace learnsched {

// One sampled continuation: the windows after the current window's end, sorted and
// non-overlapping (may be empty: no further window).
using Calendar = std::vector<Window>;

// Largest number of samples one decision may average over.
inline constexpr std::size_t kMaxSamples = std::size_t{1} << 16;

class ForecastModel {
  public:
    // `current`: the candidate's scenario restricted to what is known now, i.e. exactly
    // one window (the current one) with the candidate's work, benefit and costs (its
    // initial state is not used: decide() and take() are given the state).
    // `samples`: N >= 1 continuations, each starting at or after current's end.
    // `policies`: the policies decide() will be asked for (Window, CostedWindow, Rollout,
    // Dp); only the tables they need are built, on up to `threads` threads. Results do
    // not depend on `threads`: the mean is summed in sample order.
    // Throws std::invalid_argument naming the field (samples[i]: ...) of bad input.
    ForecastModel(Scenario current, const std::vector<Calendar>& samples,
                  const std::vector<Policy>& policies, int threads);

    const Scenario& scenario() const { return acc_.scenario(); }
    int sample_count() const { return samples_; }

    // The policy's action in `state` (window 0: the current window). Window needs no
    // forecast; CostedWindow gates Window by the mean V_G over the samples; Rollout
    // scores every feasible action by R(a) + mean_i V_i^pi0(s') keeping pi0's on ties
    // (Eq. 11); Dp takes the first action maximising R(a) + mean_i V_i*(s') (Eq. D.2).
    Action decide(const State& state, Policy policy) const;

    // The segment `action` makes of the current window from `state` (its true reward,
    // timeline and successor); std::invalid_argument unless the action is feasible (Eq. 10).
    Segment take(const State& state, const Action& action) const;

    // Mean continuation values after the current window, one per durable progress
    // 0..J (s-eq.); std::invalid_argument if no requested policy needed that table.
    std::vector<double> mean_window_plan_values() const;  // mean_i V_G,i
    std::vector<double> mean_reference_values() const;    // mean_i V_i^pi0
    std::vector<double> mean_optimal_values() const;      // mean_i V_i*

  private:
    struct Needs {
        bool window = false;
        bool reference = false;
        bool optimal = false;
    };
    static Needs needs_of(const std::vector<Policy>& policies);
    void fill_means(const std::vector<Calendar>& samples, int threads);
    std::vector<double> row(const ValueTable& table, bool built, const char* what) const;

    SegmentAccounting acc_;  // the current window only: row 1 of each table is the mean
    int samples_ = 0;
    Needs needs_;
    ValueTable window_values_;     // mean V_G; row 0 by Window's rule on the current window
    ValueTable reference_values_;  // mean V^pi0 in row 1
    ValueTable optimal_values_;    // mean V* in row 1
};

}  // namespace learnsched
