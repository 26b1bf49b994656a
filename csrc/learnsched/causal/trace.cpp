#include "learnsched/causal/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"

namespace learnsched {

namespace {

std::string at(const char* field, std::size_t i) {
    return std::string(field) + "[" + std::to_string(i) + "]";
}

}  // namespace

UnlentSchedule::UnlentSchedule(RequestTrace trace) : trace_(std::move(trace)) {
    const std::size_t n = trace_.size();
    if (trace_.service.size() != n || trace_.deadline.size() != n) {
        throw std::invalid_argument("arrival, service and deadline must have one entry per request");
    }
    if (n == 0) throw std::invalid_argument("the trace holds no requests");
    finish_.resize(n);
    served_.assign(n + 1, 0.0);
    double free = -kInf;
    for (std::size_t i = 0; i < n; ++i) {
        const double a = trace_.arrival[i];
        const double s = trace_.service[i];
        const double d = trace_.deadline[i];
        if (!std::isfinite(a) || !std::isfinite(s) || !std::isfinite(d)) {
            throw std::invalid_argument("request " + std::to_string(i) + ": arrival, service and "
                                        "deadline must be finite");
        }
        if (i > 0 && a < trace_.arrival[i - 1]) {
            throw std::invalid_argument(at("arrival", i) + " = " + std::to_string(a) +
                                        " is earlier than the request before it");
        }
        if (!(s > 0.0)) {
            throw std::invalid_argument(at("service", i) + " must be > 0, got " +
                                        std::to_string(s));
        }
        if (d < a) {
            throw std::invalid_argument(at("deadline", i) + " = " + std::to_string(d) +
                                        " is before its arrival " + std::to_string(a));
        }
        if (i > 0 && a > free) {  // the queue emptied at `free`: a gap until this arrival
            start_.push_back(free);
            first_.push_back(i);
        }
        free = std::max(a, free) + s;
        finish_[i] = free;
        served_[i + 1] = served_[i] + s;
        if (free > d + kLateToleranceS) {
            throw std::invalid_argument("the trace misses " + at("deadline", i) + " = " +
                                        std::to_string(d) + " even with nothing lent (raise "
                                        "the rate or the latency budget)");
        }
    }
    // D_j = S_{f-1} + min_{i >= f} (d_i - S_i): the earliest e_i of the gap's future.
    std::vector<double> suffix_min(n + 1, kInf);
    for (std::size_t i = n; i-- > 0;) {
        suffix_min[i] = std::min(suffix_min[i + 1], trace_.deadline[i] - served_[i + 1]);
    }
    deadline_.resize(first_.size());
    for (std::size_t j = 0; j < first_.size(); ++j) {
        deadline_[j] = std::max(gap_arrival(j), served_[first_[j]] + suffix_min[first_[j]]);
    }
}

std::size_t UnlentSchedule::first_gap_from(double t) const {
    return static_cast<std::size_t>(std::lower_bound(start_.begin(), start_.end(), t) -
                                    start_.begin());
}

std::vector<Window> causal_windows(const UnlentSchedule& schedule, double from_s, double to_s,
                                   double quantum_s, double recovery_s, bool overlap) {
    std::vector<Window> out;
    for (std::size_t j = schedule.first_gap_from(from_s);
         j < schedule.gap_count() && schedule.gap_start(j) < to_s; ++j) {
        const double start = schedule.gap_start(j);
        double end = schedule.gap_arrival(j);
        if (overlap) {  // the return may run into the arrival, up to D and the next gap
            const double next = j + 1 < schedule.gap_count() ? schedule.gap_start(j + 1) : kInf;
            end = std::min({schedule.gap_deadline(j), end + recovery_s, next});
        }
        // Publishing one quantum needs delta + t_ret (Eq. 10): shorter gaps only wait.
        if (fits_within(quantum_s + recovery_s, start, end)) out.push_back(Window{start, end});
    }
    return out;
}

}  // namespace learnsched
