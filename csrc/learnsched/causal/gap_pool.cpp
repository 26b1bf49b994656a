#include "learnsched/causal/gap_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"
#include "learnsched/parallel.hpp"
#include "learnsched/causal/random.hpp"

namespace learnsched {

const char* name(GapModel model) {
    switch (model) {
        case GapModel::Empirical: return "empirical";
        case GapModel::Repeat: return "repeat";
        case GapModel::Mean: return "mean";
    }
    return "unknown";
}

namespace {

std::size_t below(std::uint64_t& state, std::size_t n) {  // [0, n), n >= 1
    return std::min(n - 1, static_cast<std::size_t>(uniform(state) * static_cast<double>(n)));
}

// Pareto tail beyond the longest past gap: P(R > r) = x / (x + r) at age x.
double pareto_remaining(double age_s, std::uint64_t& rng) {
    const double u = uniform(rng);
    return age_s * u / (1.0 - u);
}

void check_fit(double now_s, double history_s) {
    if (!std::isfinite(now_s)) throw std::invalid_argument("now_s must be finite");
    if (!(history_s > 0.0)) {
        throw std::invalid_argument("history_s must be > 0, got " + std::to_string(history_s));
    }
}

// The records a fit at now_s over history_s reads, scanned for it alone.
GapRecords fit_records(const UnlentSchedule& schedule, double now_s, double history_s,
                       double close_s, double reach_s) {
    check_fit(now_s, history_s);
    return GapRecords(schedule, now_s - history_s, now_s, close_s, reach_s);
}

// The first of gaps [0, n) at which `past` holds (it holds from some gap on).
template <class Past>
std::size_t first_gap(std::size_t n, Past past) {
    std::size_t lo = 0, hi = n;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (past(mid)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

}  // namespace

GapRecords::GapRecords(const UnlentSchedule& schedule, double from_s, double until_s,
                       double close_s, double reach_s, int threads)
    : GapRecords(from_s, until_s, close_s, reach_s) {
    if (std::isnan(from_s)) throw std::invalid_argument("from_s must not be NaN");
    if (!std::isfinite(until_s)) throw std::invalid_argument("until_s must be finite");
    if (!(close_s >= 0.0) || !std::isfinite(close_s)) {
        throw std::invalid_argument("close_s must be finite and >= 0, got " +
                                    std::to_string(close_s));
    }
    if (!(reach_s >= 0.0) || !std::isfinite(reach_s)) {
        throw std::invalid_argument("reach_s must be finite and >= 0, got " +
                                    std::to_string(reach_s));
    }
    if (threads < 1) {
        throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
    }
    // Gaps are in time order: those arriving from from_s on and closed by until_s are a run.
    const std::size_t n = schedule.gap_count();
    const std::size_t last = first_gap(
        n, [&](std::size_t j) { return schedule.gap_arrival(j) + close_s > until_s; });
    const std::size_t first = std::min(
        last, first_gap(n, [&](std::size_t j) { return !(schedule.gap_arrival(j) < from_s); }));
    const std::size_t count = last - first;
    const std::size_t parts =
        std::min(static_cast<std::size_t>(threads), std::max<std::size_t>(count, 1));
    if (parts == 1) {
        for (std::size_t j = first; j < last; ++j) add(schedule, j);
        return;
    }
    // Contiguous parts scanned on their own threads, joined in time order.
    std::vector<GapRecords> part(parts, GapRecords(from_s, until_s, close_s, reach_s));
    run_blocks(parts, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t p = begin; p < end; ++p) {
            for (std::size_t j = first + count * p / parts; j < first + count * (p + 1) / parts;
                 ++j) {
                part[p].add(schedule, j);
            }
        }
    });
    std::size_t slacks = 0;
    for (const GapRecords& p : part) slacks += p.slacks_.size();
    slacks_.reserve(slacks);
    for (GapRecords& p : part) {
        join(p);
        p = GapRecords(from_s, until_s, close_s, reach_s);  // its memory back at once
    }
}

GapRecords::GapRecords(double from_s, double until_s, double close_s, double reach_s)
    : from_(from_s), until_(until_s), close_(close_s), reach_(reach_s) {}

void GapRecords::add(const UnlentSchedule& schedule, std::size_t gap) {
    const RequestTrace& trace = schedule.trace();
    const double arrival = schedule.gap_arrival(gap);
    const std::size_t begin = slacks_.size();
    double least = kInf;
    for (std::size_t i = schedule.gap_first(gap);
         i < trace.size() && trace.arrival[i] <= arrival + close_; ++i) {
        const double s = schedule.slack(gap, i);
        least = std::min(least, s);
        if (s < reach_) slacks_.push_back(s);
    }
    std::sort(slacks_.begin() + static_cast<std::ptrdiff_t>(begin), slacks_.end());
    offsets_.push_back(slacks_.size());
    length_.push_back(arrival - schedule.gap_start(gap));
    arrival_.push_back(arrival);
    slack_min_.push_back(std::max(0.0, least));
    start_.push_back(schedule.gap_start(gap));
    next_start_.push_back(gap + 1 < schedule.gap_count() ? schedule.gap_start(gap + 1) : kInf);
}

void GapRecords::join(const GapRecords& part) {
    const std::size_t base = slacks_.size();
    slacks_.insert(slacks_.end(), part.slacks_.begin(), part.slacks_.end());
    for (std::size_t r = 1; r < part.offsets_.size(); ++r) {
        offsets_.push_back(base + part.offsets_[r]);
    }
    const auto append = [](std::vector<double>& to, const std::vector<double>& from) {
        to.insert(to.end(), from.begin(), from.end());
    };
    append(length_, part.length_);
    append(arrival_, part.arrival_);
    append(slack_min_, part.slack_min_);
    append(start_, part.start_);
    append(next_start_, part.next_start_);
}

GapPool::GapPool(const UnlentSchedule& schedule, double now_s, double history_s, double close_s,
                 double reach_s, GapModel model, int repeat_last)
    : GapPool(fit_records(schedule, now_s, history_s, close_s, reach_s), now_s, history_s,
              reach_s, model, repeat_last) {}

GapPool::GapPool(const GapRecords& records, double now_s, double history_s, double reach_s,
                 GapModel model, int repeat_last)
    : model_(model), reach_(reach_s) {
    check_fit(now_s, history_s);
    if (!(reach_s >= 0.0 && reach_s <= records.reach())) {
        throw std::invalid_argument("reach_s must be in [0, the records' reach " +
                                    std::to_string(records.reach()) + "], got " +
                                    std::to_string(reach_s));
    }
    if (repeat_last < 1) {
        throw std::invalid_argument("repeat_last must be >= 1, got " + std::to_string(repeat_last));
    }
    const double from = now_s - history_s;
    if (!(records.from() <= from && now_s <= records.until())) {
        throw std::invalid_argument(
            "a fit at now_s = " + std::to_string(now_s) + " over history_s = " +
            std::to_string(history_s) + " reads gaps outside the records (arrivals from " +
            std::to_string(records.from()) + ", closed by " + std::to_string(records.until()) +
            ")");
    }
    // The gaps with from <= A and A + close_s <= now_s: a run of the records.
    const std::vector<double>& arrival = records.arrival_;
    const auto lo = std::lower_bound(arrival.begin(), arrival.end(), from);
    const auto hi = std::partition_point(
        lo, arrival.end(), [&](double a) { return a + records.close() <= now_s; });
    const auto first = static_cast<std::size_t>(lo - arrival.begin());
    const auto last = static_cast<std::size_t>(hi - arrival.begin());
    const auto copy = [&](const std::vector<double>& v, std::vector<double>& out) {
        out.assign(v.begin() + static_cast<std::ptrdiff_t>(first),
                   v.begin() + static_cast<std::ptrdiff_t>(last));
    };
    copy(records.length_, length_);
    copy(records.slack_min_, slack_min_);
    copy(records.start_, start_);
    copy(records.next_start_, next_start_);
    weight_.assign(length_.size(), 1.0);
    const double* slacks = records.slacks_.data();
    for (std::size_t r = first; r < last; ++r) {  // each record's slacks below reach_s
        const double* begin = slacks + records.offsets_[r];
        const double* end = slacks + records.offsets_[r + 1];
        slacks_.insert(slacks_.end(), begin, std::lower_bound(begin, end, reach_s));
        offsets_.push_back(slacks_.size());
    }
    arrange(repeat_last);
    reach_lateness_.resize(length_.size());
    for (std::size_t r = 0; r < length_.size(); ++r) {
        reach_lateness_[r] = lateness(static_cast<std::int32_t>(r), reach_s);
    }
}

void GapPool::arrange(int repeat_last) {
    const std::size_t n = length_.size();
    // Windows in time order, before the records are reordered for drawing.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (model_ == GapModel::Empirical) {
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return length_[a] < length_[b]; });
    } else if (model_ == GapModel::Repeat) {
        std::reverse(order.begin(), order.end());  // newest first
        repeat_ = std::min(n, static_cast<std::size_t>(repeat_last));
    }
    const auto permute = [&](std::vector<double>& v) {
        std::vector<double> out(n);
        for (std::size_t r = 0; r < n; ++r) out[r] = v[order[r]];
        v.swap(out);
    };
    std::vector<double> times = start_;  // time order kept for windows()
    std::vector<double> arrival(n), least = slack_min_;
    for (std::size_t r = 0; r < n; ++r) arrival[r] = start_[r] + length_[r];
    std::vector<double> slacks;
    std::vector<std::size_t> offsets{0};
    slacks.reserve(slacks_.size());
    for (std::size_t r = 0; r < n; ++r) {
        const std::size_t j = order[r];
        slacks.insert(slacks.end(), slacks_.begin() + static_cast<std::ptrdiff_t>(offsets_[j]),
                      slacks_.begin() + static_cast<std::ptrdiff_t>(offsets_[j + 1]));
        offsets.push_back(slacks.size());
    }
    permute(length_);
    permute(slack_min_);
    permute(weight_);
    slacks_.swap(slacks);
    offsets_.swap(offsets);
    if (model_ == GapModel::Mean && n > 0) {
        // One record: the mean gap, and every request of every gap at weight 1/n (the
        // mean lateness of a late return).
        double sum = 0.0;
        for (const double g : length_) sum += g;
        std::vector<double> pooled = slacks_;
        std::sort(pooled.begin(), pooled.end());
        const double least_all = *std::min_element(slack_min_.begin(), slack_min_.end());
        length_.assign(1, sum / static_cast<double>(n));
        slack_min_.assign(1, least_all);
        weight_.assign(1, 1.0 / static_cast<double>(n));
        slacks_.swap(pooled);
        offsets_.assign({0, slacks_.size()});
    }
    prefix_.assign(slacks_.size() + offsets_.size(), 0.0);
    for (std::size_t r = 0; r + 1 < offsets_.size(); ++r) {
        double running = 0.0;
        const std::size_t base = offsets_[r] + r;  // one leading zero per record
        prefix_[base] = 0.0;
        for (std::size_t m = offsets_[r]; m < offsets_[r + 1]; ++m) {
            running += slacks_[m];
            prefix_[base + (m - offsets_[r]) + 1] = running;
        }
    }
    if (model_ == GapModel::Empirical) {
        suffix_sum_.assign(n + 1, 0.0);
        suffix_gini_.assign(n + 1, 0.0);
        for (std::size_t i = n; i-- > 0;) {
            suffix_sum_[i] = suffix_sum_[i + 1] + length_[i];
            // sum_{i<=j<k} (L_k - L_j) = sum over i < k of (L_k - L_i) + the rest
            suffix_gini_[i] = suffix_gini_[i + 1] +
                              (suffix_sum_[i + 1] - static_cast<double>(n - 1 - i) * length_[i]);
        }
    }
    // windows(): keep the time-ordered starts, arrivals and slacks.
    start_.swap(times);
    time_arrival_.swap(arrival);
    time_slack_.swap(least);
}

void GapPool::draw(double age_s, std::size_t n, std::uint64_t& rng, Draw* out) const {
    const std::size_t records = length_.size();
    if (records == 0) {  // no history: the Pareto tail from the age alone
        for (std::size_t i = 0; i < n; ++i) out[i] = Draw{pareto_remaining(age_s, rng), -1};
        return;
    }
    switch (model_) {
        case GapModel::Empirical: {
            const std::size_t from = static_cast<std::size_t>(
                std::upper_bound(length_.begin(), length_.end(), age_s) - length_.begin());
            for (std::size_t i = 0; i < n; ++i) {
                if (from == records) {  // older than every past gap
                    out[i] = Draw{pareto_remaining(age_s, rng),
                                  static_cast<std::int32_t>(records - 1)};
                } else {
                    const std::size_t r = from + below(rng, records - from);
                    out[i] = Draw{length_[r] - age_s, static_cast<std::int32_t>(r)};
                }
            }
            return;
        }
        case GapModel::Repeat:
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t r = i % repeat_;
                out[i] = Draw{std::max(0.0, length_[r] - age_s), static_cast<std::int32_t>(r)};
            }
            return;
        case GapModel::Mean:
            for (std::size_t i = 0; i < n; ++i) out[i] = Draw{std::max(0.0, length_[0] - age_s), 0};
            return;
    }
}

double GapPool::lateness(std::int32_t record, double overrun_s) const {
    if (record < 0) return std::max(0.0, overrun_s);
    const auto r = static_cast<std::size_t>(record);
    if (!(overrun_s > slack_min_[r])) return 0.0;
    const double* begin = slacks_.data() + offsets_[r];
    const double* end = slacks_.data() + offsets_[r + 1];
    const std::size_t m = static_cast<std::size_t>(std::lower_bound(begin, end, overrun_s) - begin);
    const double below_sum = prefix_[offsets_[r] + r + m];
    return weight_[r] * (static_cast<double>(m) * overrun_s - below_sum);
}

GapPool::Score GapPool::score(double age_s, double remaining_s, std::uint64_t& rng) const {
    const double u = uniform(rng);
    const double y = remaining_s;
    const std::size_t records = length_.size();
    // Pareto tail at age x: F(r) = r / (x + r); CRPS = y + x - 2x ln(1 + y/x).
    const auto pareto = [&](double x) {
        if (!(x > 0.0)) return Score{y > 0.0 ? 1.0 : u, y};
        return Score{y / (x + y), y + x - 2.0 * x * std::log1p(y / x)};
    };
    if (records == 0) return pareto(age_s);
    // An empirical forecast over values v (ascending): randomised PIT and CRPS.
    const auto empirical = [&](const std::vector<double>& v) {
        const double m = static_cast<double>(v.size());
        const double lo = static_cast<double>(std::lower_bound(v.begin(), v.end(), y) - v.begin());
        const double hi = static_cast<double>(std::upper_bound(v.begin(), v.end(), y) - v.begin());
        double spread = 0.0, gini = 0.0;
        for (std::size_t k = 0; k < v.size(); ++k) {
            spread += std::abs(v[k] - y);
            gini += (2.0 * static_cast<double>(k) + 1.0 - m) * v[k];
        }
        return Score{(lo + u * (hi - lo)) / m, spread / m - gini / (m * m)};
    };
    switch (model_) {
        case GapModel::Empirical: {
            const std::size_t from = static_cast<std::size_t>(
                std::upper_bound(length_.begin(), length_.end(), age_s) - length_.begin());
            if (from == records) return pareto(age_s);
            const double m = static_cast<double>(records - from);
            const double cut = age_s + y;  // remaining <= y  <=>  length <= age + y
            const std::size_t lo = static_cast<std::size_t>(
                std::lower_bound(length_.begin() + static_cast<std::ptrdiff_t>(from),
                                 length_.end(), cut) - length_.begin());
            const std::size_t hi = static_cast<std::size_t>(
                std::upper_bound(length_.begin() + static_cast<std::ptrdiff_t>(lo),
                                 length_.end(), cut) - length_.begin());
            const double below_count = static_cast<double>(lo - from);
            const double at_count = static_cast<double>(hi - lo);
            // E|R - y| over the suffix, split at `lo`, from the suffix sums.
            const double near = below_count * cut - (suffix_sum_[from] - suffix_sum_[lo]);
            const double far = suffix_sum_[lo] - static_cast<double>(records - lo) * cut;
            const double spread = (near + far) / m;
            return Score{(below_count + u * at_count) / m, spread - suffix_gini_[from] / (m * m)};
        }
        case GapModel::Repeat: {
            std::vector<double> v(repeat_);
            for (std::size_t r = 0; r < repeat_; ++r) v[r] = std::max(0.0, length_[r] - age_s);
            std::sort(v.begin(), v.end());
            return empirical(v);
        }
        case GapModel::Mean:
            return empirical(std::vector<double>{std::max(0.0, length_[0] - age_s)});
    }
    return Score{u, 0.0};
}

std::vector<Window> GapPool::windows(double quantum_s, double recovery_s) const {
    std::vector<Window> out;
    for (std::size_t r = 0; r < start_.size(); ++r) {
        const double start = start_[r];
        const double end = std::min(time_arrival_[r] + std::min(time_slack_[r], recovery_s),
                                    next_start_[r]);
        if (fits_within(quantum_s + recovery_s, start, end)) out.push_back(Window{start, end});
    }
    return out;
}

}  // namespace learnsched
