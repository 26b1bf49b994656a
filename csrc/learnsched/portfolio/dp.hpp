// The exact optimum of a small portfolio (Eq. D.2 over portfolio states): the oracle that
// the other policies are measured against.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "learnsched/portfolio/model.hpp"

namespace learnsched {

// Most states one DP may memoise (about 100 bytes each with three candidates), and most
// stages (its recursion is one frame per stage).
inline constexpr std::size_t kMaxDpStates = std::size_t{1} << 20;
inline constexpr std::size_t kMaxDpStages = std::size_t{1} << 11;

class PortfolioDp {
  public:
    // StateSpaceError when the portfolio has more than kMaxDpStages stages or its states
    // may number more than `max_states` (stages x prod_c (J_c + 2): every candidate's
    // durable progress or done); states reached beyond it while solving (a budget or
    // overlapping GPUs multiply them) raise it too.
    explicit PortfolioDp(const PortfolioModel& model, std::size_t max_states = kMaxDpStates);

    // V*(x) = max_a R(x, a) + V*(x') over for_each_choice (Eq. D.2), 0 after the last stage.
    double value(const PortfolioState& x);
    // The first choice in canonical order that no later one beats by more than the tie
    // tolerance, scored by R + V*.
    PortfolioAction decide(const PortfolioState& x);
    std::size_t states() const { return memo_.size(); }

  private:
    // The state as bytes, with what cannot matter any more cleared (a done candidate's
    // progress, a busy time already past, the GPU-seconds without a budget).
    std::string key(const PortfolioState& x) const;
    double score(const PortfolioState& x, const PortfolioAction& a);

    const PortfolioModel& model_;
    std::size_t max_states_;
    std::unordered_map<std::string, double> memo_;
};

}  // namespace learnsched
