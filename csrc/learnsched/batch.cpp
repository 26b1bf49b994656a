#include "batch.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace learnsched {
namespace {

void solve_range(const std::vector<Scenario>& scenarios, const std::vector<Policy>& policies,
                 std::size_t begin, std::size_t end, std::vector<PlanSummary>& out) {
    for (std::size_t i = begin; i < end; ++i) {
        const Model model(scenarios[i]);
        for (std::size_t j = 0; j < policies.size(); ++j) {
            const Plan plan = model.solve(policies[j]);
            out[i * policies.size() + j] =
                PlanSummary{plan.value, plan.benefit, plan.publish_s, plan.cost};
        }
    }
}

}  // namespace

std::vector<PlanSummary> solve_batch(const std::vector<Scenario>& scenarios,
                                     const std::vector<Policy>& policies, int threads) {
    if (threads < 1 || threads > kMaxThreads) {
        throw std::invalid_argument("threads must be in [1, " + std::to_string(kMaxThreads) +
                                    "], got " + std::to_string(threads));
    }
    for (const Policy p : policies) {
        if (name(p) == "unknown") {
            throw std::invalid_argument("policies must hold Policy values, got " +
                                        std::to_string(static_cast<int>(p)));
        }
    }
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
        try {
            validate(scenarios[i]);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("scenarios[" + std::to_string(i) + "]: " + e.what());
        }
    }
    std::vector<PlanSummary> out(scenarios.size() * policies.size());
    const std::size_t workers =
        std::min<std::size_t>(static_cast<std::size_t>(threads), std::max<std::size_t>(scenarios.size(), 1));
    if (workers == 1) {
        solve_range(scenarios, policies, 0, scenarios.size(), out);
        return out;
    }
    // Contiguous blocks: each worker writes only its own rows of `out`.
    std::vector<std::exception_ptr> errors(workers);
    std::vector<std::thread> pool;
    pool.reserve(workers);
    const std::size_t block = (scenarios.size() + workers - 1) / workers;
    try {
        for (std::size_t w = 0; w < workers; ++w) {
            const std::size_t begin = std::min(scenarios.size(), w * block);
            const std::size_t end = std::min(scenarios.size(), begin + block);
            pool.emplace_back([&, w, begin, end] {
                try {
                    solve_range(scenarios, policies, begin, end, out);
                } catch (...) {
                    errors[w] = std::current_exception();
                }
            });
        }
    } catch (...) {  // a thread could not start: let the started ones finish, then report
        for (std::thread& t : pool) t.join();
        throw;
    }
    for (std::thread& t : pool) t.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
    return out;
}

}  // namespace learnsched
