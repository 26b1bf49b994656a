// A prepared scenario: validated once, with every policy's continuation values cached,
// so that a scheduler can ask for a decision at each window in O(J).
// Only the tables the policies asked for are built, and a model can be rebuilt in place.
#pragma once

#include <vector>

#include "guard.hpp"
#include "policy.hpp"
#include "segment.hpp"
#include "value_table.hpp"

namespace learnsched {

// A policy's whole plan from the initial state: one segment per window visited.
struct Plan {
    Policy policy = Policy::Never;
    double value = 0.0;      // benefit - cost, s-eq.
    double benefit = 0.0;    // Phi(t_p), s-eq.
    double publish_s = 0.0;  // NaN if the plan never publishes
    CostSplit cost;
    std::vector<Segment> steps;
};

class Model {
  public:
    // Validates the scenario (std::invalid_argument) and builds the Window, Costed
    // Window and optimal value tables: O(K * J) time and memory.
    explicit Model(Scenario scenario);
    // The same with only the tables `tables` asks for (V^pi0 brings V_G: its actions
    // read it). Decisions and values that read a table not built throw (require_tables).
    Model(Scenario scenario, TableNeeds tables);

    // Prepare another scenario in this model's memory: each table keeps its capacity, so
    // repeated builds skip a fresh model's allocation and first touch (page faults). A
    // scenario that fails validation (std::invalid_argument) leaves the model unchanged;
    // a failed allocation leaves it with no tables.
    void rebuild(Scenario scenario, TableNeeds tables = kAllTables);

    const Scenario& scenario() const { return acc_.scenario(); }
    const TableNeeds& tables() const { return built_; }

    // The policy's action in `state` (std::invalid_argument for an invalid state, policy or
    // guard). `guard` is read by Policy::Guarded only.
    Action decide(const State& state, Policy policy, const Guard& guard = {}) const;
    // Follow the policy from the initial state to publication or the last window.
    Plan solve(Policy policy, const Guard& guard = {}) const;

    double window_plan_value(const State& state) const;  // V_G
    double reference_value(const State& state) const;    // V^pi0 (Costed Window)
    double optimal_value(const State& state) const;      // V* (Eq. D.2)

    // std::invalid_argument naming the first table `policy` reads that was not built.
    void require_tables(Policy policy) const;

  private:
    void build_tables(TableNeeds tables);
    // std::invalid_argument naming `reader` and the first of `needs` that was not built.
    void require(const TableNeeds& needs, const char* reader) const;
    Action choose(const State& s, Policy policy, const Guard& guard) const;
    Action costed_window_action(const State& s) const;
    Action guarded_action(const State& s, const Guard& guard) const;

    SegmentAccounting acc_;
    TableNeeds built_;
    ValueTable window_values_;
    ValueTable reference_values_;
    ValueTable optimal_values_;
};

}  // namespace learnsched
