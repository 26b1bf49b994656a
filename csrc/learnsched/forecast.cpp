#include "forecast.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "parallel.hpp"
#include "reference_policies.hpp"
#include "tolerance.hpp"

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

// The sample's continuation as a scenario of its own: tables are computed backwards, so
// its row 0 equals row k+1 of a calendar whose windows after k are this sample's.
Scenario sample_scenario(const Scenario& current, const Calendar& sample, std::size_t i) {
    Scenario s = current;
    s.windows = sample;
    s.initial = State{};
    const std::string field = "samples[" + std::to_string(i) + "]";
    try {
        validate(s);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(field + ": " + e.what());
    }
    const double end_s = current.windows.front().end_s;
    if (sample.front().start_s < end_s) {
        throw std::invalid_argument(field + ": windows[0] starts at " +
                                    std::to_string(sample.front().start_s) +
                                    " before the current window ends at " + std::to_string(end_s));
    }
    return s;
}

// Row 0 of `table` (durable progress 0..J) appended to `out` at `offset`.
void copy_row(const ValueTable& table, int work_quanta, std::vector<double>& out,
              std::size_t offset) {
    for (int q = 0; q <= work_quanta; ++q) out[offset + static_cast<std::size_t>(q)] = table(0, q);
}

[[noreturn]] void unsupported(Policy policy) {
    throw std::invalid_argument(
        "policies under a forecast must be window, costed_window, rollout or dp, got " +
        std::string(name(policy)));
}

}  // namespace

ForecastModel::Needs ForecastModel::needs_of(const std::vector<Policy>& policies) {
    Needs needs;
    for (const Policy p : policies) {
        switch (p) {
            case Policy::Window: break;
            case Policy::CostedWindow: needs.window = true; break;
            case Policy::Rollout: needs.window = needs.reference = true; break;
            case Policy::Dp: needs.optimal = true; break;
            default: unsupported(p);
        }
    }
    return needs;
}

ForecastModel::ForecastModel(Scenario current, const std::vector<Calendar>& samples,
                             const std::vector<Policy>& policies, int threads)
    : acc_(validated_current(std::move(current))),
      needs_(needs_of(policies)),
      window_values_(1, acc_.work_quanta()),
      reference_values_(1, acc_.work_quanta()),
      optimal_values_(1, acc_.work_quanta()) {
    if (threads < 1) {
        throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
    }
    if (samples.empty()) throw std::invalid_argument("samples must hold at least one calendar");
    if (samples.size() > kMaxSamples) {
        throw std::invalid_argument("samples holds " + std::to_string(samples.size()) +
                                    " calendars, more than the limit of " +
                                    std::to_string(kMaxSamples));
    }
    samples_ = static_cast<int>(samples.size());
    fill_means(samples, threads);
    // Row 0 of V_G: Window's action on the current window, priced with the mean after it.
    evaluate_policy(acc_, window_values_, [&](const State& s) { return window_action(acc_, s); });
}

void ForecastModel::fill_means(const std::vector<Calendar>& samples, int threads) {
    const int J = acc_.work_quanta();
    const std::size_t width = static_cast<std::size_t>(J) + 1;
    const std::size_t n = samples.size();
    // Per-sample rows, written by one worker each, then summed in sample order.
    std::vector<double> window_rows(needs_.window ? n * width : 0, 0.0);
    std::vector<double> reference_rows(needs_.reference ? n * width : 0, 0.0);
    std::vector<double> optimal_rows(needs_.optimal ? n * width : 0, 0.0);
    run_blocks(n, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            if (samples[i].empty()) continue;  // no later window: every continuation is 0
            const SegmentAccounting acc(sample_scenario(acc_.scenario(), samples[i], i));
            const std::size_t offset = i * width;
            if (needs_.window) {
                ValueTable window(acc.window_count(), J);
                evaluate_policy(acc, window, [&](const State& s) { return window_action(acc, s); });
                copy_row(window, J, window_rows, offset);
                if (needs_.reference) {
                    ValueTable reference(acc.window_count(), J);
                    evaluate_policy(acc, reference, [&](const State& s) {
                        return costed_window_action(acc, window, s);
                    });
                    copy_row(reference, J, reference_rows, offset);
                }
            }
            if (needs_.optimal) copy_row(optimal_values(acc), J, optimal_rows, offset);
        }
    });
    const auto mean_into = [&](const std::vector<double>& rows, ValueTable& table) {
        for (int q = 0; q <= J; ++q) {
            double sum = 0.0;
            for (std::size_t i = 0; i < rows.size(); i += width) {
                sum += rows[i + static_cast<std::size_t>(q)];  // in sample order, any threads
            }
            table(1, q) = sum / static_cast<double>(n);
        }
    };
    if (needs_.window) mean_into(window_rows, window_values_);
    if (needs_.reference) mean_into(reference_rows, reference_values_);
    if (needs_.optimal) mean_into(optimal_rows, optimal_values_);
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
            return costed_window_action(acc_, window_values_, state);
        case Policy::Rollout:  // Eq. 11 over the expected reference continuation
            require(needs_.reference);
            return best_action(acc_, reference_values_, state,
                               costed_window_action(acc_, window_values_, state));
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
