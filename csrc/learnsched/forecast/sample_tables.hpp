// Decisions when the calendar is not known: at each true window the scheduler
// knows the current window [l_k, d_k] and sees the windows after d_k only through N
// sampled calendars. Each sample's continuation tables are the exact finite model's
// (V_G, V^pi0, V*, O(K*J) each); a decision scores the current window's actions by
// R(a) + mean_i V_i(s'), the expected value over the samples.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "learnsched/finite/path_reference.hpp"
#include "learnsched/finite/policy.hpp"
#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

// One sampled calendar: sorted, non-overlapping windows (may be empty: no window).
using Calendar = std::vector<Window>;

// Largest number of samples one decision may average over.
inline constexpr std::size_t kMaxSamples = std::size_t{1} << 16;

// Largest sum over the samples of (windows + 1) x (work_quanta + 1): the samples' tables
// together may hold as many states as one Model (kMaxStates), so N samples cost at most
// the memory of one scenario at the cap, whatever N is.
inline constexpr std::size_t kMaxSampleStates = kMaxStates;

// sum_i (|samples[i]| + 1) x (work_quanta + 1), or std::invalid_argument naming the
// total and the limit as soon as it exceeds `limit` (also for work_quanta < 1). Samples
// of a two-path candidate keep each fixed path's tables too: their limit is half
// (kMaxTwoPathStates, as for one Model).
std::size_t sample_states(const std::vector<Calendar>& samples, int work_quanta,
                          std::size_t limit = kMaxSampleStates);

// The continuation tables of N sampled calendars, each built once. Tables are computed
// backwards, so the continuation after any current window is the row of the sample's
// first window that starts at or after the current window's end: fixed samples serve
// every window of a true calendar from one build.
class SampleTables {
  public:
    // `candidate`: the work, benefit and costs (its windows and initial state are not
    // used). `policies`: those decisions will be asked for (Window, CostedWindow,
    // Rollout, Dp); only the tables they need are built, on up to `threads` threads.
    // Samples equal window for window share one build (an exact forecast passes the
    // truth N times). Throws std::invalid_argument naming the field (samples[i]: ...).
    SampleTables(const Scenario& candidate, const std::vector<Calendar>& samples,
                 const std::vector<Policy>& policies, int threads);

    const Scenario& candidate() const { return candidate_; }
    int sample_count() const { return static_cast<int>(index_.size()); }
    // Tables actually built: one per distinct sample.
    int distinct_count() const { return static_cast<int>(distinct_.size()); }
    const TableNeeds& needs() const { return needs_; }

    // The row of sample i's tables after `time_s`: its first window starting at or after
    // it (its window count if none: the all-zero row). Inline: every causal decision asks
    // it once per sample.
    int row_after(std::size_t i, double time_s) const {
        const std::vector<double>& starts = distinct_[index_[i]].starts;
        // std::lower_bound without branches on the data (a conditional move per halving):
        // a decision's lookups follow random draws, which a branch predictor cannot learn.
        std::size_t count = starts.size();
        if (count == 0) return 0;
        const double* base = starts.data();
        while (count > 1) {
            const std::size_t half = count / 2;
            base = base[half] < time_s ? base + half : base;
            count -= half;
        }
        return static_cast<int>((base - starts.data()) + (*base < time_s ? 1 : 0));
    }
    // Row `row` of sample i's V_G, V^pi0 or V* (J + 1 entries by durable progress); the
    // table must have been built (needs()).
    const double* window_row(std::size_t i, int row) const {
        return distinct_[index_[i]].window.row(row);
    }
    const double* reference_row(std::size_t i, int row) const {
        return distinct_[index_[i]].reference.row(row);
    }
    const double* optimal_row(std::size_t i, int row) const {
        return distinct_[index_[i]].optimal.row(row);
    }

  private:
    friend class ForecastModel;
    struct Sample {
        std::vector<double> starts;  // window starts, for the row after a current window
        ValueTable window{0, 0};
        ValueTable reference{0, 0};
        ValueTable optimal{0, 0};
        // Two return paths: each fixed path's V_G^p and V^{CW_p} (pi0's,
        // finite/path_reference.hpp).
        std::array<ValueTable, 2> path_window{ValueTable{0, 0}, ValueTable{0, 0}};
        std::array<ValueTable, 2> path_reference{ValueTable{0, 0}, ValueTable{0, 0}};
    };
    const Sample& sample(std::size_t i) const { return distinct_[index_[i]]; }
    // Fill distinct_[slot] from `calendar`, sample `sample` (named in errors).
    void build(std::size_t slot, std::size_t sample, const Calendar& calendar);

    Scenario candidate_;
    TableNeeds needs_;
    std::vector<Sample> distinct_;
    std::vector<std::uint32_t> index_;  // sample i's tables: distinct_[index_[i]]
};

class ForecastModel {
  public:
    // `current`: the candidate's scenario restricted to what is known now, i.e. exactly
    // one window (the current one) with the candidate's work, benefit and costs (its
    // initial state is not used: decide() and take() are given the state).
    // `samples`: N >= 1 continuations, each starting at or after current's end.
    // Results do not depend on `threads`: the mean is summed in sample order.
    ForecastModel(const Scenario& current, const std::vector<Calendar>& samples,
                  const std::vector<Policy>& policies, int threads);
    // The same from prebuilt tables of full sampled calendars: each sample contributes
    // its windows starting at or after the current window's end. `tables` must be built
    // for the same candidate (std::invalid_argument otherwise).
    ForecastModel(const Scenario& current, const SampleTables& tables);

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
    std::vector<double> row(const ValueTable& table, bool built, const char* what) const;
    Action costed_window_action(const State& state) const;

    SegmentAccounting acc_;  // the current window only: row 1 of each table is the mean
    int samples_ = 0;
    TableNeeds needs_;
    ValueTable window_values_;     // mean V_G; row 0 by Window's rule on the current window
    ValueTable reference_values_;  // mean V^pi0 in row 1
    ValueTable optimal_values_;    // mean V* in row 1
    // Two return paths: per fixed path, the current window's accounting, mean V_G^p (row 0
    // by Window's rule on the current window) and mean V^{CW_p} in row 1.
    std::array<std::optional<SegmentAccounting>, 2> path_acc_;
    std::array<ValueTable, 2> path_window_values_{ValueTable{0, 0}, ValueTable{0, 0}};
    std::array<ValueTable, 2> path_reference_values_{ValueTable{0, 0}, ValueTable{0, 0}};
};

}  // namespace learnsched
