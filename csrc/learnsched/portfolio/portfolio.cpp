#include "learnsched/portfolio/portfolio.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "learnsched/check.hpp"

namespace learnsched {
namespace {

std::string candidate_label(const Portfolio& p, std::size_t c) {
    return joined("candidates[", c, "] (", p.candidates[c].name, ")");
}

// The GPU calendars on their own, so that a bad window is blamed on its GPU.
void validate_calendars(const Portfolio& p) {
    if (p.gpus.empty()) fail("gpus must hold at least one GPU's windows");
    if (p.gpus.size() > kMaxGpus) {
        throw StateSpaceError(joined("gpus must hold at most ", kMaxGpus, " GPUs, got ", p.gpus.size()));
    }
    std::size_t stages = 0;
    for (std::size_t g = 0; g < p.gpus.size(); ++g) {
        Scenario probe;  // one quantum, no costs: only the windows can be wrong
        probe.windows = p.gpus[g];
        probe.work_quanta = 1;
        probe.quantum_s = 1.0;
        try {
            validate(probe);
        } catch (const std::invalid_argument& e) {
            fail("gpus[", g, "]: ", e.what());
        }
        stages += p.gpus[g].size();
    }
    if (stages > kMaxStages) {
        throw StateSpaceError(joined("the GPUs' windows must number at most ", kMaxStages,
                                     " in all, got ", stages));
    }
}

void validate_candidate_fields(const Portfolio& p, std::size_t c, std::set<std::string>& names) {
    const PortfolioCandidate& cand = p.candidates[c];
    if (cand.name.empty()) fail("candidates[", c, "]: name must not be empty");
    if (!names.insert(cand.name).second) {
        fail(candidate_label(p, c), ": name must be unique, '", cand.name, "' is taken");
    }
    if (cand.half_life_s && !(std::isfinite(*cand.half_life_s) && *cand.half_life_s > 0.0)) {
        fail(candidate_label(p, c), ": half_life_s must be finite and > 0, got ", *cand.half_life_s);
    }
    if (cand.initial.window != 0) {
        fail(candidate_label(p, c), ": initial.window must be 0, got ", cand.initial.window);
    }
}

}  // namespace

std::string_view name(PortfolioPolicy policy) {
    switch (policy) {
        case PortfolioPolicy::Sequential: return "sequential";
        case PortfolioPolicy::Density: return "density";
        case PortfolioPolicy::Earliest: return "earliest";
        case PortfolioPolicy::CostedWindow: return "costed_window";
        case PortfolioPolicy::Rollout: return "rollout";
        case PortfolioPolicy::Dp: return "dp";
    }
    return "unknown";
}

void check_policy(PortfolioPolicy policy) {
    if (name(policy) == "unknown") {
        fail("policy must be one of the six PortfolioPolicy values, got ", static_cast<int>(policy));
    }
}

std::vector<int> active_gpus(const Portfolio& portfolio) {
    std::vector<int> gpus(portfolio.candidates.size(), -1);
    int next = 0;
    for (std::size_t c = 0; c < portfolio.candidates.size(); ++c) {
        if (!portfolio.candidates[c].initial.active) continue;
        if (static_cast<std::size_t>(next) >= portfolio.gpus.size()) {
            fail(candidate_label(portfolio, c), ": more candidates are active than there are GPUs (",
                 portfolio.gpus.size(), "): the i-th active candidate runs on gpus[i]");
        }
        gpus[c] = next++;
    }
    return gpus;
}

Scenario candidate_scenario(const Portfolio& portfolio, int c, int gpu, bool runs_there) {
    const PortfolioCandidate& cand = portfolio.candidates[static_cast<std::size_t>(c)];
    Scenario s;
    s.windows = portfolio.gpus[static_cast<std::size_t>(gpu)];
    s.work_quanta = cand.work_quanta;
    s.quantum_s = cand.quantum_s;
    s.benefit_rate = cand.benefit_rate;
    s.benefit_schedule = cand.benefit_schedule;
    s.horizon_s = cand.horizon_s;
    const SharedReturn& r = portfolio.returns;
    s.costs = HandoffCosts{r.recovery_s, r.residency_rate, cand.save_s, cand.load_s, r.cold_recovery_s};
    const State& init = cand.initial;
    s.initial = runs_there ? init : State{0, init.durable, init.durable, false};
    return s;
}

void validate(const Portfolio& portfolio) {
    validate_calendars(portfolio);
    if (const auto& b = portfolio.budget_gpu_s) {
        if (!std::isfinite(*b) || *b < 0.0) fail("budget_gpu_s must be finite and >= 0, got ", *b);
        if (*b > std::numeric_limits<double>::max() / kMagnitudeHeadroom) {
            fail("budget_gpu_s is too large to represent: ", *b);
        }
    }
    const std::size_t count = portfolio.candidates.size();
    if (count == 0) fail("candidates must hold at least one candidate");
    if (count > kMaxCandidates) {
        throw StateSpaceError(
            joined("candidates must number at most ", kMaxCandidates, ", got ", count));
    }
    std::set<std::string> names;
    for (std::size_t c = 0; c < count; ++c) validate_candidate_fields(portfolio, c, names);
    const std::vector<int> runs_on = active_gpus(portfolio);
    check_table_size(portfolio, false);  // before any candidate's windows are read again
    for (std::size_t c = 0; c < count; ++c) {
        for (std::size_t g = 0; g < portfolio.gpus.size(); ++g) {
            const bool there = runs_on[c] == static_cast<int>(g);
            const Scenario s = candidate_scenario(portfolio, static_cast<int>(c), static_cast<int>(g), there);
            try {
                validate(s);
            } catch (const std::invalid_argument& e) {
                const std::string where = portfolio.gpus.size() > 1 ? joined(" on gpus[", g, "]") : "";
                fail(candidate_label(portfolio, c), where, ": ", e.what());
            }
        }
    }
}

namespace {

// Entries (k, pbar) of every candidate on every GPU, and the doubles each holds.
std::pair<double, std::size_t> table_shape(const Portfolio& portfolio, bool sequential) {
    const bool two = portfolio.returns.cold_recovery_s.has_value();
    const std::size_t per_entry = (two ? 17 : 9) + (sequential ? (two ? 6 : 2) : 0);
    // Counted in double: work_quanta are range-checked later, and the sum may not fit.
    double entries = 0.0;
    for (const PortfolioCandidate& c : portfolio.candidates) {
        for (const std::vector<Window>& gpu : portfolio.gpus) {
            entries += (static_cast<double>(gpu.size()) + 1.0) * (std::max(c.work_quanta, 0) + 1.0);
        }
    }
    return {entries, per_entry};
}

}  // namespace

std::size_t table_doubles(const Portfolio& portfolio, bool sequential) {
    const auto [entries, per_entry] = table_shape(portfolio, sequential);
    const double doubles = entries * static_cast<double>(per_entry);
    return doubles >= 1e18 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(doubles);
}

void check_table_size(const Portfolio& portfolio, bool sequential) {
    const std::size_t doubles = table_doubles(portfolio, sequential);
    if (doubles > kMaxPortfolioDoubles) {
        const auto [entries, per_entry] = table_shape(portfolio, sequential);
        throw StateSpaceError(joined(
            "the candidates' tables on every GPU would hold ", entries,
            " entries (sum of (windows + 1) x (work_quanta + 1)) x ", per_entry,
            " doubles, above the limit of ", kMaxPortfolioDoubles, " doubles"));
    }
}

}  // namespace learnsched
