#include "learnsched/forecast/sample_tables.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "learnsched/parallel.hpp"
#include "learnsched/finite/reference_policies.hpp"
#include "learnsched/finite/tolerance.hpp"

namespace learnsched {
namespace {

Scenario validated_current(Scenario current) {
    current.initial = State{};  // decide() takes the state; only the window matters here
    validate(current);
    if (current.windows.size() != 1) {
        throw std::invalid_argument("the current scenario must hold exactly one window (the "
                                    "current one), got " +
                                    std::to_string(current.windows.size()));
    }
    return current;
}

std::string sample_field(std::size_t i) { return "samples[" + std::to_string(i) + "]"; }

// The sample as a scenario of its own: its row j equals row k+1 of a calendar whose
// windows after k are this sample's windows from j on.
Scenario sample_scenario(const Scenario& candidate, const Calendar& sample, std::size_t i) {
    Scenario s = candidate;
    s.windows = sample;
    s.initial = State{};
    try {
        validate(s);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(sample_field(i) + ": " + e.what());
    }
    return s;
}

// The samples of the first constructor must all lie after the current window.
const std::vector<Calendar>& after_current(const Scenario& current,
                                           const std::vector<Calendar>& samples) {
    const double end_s = validated_current(current).windows.front().end_s;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (!samples[i].empty() && samples[i].front().start_s < end_s) {
            throw std::invalid_argument(sample_field(i) + ": windows[0] starts at " +
                                        std::to_string(samples[i].front().start_s) +
                                        " before the current window ends at " +
                                        std::to_string(end_s));
        }
    }
    return samples;
}

[[noreturn]] void unsupported(Policy policy) {
    throw std::invalid_argument(
        "policies under a forecast must be window, costed_window, rollout or dp, got " +
        std::string(name(policy)));
}

TableNeeds needs_of(const std::vector<Policy>& policies) {
    for (const Policy p : policies) {
        switch (p) {
            case Policy::Window:
            case Policy::CostedWindow:
            case Policy::Rollout:
            case Policy::Dp: break;
            default: unsupported(p);
        }
    }
    return table_needs(policies);
}

// For each sample the index of the first sample equal to it, window for window (itself if
// none): equal samples are hashed into buckets, then compared exactly.
std::vector<std::size_t> first_equal(const std::vector<Calendar>& samples) {
    const auto same = [](const Calendar& a, const Calendar& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t j = 0; j < a.size(); ++j) {
            if (a[j].start_s != b[j].start_s || a[j].end_s != b[j].end_s) return false;
        }
        return true;
    };
    const auto hash = [](const Calendar& c) {
        std::uint64_t h = 1469598103934665603ull ^ c.size();
        for (const Window& w : c) {
            for (const double x : {w.start_s, w.end_s}) {
                std::uint64_t bits = 0;
                std::memcpy(&bits, &x, sizeof bits);
                h = (h ^ bits) * 1099511628211ull;
            }
        }
        return h;
    };
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> buckets;
    std::vector<std::size_t> first(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        std::vector<std::size_t>& bucket = buckets[hash(samples[i])];
        first[i] = i;
        for (const std::size_t j : bucket) {
            if (same(samples[j], samples[i])) {
                first[i] = j;
                break;
            }
        }
        if (first[i] == i) bucket.push_back(i);
    }
    return first;
}

bool same_candidate(const Scenario& a, const Scenario& b) {
    return a.work_quanta == b.work_quanta && a.quantum_s == b.quantum_s &&
           a.benefit_rate == b.benefit_rate && a.benefit_schedule == b.benefit_schedule &&
           a.horizon_s == b.horizon_s &&
           a.costs.recovery_s == b.costs.recovery_s &&
           a.costs.residency_rate == b.costs.residency_rate && a.costs.save_s == b.costs.save_s &&
           a.costs.load_s == b.costs.load_s && a.costs.cold_recovery_s == b.costs.cold_recovery_s;
}

}  // namespace

std::size_t sample_states(const std::vector<Calendar>& samples, int work_quanta,
                          std::size_t limit) {
    if (work_quanta < 1) {
        throw std::invalid_argument("work_quanta must be >= 1, got " + std::to_string(work_quanta));
    }
    const std::size_t stride = static_cast<std::size_t>(work_quanta) + 1;
    constexpr std::size_t kSaturated = std::numeric_limits<std::size_t>::max();
    std::size_t total = 0;  // saturates instead of wrapping around
    for (const Calendar& c : samples) {
        const std::size_t rows = c.size() + 1;
        const std::size_t term = rows > kSaturated / stride ? kSaturated : rows * stride;
        total = term > kSaturated - total ? kSaturated : total + term;
    }
    if (total > limit) {
        throw std::invalid_argument(
            "samples x states: the sum over " + std::to_string(samples.size()) +
            " samples of (windows + 1) x (work_quanta + 1) = " +
            (total == kSaturated ? std::string("more than 2^64") : std::to_string(total)) +
            " exceeds the limit of " + std::to_string(limit));
    }
    return total;
}

SampleTables::SampleTables(const Scenario& candidate, const std::vector<Calendar>& samples,
                           const std::vector<Policy>& policies, int threads)
    : candidate_(candidate), needs_(needs_of(policies)) {
    if (threads < 1) {
        throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
    }
    if (samples.empty()) throw std::invalid_argument("samples must hold at least one calendar");
    if (samples.size() > kMaxSamples) {
        throw std::invalid_argument("samples holds " + std::to_string(samples.size()) +
                                    " calendars, more than the limit of " +
                                    std::to_string(kMaxSamples));
    }
    candidate_.windows.clear();  // only the candidate's parameters are kept
    candidate_.initial = State{};
    // Equal samples share one build: the first of each kind is built, the rest point to it.
    const std::vector<std::size_t> first = first_equal(samples);
    std::vector<std::size_t> builds;  // sample index of each distinct build
    index_.resize(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (first[i] == i) {
            index_[i] = static_cast<std::uint32_t>(builds.size());
            builds.push_back(i);
        } else {
            index_[i] = index_[first[i]];
        }
    }
    // Before any table is allocated (the distinct samples' tables are what is built); two
    // paths keep four more tables per sample.
    std::vector<Calendar> built;
    built.reserve(builds.size());
    for (const std::size_t i : builds) built.push_back(samples[i]);
    sample_states(built, candidate.work_quanta,
                  candidate.costs.offers_choice() ? kMaxTwoPathStates : kMaxSampleStates);
    distinct_.resize(builds.size());
    // Each worker fills only its own builds.
    run_blocks(builds.size(), threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t b = begin; b < end; ++b) build(b, builds[b], samples[builds[b]]);
    });
}

void SampleTables::build(std::size_t slot, std::size_t sample, const Calendar& calendar) {
    const int J = candidate_.work_quanta;
    Sample& out = distinct_[slot];
    // An empty sample keeps one all-zero row: no later window, every continuation is 0.
    out.window = out.reference = out.optimal = ValueTable(0, J);
    out.path_window = out.path_reference = {out.window, out.window};
    if (calendar.empty()) return;
    const SegmentAccounting acc(sample_scenario(candidate_, calendar, sample));
    out.starts.reserve(calendar.size());
    for (const Window& w : calendar) out.starts.push_back(w.start_s);
    // Built in locals and moved in: Costed Window reads V_G while V^pi0 is filled.
    const int K = acc.window_count();
    ValueTable window(needs_.window ? K : 0, J);
    if (needs_.window) {
        evaluate_policy(acc, window, [&](const State& s) { return window_action(acc, s); });
    }
    const bool two_paths = acc.path_count() == 2 && (needs_.window || needs_.reference);
    PathChoiceReference paths;  // pi0 with two paths: each fixed path's tables
    if (two_paths) paths.build(acc);
    if (needs_.reference) {
        ValueTable reference(K, J);
        if (two_paths) {
            paths.fill_values(acc, reference);
        } else {
            evaluate_policy(acc, reference,
                            [&](const State& s) { return costed_window_action(acc, window, s); });
        }
        out.reference = std::move(reference);
    }
    for (int p = 0; two_paths && p < 2; ++p) {
        const auto i = static_cast<std::size_t>(p);
        paths.release(p, out.path_window[i], out.path_reference[i]);
    }
    out.window = std::move(window);
    if (needs_.optimal) out.optimal = optimal_values(acc);
}

ForecastModel::ForecastModel(const Scenario& current, const std::vector<Calendar>& samples,
                             const std::vector<Policy>& policies, int threads)
    : ForecastModel(current, SampleTables(current, after_current(current, samples), policies,
                                          threads)) {}

ForecastModel::ForecastModel(const Scenario& current, const SampleTables& tables)
    : acc_(validated_current(current)),
      samples_(tables.sample_count()),
      needs_(tables.needs()),
      window_values_(1, acc_.work_quanta()),
      reference_values_(1, acc_.work_quanta()),
      optimal_values_(1, acc_.work_quanta()) {
    if (!same_candidate(scenario(), tables.candidate())) {
        throw std::invalid_argument(
            "tables were built for another candidate (work, benefit or costs differ)");
    }
    const int J = acc_.work_quanta();
    const double end_s = scenario().windows.front().end_s;
    const auto n = static_cast<std::size_t>(tables.sample_count());
    std::vector<int> rows;  // per sample: its first window starting at or after end_s
    rows.reserve(n);
    for (std::size_t i = 0; i < n; ++i) rows.push_back(tables.row_after(i, end_s));
    const auto mean_into = [&](ValueTable SampleTables::Sample::*table, ValueTable& into) {
        for (int q = 0; q <= J; ++q) {
            double sum = 0.0;  // in sample order, whatever the threads that built them
            for (std::size_t i = 0; i < rows.size(); ++i) {
                sum += (tables.sample(i).*table)(rows[i], q);
            }
            into(1, q) = sum / static_cast<double>(rows.size());
        }
    };
    if (needs_.window) mean_into(&SampleTables::Sample::window, window_values_);
    if (needs_.reference) mean_into(&SampleTables::Sample::reference, reference_values_);
    if (needs_.optimal) mean_into(&SampleTables::Sample::optimal, optimal_values_);
    // Row 0 of V_G: Window's action on the current window, priced with the mean after it.
    evaluate_policy(acc_, window_values_, [&](const State& s) { return window_action(acc_, s); });
    if (acc_.path_count() == 1 || !(needs_.window || needs_.reference)) return;
    for (std::size_t p = 0; p < 2; ++p) {  // pi0 with two paths: the same per fixed path
        SegmentAccounting& one = path_acc_[p].emplace(fixed_path_scenario(scenario(), p == 1));
        path_window_values_[p] = ValueTable(1, J);
        path_reference_values_[p] = ValueTable(1, J);
        for (int q = 0; q <= J; ++q) {
            double window_sum = 0.0;  // in sample order, as mean_into
            double reference_sum = 0.0;
            for (std::size_t i = 0; i < rows.size(); ++i) {
                window_sum += tables.sample(i).path_window[p](rows[i], q);
                reference_sum += tables.sample(i).path_reference[p](rows[i], q);
            }
            path_window_values_[p](1, q) = window_sum / static_cast<double>(rows.size());
            path_reference_values_[p](1, q) = reference_sum / static_cast<double>(rows.size());
        }
        evaluate_policy(one, path_window_values_[p],
                        [&](const State& s) { return window_action(one, s); });
    }
}

Action ForecastModel::costed_window_action(const State& state) const {
    if (acc_.path_count() == 1) return learnsched::costed_window_action(acc_, window_values_, state);
    std::array<FixedPathTables, 2> paths;
    for (std::size_t p = 0; p < 2; ++p) {
        paths[p] = FixedPathTables{&*path_acc_[p], &path_window_values_[p], &path_reference_values_[p]};
    }
    return path_choice_action(paths, state);
}

Action ForecastModel::decide(const State& state, Policy policy) const {
    validate_state(scenario(), state);
    const auto require = [&](bool built) {
        if (!built) {
            throw std::invalid_argument("policy " + std::string(name(policy)) +
                                        " was not among the policies this forecast was "
                                        "prepared for");
        }
    };
    switch (policy) {
        case Policy::Window: return window_action(acc_, state);
        case Policy::CostedWindow:
            require(needs_.window);
            return costed_window_action(state);
        case Policy::Rollout:  // Eq. 11 over the expected reference continuation
            require(needs_.reference);
            return best_action(acc_, reference_values_, state, costed_window_action(state));
        case Policy::Dp:  // Eq. D.2 with the expected optimal continuation
            require(needs_.optimal);
            return best_action(acc_, optimal_values_, state, never_action(acc_, state));
        default: break;
    }
    unsupported(policy);
}

Segment ForecastModel::take(const State& state, const Action& action) const {
    validate_state(scenario(), state);
    bool feasible = false;
    acc_.for_each_action(state, [&](const Action& a) { feasible = feasible || a == action; });
    if (!feasible) {
        throw std::invalid_argument("action " + std::string(name(action.kind)) + " with quanta=" +
                                    std::to_string(action.quanta) +
                                    " is not feasible in the current window (Eq. 10)");
    }
    return acc_.take(state, action);
}

std::vector<double> ForecastModel::row(const ValueTable& table, bool built,
                                       const char* what) const {
    if (!built) {
        throw std::invalid_argument(std::string(what) +
                                    " were not built: no requested policy needs them");
    }
    std::vector<double> out(static_cast<std::size_t>(acc_.work_quanta()) + 1);
    for (int q = 0; q <= acc_.work_quanta(); ++q) out[static_cast<std::size_t>(q)] = table(1, q);
    return out;
}

std::vector<double> ForecastModel::mean_window_plan_values() const {
    return row(window_values_, needs_.window, "mean window-plan values");
}

std::vector<double> ForecastModel::mean_reference_values() const {
    return row(reference_values_, needs_.reference, "mean reference values");
}

std::vector<double> ForecastModel::mean_optimal_values() const {
    return row(optimal_values_, needs_.optimal, "mean optimal values");
}

}  // namespace learnsched
