#include "learnsched/finite/batch.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include "learnsched/parallel.hpp"

namespace learnsched {
namespace {

void solve_range(const std::vector<Scenario>& scenarios, const std::vector<Policy>& policies,
                 const TableNeeds& tables, const Guard& guard, std::size_t begin,
                 std::size_t end, std::vector<PlanSummary>& out) {
    std::optional<Model> model;  // one per worker, rebuilt in the memory of the last scenario
    for (std::size_t i = begin; i < end; ++i) {
        if (model) {
            model->rebuild_validated(scenarios[i], tables);  // validated by solve_batch
        } else {
            model.emplace(scenarios[i], tables);
        }
        for (std::size_t j = 0; j < policies.size(); ++j) {
            out[i * policies.size() + j] = model->summarize(policies[j], guard);
        }
    }
}

}  // namespace

std::vector<PlanSummary> solve_batch(const std::vector<Scenario>& scenarios,
                                     const std::vector<Policy>& policies, int threads,
                                     double epsilon) {
    const Guard guard{epsilon, {}};
    validate(guard);
    if (threads < 1 || threads > kMaxThreads) {
        throw std::invalid_argument("threads must be in [1, " + std::to_string(kMaxThreads) +
                                    "], got " + std::to_string(threads));
    }
    const TableNeeds tables = table_needs(policies);  // only these are built
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
        try {
            validate(scenarios[i]);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("scenarios[" + std::to_string(i) + "]: " + e.what());
        }
    }
    std::vector<PlanSummary> out(scenarios.size() * policies.size());
    // Contiguous blocks: each worker writes only its own rows of `out`.
    run_blocks(scenarios.size(), threads, [&](std::size_t begin, std::size_t end) {
        solve_range(scenarios, policies, tables, guard, begin, end, out);
    });
    return out;
}

}  // namespace learnsched
