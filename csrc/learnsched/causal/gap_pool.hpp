// Gap forecasting: the current idle gap's remaining length from the past gaps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "learnsched/causal/trace.hpp"

namespace learnsched {

// How the current gap's remaining length is forecast.
enum class GapModel : std::uint8_t {
    Empirical,  // resample past gaps longer than the current one's age (their survival)
    Repeat,     // the last observed gaps again, one per sample
    Mean,       // every sample: the mean past gap, with the mean lateness of a late return
};
inline constexpr std::array kGapModels{GapModel::Empirical, GapModel::Repeat, GapModel::Mean};
const char* name(GapModel model);

// The records of a trace's past gaps, each scanned once: those whose arrival A is at or
// after `from_s` and that have closed by `until_s` (A + close_s <= until_s), in time order.
// Each keeps its gap length, start, the next gap's start, the least slack of its busy
// chain and its slacks below `reach_s` (ascending): what a GapPool copies, so that pools
// fitted at many times (a study's horizons, its gap models) share one scan of the trace,
// on `threads` threads (the records do not depend on it).
class GapRecords {
  public:
    GapRecords(const UnlentSchedule& schedule, double from_s, double until_s, double close_s,
               double reach_s, int threads = 1);

    std::size_t size() const { return length_.size(); }
    double from() const { return from_; }
    double until() const { return until_; }
    double close() const { return close_; }
    double reach() const { return reach_; }

  private:
    friend class GapPool;
    GapRecords(double from_s, double until_s, double close_s, double reach_s);  // none yet
    void add(const UnlentSchedule& schedule, std::size_t gap);  // the next gap's record
    void join(const GapRecords& part);                          // the records after these
    double from_, until_, close_, reach_;
    std::vector<double> length_;
    std::vector<double> arrival_;
    std::vector<double> slack_min_;  // max(0, the least slack)
    std::vector<double> start_;
    std::vector<double> next_start_;
    std::vector<std::size_t> offsets_{0};  // record r's slacks: [offsets_[r], offsets_[r+1])
    std::vector<double> slacks_;           // below reach, ascending within a record
};

// Past gaps, fitted at `now_s` on the past only: a gap enters once `close_s` seconds
// have passed since its end (its record of what a late return would cost counts the
// requests that arrived in that time) and, with `history_s`, if it ended within the last
// `history_s` seconds. Each record keeps its gap length and the slacks below `reach_s`
// (the longest overrun a decision can cause: the return path) of its busy chain.
class GapPool {
  public:
    GapPool(const UnlentSchedule& schedule, double now_s, double history_s, double close_s,
            double reach_s, GapModel model, int repeat_last);
    // The same fit from shared records (their close), which must hold every gap the fit
    // reads: records.from() <= now_s - history_s and now_s <= records.until(). Its reach
    // is `reach_s` <= records.reach() (the slacks kept; a forecast of the gap alone, such
    // as score(), reads none).
    GapPool(const GapRecords& records, double now_s, double history_s, double reach_s,
            GapModel model, int repeat_last);

    std::size_t size() const { return length_.size(); }  // records
    GapModel model() const { return model_; }

    struct Draw {
        double remaining_s;  // the gap ends (a request arrives) this long after now
        std::int32_t record; // whose lateness a late return pays (-1: none known)
    };
    // `n` draws of the current gap at age `age_s` (Empirical: among longer past gaps,
    // uniformly; beyond the longest, a Pareto tail P(R > r) = age / (age + r)).
    void draw(double age_s, std::size_t n, std::uint64_t& rng, Draw* out) const;

    // Lateness (request-seconds) of capacity ready `overrun_s` after the arrival:
    // sum over the record's requests of (overrun - slack)^+. Record -1: one request due
    // at the arrival (no history: assume the worst).
    double lateness(std::int32_t record, double overrun_s) const;
    // A record's slacks below reach_s (ascending) with their prefix sums, for walking
    // lateness() over ordered overruns.
    struct Curve {
        const double* slacks = nullptr;
        const double* prefix = nullptr;  // prefix[m]: the sum of slacks[0..m-1]
        std::size_t count = 0;
        double weight = 1.0;
    };
    Curve curve(std::int32_t record) const {
        const auto r = static_cast<std::size_t>(record);
        return Curve{slacks_.data() + offsets_[r], prefix_.data() + offsets_[r] + r,
                     offsets_[r + 1] - offsets_[r], weight_[r]};
    }
    // lateness(record, reach_s): a forced return's, kept per record.
    double reach_lateness(std::int32_t record) const {
        return record < 0 ? reach_ : reach_lateness_[static_cast<std::size_t>(record)];
    }
    double reach() const { return reach_; }
    // The overrun from which a return is late (D - A of the record; 0 for -1).
    double slack(std::int32_t record) const {
        return record < 0 ? 0.0 : slack_min_[static_cast<std::size_t>(record)];
    }

    // Calibration of the remaining-length forecast at `age_s` against `remaining_s`:
    // the randomised PIT and the CRPS (seconds) of the forecast distribution.
    struct Score {
        double pit;
        double crps_s;
    };
    Score score(double age_s, double remaining_s, std::uint64_t& rng) const;

    // The causal windows [g, min(A + min(D - A, t_ret), next gap start)] of the records
    // (time order), each long enough to publish one quantum: the history a calendar
    // forecaster is fitted on.
    std::vector<Window> windows(double quantum_s, double recovery_s) const;

  private:
    void arrange(int repeat_last);

    GapModel model_;
    // Records in the order draws use them (Empirical: by length; Repeat: newest first).
    std::vector<double> length_;
    std::vector<double> slack_min_;
    std::vector<double> start_;                // gap starts, time order (windows())
    std::vector<double> time_arrival_;         // their arrivals
    std::vector<double> time_slack_;           // their D - A
    std::vector<double> next_start_;           // the next gap's start (time order)
    std::vector<std::size_t> offsets_{0};      // record r's slacks: [offsets_[r], offsets_[r+1])
    std::vector<double> slacks_;               // ascending within a record
    std::vector<double> prefix_;               // prefix sums per record (same layout, +1 each)
    std::vector<double> weight_;               // per record: request weight (Mean: 1 / n)
    std::vector<double> suffix_sum_;           // Empirical: sums of length_[i..]
    std::vector<double> suffix_gini_;          // Empirical: sum_{i<=j<k} (length_k - length_j)
    std::size_t repeat_ = 0;                   // Repeat: records in use
    double reach_ = 0.0;
    std::vector<double> reach_lateness_;       // per record: lateness(r, reach_)
};

}  // namespace learnsched
