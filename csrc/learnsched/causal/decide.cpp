#include "learnsched/causal/sim.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/finite/tolerance.hpp"

namespace learnsched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string at(const char* field, std::size_t i) {
    return std::string(field) + "[" + std::to_string(i) + "]";
}

// A step ending at `end_s` is done by the arrival (Eq. 10's slack: a few ulps of the times).
bool by_arrival(double end_s, double arrival_s) {
    return end_s <= arrival_s + kTieTolerance + 16 * DBL_EPSILON * std::abs(arrival_s);
}

// SplitMix64: a tiny, fully specified generator (std::uniform_*_distribution is not).
std::uint64_t next_u64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double uniform(std::uint64_t& state) {  // [0, 1)
    return static_cast<double>(next_u64(state) >> 11) * 0x1.0p-53;
}

std::size_t below(std::uint64_t& state, std::size_t n) {  // [0, n), n >= 1
    return std::min(n - 1, static_cast<std::size_t>(uniform(state) * static_cast<double>(n)));
}

// Pareto tail beyond the longest past gap: P(R > r) = x / (x + r) at age x.
double pareto_remaining(double age_s, std::uint64_t& rng) {
    const double u = uniform(rng);
    return age_s * u / (1.0 - u);
}

}  // namespace

// --- the trace served unlent ----------------------------------------------------------------

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
                                   double quantum_s, double return_s, bool overlap) {
    std::vector<Window> out;
    for (std::size_t j = schedule.first_gap_from(from_s);
         j < schedule.gap_count() && schedule.gap_start(j) < to_s; ++j) {
        const double start = schedule.gap_start(j);
        double end = schedule.gap_arrival(j);
        if (overlap) {  // the return may run into the arrival, up to D and the next gap
            const double next = j + 1 < schedule.gap_count() ? schedule.gap_start(j + 1) : kInf;
            end = std::min({schedule.gap_deadline(j), end + return_s, next});
        }
        // Publishing one quantum needs delta + t_ret (Eq. 10): shorter gaps only wait.
        if (fits_within(quantum_s + return_s, start, end)) out.push_back(Window{start, end});
    }
    return out;
}

// --- the pool of past gaps ------------------------------------------------------------------

GapPool::GapPool(const UnlentSchedule& schedule, double now_s, double history_s, double close_s,
                 double reach_s, GapModel model, int repeat_last)
    : model_(model), reach_(reach_s) {
    if (!std::isfinite(now_s)) throw std::invalid_argument("now_s must be finite");
    if (!(history_s > 0.0)) {
        throw std::invalid_argument("history_s must be > 0, got " + std::to_string(history_s));
    }
    if (!(close_s >= 0.0) || !std::isfinite(close_s)) {
        throw std::invalid_argument("close_s must be finite and >= 0, got " +
                                    std::to_string(close_s));
    }
    if (!(reach_s >= 0.0) || !std::isfinite(reach_s)) {
        throw std::invalid_argument("reach_s must be finite and >= 0, got " +
                                    std::to_string(reach_s));
    }
    if (repeat_last < 1) {
        throw std::invalid_argument("repeat_last must be >= 1, got " + std::to_string(repeat_last));
    }
    for (std::size_t j = 0; j < schedule.gap_count(); ++j) {
        const double arrival = schedule.gap_arrival(j);
        if (arrival + close_s > now_s) break;  // not closed yet (gaps are in time order)
        if (arrival < now_s - history_s) continue;
        add(schedule, j, close_s, reach_s);
    }
    arrange(repeat_last);
    reach_lateness_.resize(length_.size());
    for (std::size_t r = 0; r < length_.size(); ++r) {
        reach_lateness_[r] = lateness(static_cast<std::int32_t>(r), reach_s);
    }
}

void GapPool::add(const UnlentSchedule& schedule, std::size_t gap, double close_s,
                  double reach_s) {
    const RequestTrace& trace = schedule.trace();
    const double arrival = schedule.gap_arrival(gap);
    const std::size_t begin = slacks_.size();
    double least = kInf;
    for (std::size_t i = schedule.gap_first(gap);
         i < trace.size() && trace.arrival[i] <= arrival + close_s; ++i) {
        const double s = schedule.slack(gap, i);
        least = std::min(least, s);
        if (s < reach_s) slacks_.push_back(s);
    }
    std::sort(slacks_.begin() + static_cast<std::ptrdiff_t>(begin), slacks_.end());
    offsets_.push_back(slacks_.size());
    length_.push_back(arrival - schedule.gap_start(gap));
    slack_min_.push_back(std::max(0.0, least));
    start_.push_back(schedule.gap_start(gap));
    next_start_.push_back(gap + 1 < schedule.gap_count() ? schedule.gap_start(gap + 1) : kInf);
    weight_.push_back(1.0);
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

std::vector<Window> GapPool::windows(double quantum_s, double return_s) const {
    std::vector<Window> out;
    for (std::size_t r = 0; r < start_.size(); ++r) {
        const double start = start_[r];
        const double end = std::min(time_arrival_[r] + std::min(time_slack_[r], return_s),
                                    next_start_[r]);
        if (fits_within(quantum_s + return_s, start, end)) out.push_back(Window{start, end});
    }
    return out;
}

// --- candidates, policies, names --------------------------------------------------------------

CausalCandidate prepare(CausalCandidate c) {
    const auto finite_nonnegative = [](const char* field, double v) {
        if (!std::isfinite(v) || v < 0.0) {
            throw std::invalid_argument(std::string(field) + " must be finite and >= 0, got " +
                                        std::to_string(v));
        }
    };
    if (c.work_quanta < 1) {
        throw std::invalid_argument("work_quanta must be >= 1, got " +
                                    std::to_string(c.work_quanta));
    }
    if (!std::isfinite(c.quantum_s) || !(c.quantum_s > 0.0)) {
        throw std::invalid_argument("quantum_s must be finite and > 0, got " +
                                    std::to_string(c.quantum_s));
    }
    finite_nonnegative("return_s", c.return_s);
    finite_nonnegative("residency_rate", c.residency_rate);
    finite_nonnegative("save_s", c.save_s);
    finite_nonnegative("load_s", c.load_s);
    finite_nonnegative("lateness_price", c.lateness_price);
    Scenario benefit;  // the finite model's benefit rules, checked by its own validation
    benefit.benefit_rate = c.benefit_rate;
    benefit.benefit_schedule = c.benefit_schedule;
    benefit.horizon_s = c.horizon_s;
    validate_benefit(benefit);
    c.benefit = benefit_curve(benefit);
    return c;
}

const char* name(CausalPolicy policy) {
    switch (policy) {
        case CausalPolicy::Window: return "window";
        case CausalPolicy::CostedWindow: return "costed_window";
        case CausalPolicy::Rollout: return "rollout";
        case CausalPolicy::MeanDp: return "mean_dp";
        case CausalPolicy::RiskRollout: return "risk_rollout";
    }
    return "unknown";
}

TableNeeds table_needs(CausalPolicy policy) {
    switch (policy) {
        case CausalPolicy::Window: return {};
        case CausalPolicy::CostedWindow: return {true, false, false};
        case CausalPolicy::Rollout:
        case CausalPolicy::RiskRollout: return {true, true, false};
        case CausalPolicy::MeanDp: return {false, false, true};
    }
    throw std::invalid_argument("unknown causal policy " +
                                std::to_string(static_cast<int>(policy)));
}

const char* name(PlanKind kind) {
    switch (kind) {
        case PlanKind::Wait: return "wait";
        case PlanKind::Abandon: return "abandon";
        case PlanKind::CheckpointReturn: return "checkpoint_return";
        case PlanKind::DiscardReturn: return "discard_return";
        case PlanKind::Greedy: return "greedy";
        case PlanKind::Publish: return "publish";
        case PlanKind::Advance: return "advance";
        case PlanKind::Optimal: return "optimal";
    }
    return "unknown";
}

const char* name(Move move) {
    switch (move) {
        case Move::Wait: return "wait";
        case Move::Work: return "work";
        case Move::Save: return "save";
        case Move::CheckpointReturn: return "checkpoint_return";
        case Move::DiscardReturn: return "discard_return";
        case Move::Abandon: return "abandon";
    }
    return "unknown";
}

// --- decisions --------------------------------------------------------------------------------

namespace {

// The plans a decision compares, in the canonical order of the finite model (ties keep
// the earlier): wait (or the three returns if lent), Window's plan, publish, advance
// with a checkpoint for u = max..1.
std::size_t plan_count(const CausalCandidate& c, const CausalPoint& p) {
    const int rest = c.work_quanta - (p.lent ? p.progress : p.durable);
    return (p.lent ? 3u : 1u) + 2u + static_cast<std::size_t>(std::max(0, rest - 1));
}

CausalPlan plan_at(const CausalCandidate& c, const CausalPoint& p, std::size_t k) {
    const int rest = c.work_quanta - (p.lent ? p.progress : p.durable);
    const std::size_t lead = p.lent ? 3u : 1u;
    if (k < lead) {
        if (!p.lent) return {PlanKind::Wait, 0};
        static constexpr PlanKind kLent[3] = {PlanKind::Abandon, PlanKind::CheckpointReturn,
                                              PlanKind::DiscardReturn};
        return {kLent[k], 0};
    }
    if (k == lead) return {PlanKind::Greedy, rest};
    if (k == lead + 1) return {PlanKind::Publish, rest};
    return {PlanKind::Advance, rest - 1 - static_cast<int>(k - lead - 2)};
}

// Whether plan k is open at p (a checkpoint, plan 1 when lent, needs unsaved work).
bool plan_open(const CausalPoint& p, std::size_t k) {
    return !(p.lent && k == 1) || p.progress > p.durable;
}

Move move_of(const CausalPoint& p, const CausalPlan& plan) {
    switch (plan.kind) {
        case PlanKind::Wait: return Move::Wait;
        case PlanKind::Abandon: return Move::Abandon;
        case PlanKind::CheckpointReturn: return Move::CheckpointReturn;
        case PlanKind::DiscardReturn: return Move::DiscardReturn;
        case PlanKind::Greedy: return p.lent && p.progress > p.durable ? Move::Save : Move::Work;
        case PlanKind::Publish:
        case PlanKind::Advance: return Move::Work;
        case PlanKind::Optimal: break;
    }
    return Move::Wait;
}

// The plan declining is (Costed Window's no-go): wait, or return keeping the completed
// work (checkpoint and return, 1, if any is unsaved; else discard and return, 2).
std::size_t decline(const CausalPoint& p) {
    if (!p.lent) return 0;
    return p.progress > p.durable ? 1 : 2;
}

// The scores of one decision, sample by sample. Each plan's outcome in a sample: its
// reward, and the durable progress it leaves (its continuation V(s'), none if terminal),
// and whether capacity is back by the sample's return deadline. Written out plan by plan
// (no dispatch per plan and sample): a decision reads little more than its table rows.
class Tally {
  public:
    Tally(const CausalCandidate& c, const CausalPoint& p, const GapPool& pool,
          std::size_t plans, DecisionScratch& s)
        : c_(c), p_(p), pool_(pool), s_(s), charge_(1.0 + c.residency_rate),
          load_(!p.lent && p.durable > 0 ? c.load_s : 0.0), base_(p.lent ? p.progress : p.durable),
          rest_(c.work_quanta - base_), lead_(p.lent ? 3u : 1u), plans_(plans),
          reach_cached_(pool.reach() == c.return_s) {
        s.score.assign(plans, 0.0);
        s.timely.assign(plans, 0.0);
        s.gate.assign(2, 0.0);
        const auto by_u = static_cast<std::size_t>(rest_) + 1;
        s.cut.assign(by_u, 0.0);
        s.cut_timely.assign(by_u, 0.0);
        s.advance.assign(by_u, 0.0);
        s.reached.assign(by_u, 0.0);
        s.late.assign(by_u, 0.0);
        // This decision's outcomes by record (stamped, so nothing is cleared).
        ++s.epoch;
        if (s.outcomes.size() < pool.size()) {
            s.outcomes.resize(pool.size());
            s.stamp.resize(pool.size(), 0);
        }
        s.late_price.clear();
        s.used.clear();
    }

    // Add sample `draw` with its rows of the policy's table (`values`, null: gate only) and
    // of V_G (`window`, null: no gate). The sums run in sample order whatever is cached.
    void add(const GapPool::Draw& draw, const double* values, const double* window) {
        if (!p_.lent && !by_arrival(p_.t + (load_ + c_.quantum_s), p_.t + draw.remaining_s)) {
            // Not even one quantum is done by the arrival (most samples of a young gap):
            // every plan but waiting is the forced return with nothing gained.
            bool cut_timely = true;
            const double cut_reward = forced_return(draw, cut_timely);
            const double cut = cut_reward + (values == nullptr ? 0.0 : values[p_.durable]);
            if (window != nullptr) s_.gate[0] += cut_reward + window[p_.durable];
            if (values == nullptr) return;
            s_.score[0] += values[p_.durable];
            s_.timely[0] += 1.0;
            all_cut_ += cut;
            all_cut_timely_ += cut_timely ? 1.0 : 0.0;
            return;
        }
        DrawOutcome& o = outcome(draw, values != nullptr);
        // Window's plan (the gate reads it under V_G, the rollout under its own table).
        if (window != nullptr) {
            s_.gate[0] += o.greedy + (o.greedy_durable < 0 ? 0.0 : window[o.greedy_durable]);
        }
        if (p_.lent) {
            if (window != nullptr) s_.gate[1] += o.stop;
            if (values == nullptr) return;
            put(0, o.stop, -1, values);                                   // abandon
            if (p_.progress > p_.durable) {                               // checkpoint, return
                put(1, o.checkpoint, o.checkpoint_durable, values);
            }
            put(2, o.stop, p_.durable, values);                           // discard, return
        } else {
            if (values == nullptr) return;
            put(0, 0.0, p_.durable, values);                              // wait
        }
        put(lead_, o.greedy, o.greedy_durable, values);
        put(lead_ + 1, o.publish, o.publish_durable, values);
        advances(o, values);
        ++o.samples;  // its timeliness is counted once per draw (count())
    }

    // Fold the advances and the cut-short plans in (after the last sample).
    void finish() {
        for (const std::size_t r : s_.used) count(s_.outcomes[r]);
        count(single_);
        double cut = 0.0;
        double cut_timely = 0.0;
        double reached = 0.0;  // samples in which advance u is done: those with most >= u
        for (int u = rest_ - 1; u >= 1; --u) {
            reached += s_.reached[static_cast<std::size_t>(u)];
        }
        for (int u = 1; u <= rest_ - 1; ++u) {
            const auto i = static_cast<std::size_t>(u);
            cut += s_.cut[i];
            cut_timely += s_.cut_timely[i];
            const double busy = load_ + u * c_.quantum_s + c_.save_s;
            const std::size_t k = lead_ + 2 + static_cast<std::size_t>(rest_ - 1 - u);
            s_.score[k] += s_.advance[i] + reached * -(charge_ * (busy + c_.return_s)) + cut;
            s_.timely[k] += reached - s_.late[i] + cut_timely;
            reached -= s_.reached[i];
        }
        for (std::size_t k = 1; k < plans_ && !p_.lent; ++k) {
            s_.score[k] += all_cut_;
            s_.timely[k] += all_cut_timely_;
        }
    }

  private:
    // The outcomes of `draw`: worked out once per decision for each drawn past gap (its
    // record and remaining length fix the arrival), every later sample of it reuses them.
    DrawOutcome& outcome(const GapPool::Draw& draw, bool full) {
        if (draw.record < 0) {  // no history: each draw its own
            count(single_);
            work_out(draw, full, single_);
            return single_;
        }
        const auto r = static_cast<std::size_t>(draw.record);
        DrawOutcome& o = s_.outcomes[r];
        if (s_.stamp[r] != s_.epoch) {
            s_.stamp[r] = s_.epoch;
            s_.used.push_back(r);
            work_out(draw, full, o);
        } else if (o.remaining_s != draw.remaining_s) {  // a tail draw beyond every gap
            count(o);
            work_out(draw, full, o);
        }
        return o;
    }

    // The timeliness counts of the samples of outcome `o` (whole numbers, exact in any
    // order), added at once; o.samples is reset.
    void count(DrawOutcome& o) {
        if (o.samples == 0) return;
        const double n = o.samples;
        o.samples = 0;
        double* timely = s_.timely.data();
        if (p_.lent) {
            timely[0] += o.stop_timely ? n : 0.0;
            if (p_.progress > p_.durable) timely[1] += o.checkpoint_timely ? n : 0.0;
            timely[2] += o.stop_timely ? n : 0.0;
        } else {
            timely[0] += n;
        }
        timely[lead_] += o.greedy_timely ? n : 0.0;
        timely[lead_ + 1] += o.publish_timely ? n : 0.0;
        const auto m = static_cast<std::size_t>(o.most);
        if (o.most < rest_ - 1 && o.cut_timely) {
            s_.cut_timely[m + 1] += n;
            s_.cut_timely[static_cast<std::size_t>(rest_)] -= n;
        }
        if (o.most < 1) return;
        s_.reached[m] += n;  // samples whose advances u <= most are done
        for (int u = o.late_from; u <= o.most; ++u) s_.late[static_cast<std::size_t>(u)] += n;
    }

    // The forced return of a plan the arrival of `draw` cuts short: t_ret after it,
    // unsaved work lost. Sets arrival_, record_ and slack_ of the draw.
    double forced_return(const GapPool::Draw& draw, bool& timely) {
        arrival_ = p_.t + draw.remaining_s;
        record_ = draw.record;
        slack_ = pool_.slack(record_);
        const double cut_late = reach_cached_ ? pool_.reach_lateness(record_)
                                              : pool_.lateness(record_, c_.return_s);
        timely = !(c_.return_s > slack_);
        return -(charge_ * (arrival_ - p_.t + c_.return_s)) - c_.lateness_price * cut_late;
    }

    // Every plan's reward, durable progress left and timeliness in the draw (`full`: also
    // those only a table-reading policy scores: checkpoint, publish and the advances).
    void work_out(const GapPool::Draw& draw, bool full, DrawOutcome& o) {
        cut_reward_ = forced_return(draw, cut_timely_);
        o.remaining_s = draw.remaining_s;
        o.samples = 0;
        o.cut_reward = cut_reward_;
        o.cut_timely = cut_timely_;
        o.greedy = greedy_reward(o.greedy_durable);
        o.greedy_timely = greedy_timely_ < 0 ? cut_timely_ : greedy_timely_ > 0;
        if (p_.lent) {
            o.stop = ended(p_.t + c_.return_s, charge_ * c_.return_s);
            o.stop_timely = last_timely_;
        }
        if (!full) return;
        if (p_.lent && p_.progress > p_.durable) {
            const double saved = p_.t + c_.save_s;
            if (by_arrival(saved, arrival_)) {
                o.checkpoint = ended(saved + c_.return_s, charge_ * (c_.save_s + c_.return_s));
                o.checkpoint_durable = p_.progress;
                o.checkpoint_timely = last_timely_;
            } else {
                cut_short(o.checkpoint, o.checkpoint_durable, o.checkpoint_timely);
            }
        }
        const double work = load_ + rest_ * c_.quantum_s;  // publish
        if (by_arrival(p_.t + work, arrival_)) {
            const double publish = p_.t + work;
            o.publish = ended(publish + c_.return_s, charge_ * (work + c_.return_s)) +
                        c_.benefit.value(publish);
            o.publish_durable = -1;
            o.publish_timely = last_timely_;
        } else {
            cut_short(o.publish, o.publish_durable, o.publish_timely);
        }
        work_out_advances(o);
    }

    // The reward of a loan ready at `ready` after costing `cost`; sets the timely flag.
    double ended(double ready, double cost) {
        const double overrun = ready - arrival_;
        last_timely_ = !(overrun > slack_);
        return last_timely_ ? -cost
                            : -cost - c_.lateness_price * pool_.lateness(record_, overrun);
    }

    // A plan the arrival cuts short: the forced return, durable progress kept.
    void cut_short(double& reward, int& durable, bool& timely) const {
        reward = cut_reward_;
        durable = p_.durable;
        timely = cut_timely_;
    }

    void put(std::size_t k, double reward, int durable, const double* values) {
        s_.score[k] += reward + (durable < 0 ? 0.0 : values[durable]);
    }

    // Window's plan from here: (save first if lent with unsaved work), then quantum and
    // save pairs, the last quantum publishing. Sets greedy_timely_ (-1: cut short).
    double greedy_reward(int& durable) {
        const bool saves_first = p_.lent && p_.progress > p_.durable;
        const double start = p_.t + (saves_first ? c_.save_s : load_);
        if (saves_first && !by_arrival(start, arrival_)) {
            durable = p_.durable;
            greedy_timely_ = -1;
            return cut_reward_;
        }
        const double pair = c_.quantum_s + c_.save_s;
        const double publish = start + (rest_ - 1) * pair + c_.quantum_s;
        if (by_arrival(publish, arrival_)) {
            durable = -1;
            const double r = ended(publish + c_.return_s, charge_ * (publish - p_.t + c_.return_s)) +
                             c_.benefit.value(publish);
            greedy_timely_ = last_timely_ ? 1 : 0;
            return r;
        }
        int saved = 0;  // quantum and save pairs done by the arrival
        if (arrival_ >= start) {
            saved = static_cast<int>(
                std::min<double>(rest_ - 1, std::floor((arrival_ - start) / pair)));
        }
        durable = base_ + saved;
        greedy_timely_ = -1;
        return cut_reward_;
    }

    // Advances u = rest-1 .. 1: the most done by the arrival, and the lateness price of
    // those late (lateness grows with u: the late ones are the largest, walked down from
    // the most done), kept in s_.late_price from o.late_at by u.
    void work_out_advances(DrawOutcome& o) {
        const auto done = [&](int u) {
            return by_arrival(p_.t + (load_ + u * c_.quantum_s + c_.save_s), arrival_);
        };
        const double room = (arrival_ - p_.t - load_ - c_.save_s) / c_.quantum_s;
        int most = room >= rest_ - 1 ? rest_ - 1 : room < 1.0 ? 0 : static_cast<int>(room);
        while (most >= 1 && !done(most)) --most;  // the estimate, corrected by the rule
        while (most < rest_ - 1 && done(most + 1)) ++most;
        o.most = most;
        o.late_from = most + 1;
        o.late_at = s_.late_price.size();
        const GapPool::Curve curve = record_ < 0 ? GapPool::Curve{} : pool_.curve(record_);
        std::size_t below = curve.count;
        for (int u = most; u >= 1; --u) {
            const double busy = load_ + u * c_.quantum_s + c_.save_s;
            const double overrun = (p_.t + busy + c_.return_s) - arrival_;
            if (!(overrun > slack_)) break;
            double lateness = overrun;  // record -1: one request due at the arrival
            if (record_ >= 0) {  // as GapPool::lateness: sum of (overrun - slack)^+
                // lower_bound on [0, below), which holds while the overrun stays above the
                // largest slack left (the late advances beyond reach_s, most at J = 36).
                if (below > 0 && !(curve.slacks[below - 1] < overrun)) {
                    below = static_cast<std::size_t>(
                        std::lower_bound(curve.slacks, curve.slacks + below - 1, overrun) -
                        curve.slacks);
                }
                lateness = curve.weight * (static_cast<double>(below) * overrun - curve.prefix[below]);
            }
            s_.late_price.push_back(c_.lateness_price * lateness);
            o.late_from = u;
        }
        std::reverse(s_.late_price.begin() + static_cast<std::ptrdiff_t>(o.late_at),
                     s_.late_price.end());
    }

    // The advances of one sample, kept by u in s_.advance: those done by the arrival
    // (u <= most) add their continuation row (one contiguous run), the late among them
    // their lateness; their cost, the same in every sample, is added once per sample that
    // got that far (finish); the others are cut short all alike.
    void advances(const DrawOutcome& o, const double* values) {
        const int most = o.most;
        const auto m = static_cast<std::size_t>(most);
        if (most < rest_ - 1) {  // u = most+1 .. rest-1: cut short
            const double q = o.cut_reward + values[p_.durable];
            s_.cut[m + 1] += q;
            s_.cut[static_cast<std::size_t>(rest_)] -= q;
        }
        if (most < 1) return;
        // One pass: the late ones subtract their price right after their row entry, as
        // two passes would (the same operations in the same order).
        double* advance = s_.advance.data();
        const double* next = values + base_;
        const auto late_from = static_cast<std::size_t>(o.late_from);  // <= most + 1
        for (std::size_t u = 1; u < late_from; ++u) advance[u] += next[u];
        const double* price = s_.late_price.data() + o.late_at;  // price[0]: late_from's
        for (std::size_t u = late_from; u <= m; ++u) {
            advance[u] = (advance[u] + next[u]) - price[u - late_from];
        }
    }

    const CausalCandidate& c_;
    const CausalPoint& p_;
    const GapPool& pool_;
    DecisionScratch& s_;
    double charge_;
    double load_;
    int base_;
    int rest_;
    std::size_t lead_;
    std::size_t plans_;
    bool reach_cached_;
    DrawOutcome single_;  // the outcome of a draw without a record
    double arrival_ = 0.0;
    std::int32_t record_ = -1;
    double slack_ = 0.0;
    double cut_reward_ = 0.0;
    bool cut_timely_ = true;
    bool last_timely_ = true;
    int greedy_timely_ = -1;
    double all_cut_ = 0.0;  // idle samples where every working plan is cut short
    double all_cut_timely_ = 0.0;
};

}  // namespace

CausalDecision decide(const CausalCandidate& c, const CausalPoint& point, CausalPolicy policy,
                      double return_level, const CausalForecast& forecast, std::uint64_t& rng,
                      DecisionScratch& scratch) {
    const std::size_t plans = plan_count(c, point);
    const std::size_t lead = point.lent ? 3u : 1u;  // index of Window's plan
    if (policy == CausalPolicy::Window) {
        const CausalPlan plan = plan_at(c, point, lead);
        return {plan, move_of(point, plan)};
    }
    if (forecast.pool == nullptr || forecast.tables == nullptr) {
        throw std::invalid_argument(std::string("policy ") + name(policy) + " needs a forecast");
    }
    const SampleTables& tables = *forecast.tables;
    if (!tables.needs().covers(table_needs(policy))) {
        throw std::invalid_argument(std::string("the forecast's tables were not built for ") +
                                    name(policy));
    }
    const auto n = static_cast<std::size_t>(tables.sample_count());
    scratch.draws.resize(n);
    forecast.pool->draw(point.t - point.gap_start, n, rng, scratch.draws.data());
    const bool gated = policy != CausalPolicy::MeanDp;
    Tally tally(c, point, *forecast.pool, plans, scratch);
    for (std::size_t i = 0; i < n; ++i) {
        const GapPool::Draw& draw = scratch.draws[i];
        const int row = tables.row_after(i, point.t + draw.remaining_s);
        const double* values = policy == CausalPolicy::CostedWindow ? nullptr
                               : policy == CausalPolicy::MeanDp     ? tables.optimal_row(i, row)
                                                                    : tables.reference_row(i, row);
        tally.add(draw, values, gated ? tables.window_row(i, row) : nullptr);
    }
    tally.finish();
    // pi0: Window's plan if its expected value beats stopping (0 idle, abandoning lent).
    const bool go = gated && strictly_greater(scratch.gate[0] / static_cast<double>(n),
                                              scratch.gate[1] / static_cast<double>(n));
    std::size_t incumbent_k = go ? lead : decline(point);
    const double per = 1.0 / static_cast<double>(n);
    const double none = std::numeric_limits<double>::quiet_NaN();
    if (policy == CausalPolicy::CostedWindow) {  // it reads V_G alone: its gate's scores
        const CausalPlan plan = plan_at(c, point, incumbent_k);
        return {plan, move_of(point, plan), scratch.gate[go ? 0 : 1] * per,
                point.lent ? none : scratch.gate[1] * per};
    }
    const double wait_value = point.lent ? none : scratch.score[0] * per;
    if (policy == CausalPolicy::MeanDp) incumbent_k = 0;  // Never's plan: wait, or abandon if lent
    // Eq. 11 over the samples: the first plan that beats the incumbent strictly.
    std::vector<char>& allowed = scratch.allowed;
    allowed.resize(plans);
    for (std::size_t k = 0; k < plans; ++k) allowed[k] = plan_open(point, k);
    if (policy == CausalPolicy::RiskRollout) {
        const double need = return_level * static_cast<double>(n) - 1e-9;
        std::size_t safest = 0;
        bool any = false;
        for (std::size_t k = 0; k < plans; ++k) {
            if (!allowed[k]) continue;
            if (scratch.timely[k] > scratch.timely[safest] ||
                (scratch.timely[k] == scratch.timely[safest] &&
                 strictly_greater(scratch.score[k], scratch.score[safest]))) {
                safest = k;
            }
            allowed[k] = scratch.timely[k] >= need;
            any = any || allowed[k];
        }
        if (!any) {  // nothing is safe enough: the plan most likely to be in time
            const CausalPlan plan = plan_at(c, point, safest);
            return {plan, move_of(point, plan), scratch.score[safest] * per, wait_value};
        }
        if (!allowed[incumbent_k]) {
            incumbent_k = static_cast<std::size_t>(
                std::find(allowed.begin(), allowed.end(), char{1}) - allowed.begin());
        }
    }
    // Each plan's mean divided once (the same quotients as dividing in the comparisons,
    // but off the chain of comparisons, which then waits on no division).
    std::vector<double>& mean = scratch.mean;
    mean.resize(plans);
    for (std::size_t k = 0; k < plans; ++k) mean[k] = scratch.score[k] / static_cast<double>(n);
    std::size_t best = incumbent_k;
    for (std::size_t k = 0; k < plans; ++k) {
        if (allowed[k] && strictly_greater(mean[k], mean[best])) best = k;
    }
    const CausalPlan plan = plan_at(c, point, best);
    return {plan, move_of(point, plan), scratch.score[best] * per, wait_value};
}

// --- the simulator ----------------------------------------------------------------------------

CausalSim::CausalSim(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                     double from_s, double to_s)
    : schedule_(&schedule), c_(prepare(candidate)), to_s_(to_s) {
    if (!std::isfinite(from_s) || !std::isfinite(to_s) || !(to_s > from_s)) {
        throw std::invalid_argument("the horizon must be finite with end > start, got [" +
                                    std::to_string(from_s) + ", " + std::to_string(to_s) + ")");
    }
    const RequestTrace& trace = schedule.trace();
    if (to_s > trace.arrival.back()) {
        throw std::invalid_argument("the horizon ends at " + std::to_string(to_s) +
                                    ", after the trace's last request at " +
                                    std::to_string(trace.arrival.back()));
    }
    from_s_ = from_s;
    next_ = static_cast<std::size_t>(
        std::lower_bound(trace.arrival.begin(), trace.arrival.end(), from_s) -
        trace.arrival.begin());
    free_ = next_ > 0 ? schedule.finish(next_ - 1) : -kInf;
    next_gap();
}

bool CausalSim::allows(Move move) const {
    if (!deciding_) return false;
    switch (move) {
        case Move::Wait: return !point_.lent;
        case Move::Work: return true;
        case Move::Save:
        case Move::CheckpointReturn: return point_.lent && point_.progress > point_.durable;
        case Move::DiscardReturn:
        case Move::Abandon: return point_.lent;
    }
    return false;
}

void CausalSim::serve() {
    const RequestTrace& trace = schedule_->trace();
    const double start = std::max(trace.arrival[next_], free_);
    free_ = start + trace.service[next_];
    const double late = free_ - trace.deadline[next_];
    if (late > kLateToleranceS) {
        ++pending_.late_requests;
        pending_.lateness_s += late;
    }
    ++served_;
    ++next_;
}

void CausalSim::next_gap() {
    const RequestTrace& trace = schedule_->trace();
    for (;;) {
        if (next_ >= trace.size()) {
            deciding_ = false;
            return;
        }
        if (trace.arrival[next_] > free_ && free_ >= from_s_) {  // idle from free_ on
            if (free_ >= to_s_ || done_) {
                deciding_ = false;
                return;
            }
            arrival_ = trace.arrival[next_];
            point_.t = point_.gap_start = free_;
            point_.lent = false;
            deciding_ = true;
            return;
        }
        serve();
    }
}

void CausalSim::end_gap(double ready_s) {
    point_.lent = false;
    free_ = std::max(free_, ready_s);
    serve();  // the arrival that ended the gap (the rest of the gap, if any, stays idle)
    next_gap();
}

CausalSim::StepResult CausalSim::apply(Move move) {
    if (!allows(move)) {
        throw std::invalid_argument(std::string("move ") + name(move) +
                                    " is not allowed at this decision point");
    }
    pending_ = StepResult{};
    const double t = point_.t;
    const double ret = c_.return_s;
    const double benefit_before = benefit_;
    const double cost_before = cost_;
    // A loan the arrival cuts short: capacity ready t_ret after it, unsaved work lost.
    const auto cut = [&] {
        cost_ += charge(arrival_ - t + ret);
        point_.progress = point_.durable;
        end_gap(arrival_ + ret);
    };
    switch (move) {
        case Move::Wait: {
            const double next = t + c_.quantum_s;
            if (next >= arrival_) {
                end_gap(-kInf);
            } else {
                point_.t = next;
            }
            break;
        }
        case Move::Work: {
            double load = 0.0;
            if (!point_.lent) {
                point_.lent = true;
                ++handoffs_;
                load = point_.durable > 0 ? c_.load_s : 0.0;
            }
            const double end = t + load + c_.quantum_s;
            const bool last = point_.progress + 1 == c_.work_quanta;
            if (!by_arrival(end, arrival_)) {  // a quantum counts only if done by the arrival
                cut();
                break;
            }
            ++point_.progress;
            cost_ += charge(load + c_.quantum_s);
            if (last) {
                benefit_ += c_.benefit.value(end);
                cost_ += charge(ret);
                point_.durable = point_.progress;
                published_ = done_ = true;
                publish_s_ = end;
                end_gap(end + ret);
            } else {
                point_.t = end;
            }
            break;
        }
        case Move::Save: {
            const double end = t + c_.save_s;
            if (!by_arrival(end, arrival_)) {
                cut();
                break;
            }
            point_.durable = point_.progress;
            ++checkpoints_;
            cost_ += charge(c_.save_s);
            point_.t = end;
            break;
        }
        case Move::CheckpointReturn: {
            const double end = t + c_.save_s;
            if (!by_arrival(end, arrival_)) {
                cut();
                break;
            }
            point_.durable = point_.progress;
            ++checkpoints_;
            cost_ += charge(c_.save_s + ret);
            end_gap(end + ret);
            break;
        }
        case Move::DiscardReturn:
            point_.progress = point_.durable;
            cost_ += charge(ret);
            end_gap(t + ret);
            break;
        case Move::Abandon:
            cost_ += charge(ret);
            done_ = true;
            end_gap(t + ret);
            break;
    }
    late_ += pending_.late_requests;
    lateness_s_ += pending_.lateness_s;
    pending_.reward = (benefit_ - benefit_before) - (cost_ - cost_before) -
                      c_.lateness_price * pending_.lateness_s;
    value_ += pending_.reward;
    return pending_;
}

void CausalSim::resume(const CausalCandidate& candidate, int progress, int durable) {
    if (deciding_ && point_.lent) {
        throw std::logic_error("a causal run can change candidates only while not lent");
    }
    CausalCandidate next = prepare(candidate);
    if (durable < 0 || progress < durable || progress >= next.work_quanta) {
        throw std::invalid_argument("resume: need 0 <= durable <= progress < work_quanta, got " +
                                    std::to_string(durable) + ", " + std::to_string(progress));
    }
    c_ = std::move(next);
    point_.progress = progress;
    point_.durable = durable;
    done_ = published_ = false;
    if (!deciding_) next_gap();
}

double CausalSim::bound() const {
    if (!deciding_) return 0.0;
    const int rest = c_.work_quanta - (point_.lent ? point_.progress : point_.durable);
    return c_.benefit.value(point_.t + rest * c_.quantum_s);  // Phi never rises with t_p
}

std::vector<std::uint64_t> CausalSim::key() const {
    const auto bits = [](double x) {
        std::uint64_t b = 0;
        std::memcpy(&b, &x, sizeof b);
        return b;
    };
    return {static_cast<std::uint64_t>(next_),
            bits(free_),
            bits(point_.t),
            bits(point_.gap_start),
            static_cast<std::uint64_t>(point_.progress),
            static_cast<std::uint64_t>(point_.durable),
            static_cast<std::uint64_t>(point_.lent) | (static_cast<std::uint64_t>(done_) << 1) |
                (static_cast<std::uint64_t>(deciding_) << 2)};
}

// --- runs -------------------------------------------------------------------------------------

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t horizon, std::uint64_t policy) {
    std::uint64_t s = seed;
    std::uint64_t out = next_u64(s);
    s = out ^ (horizon + 0x632be59bd9b4e019ull);
    out = next_u64(s);
    s = out ^ (policy + 0x85157af5ull);
    return next_u64(s);
}

CausalOutcome run_causal(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                         double from_s, double to_s, CausalPolicy policy, double return_level,
                         const CausalForecast& forecast, std::uint64_t seed, bool keep_steps) {
    CausalSim sim(schedule, candidate, from_s, to_s);
    if (forecast.tables != nullptr &&
        forecast.tables->candidate().work_quanta != candidate.work_quanta) {
        throw std::invalid_argument("the forecast's tables were built for another work size");
    }
    CausalOutcome out;
    DecisionScratch scratch;
    std::uint64_t rng = seed;
    while (sim.deciding()) {
        const CausalPoint point = sim.point();
        const CausalDecision d = decide(candidate, point, policy, return_level, forecast, rng,
                                        scratch);
        const CausalSim::StepResult r = sim.apply(d.move);
        if (keep_steps) out.steps.push_back(CausalStep{point, d, r});
    }
    summarize(sim, out);
    return out;
}

void summarize(const CausalSim& sim, CausalOutcome& out) {
    out.value = sim.value();
    out.benefit = sim.benefit();
    out.cost = sim.cost();
    out.lateness_s = sim.lateness_s();
    out.late_requests = sim.late_requests();
    out.requests = sim.requests();
    out.handoffs = sim.handoffs();
    out.checkpoints = sim.checkpoints();
    out.published = sim.published();
    out.publish_s = sim.published() ? sim.publish_s() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace learnsched
