// A prepared scenario: validated once, with every policy's continuation values cached,
// so that a scheduler can ask for a decision at each window in O(log J) (decision_index.hpp).
// Only the tables the policies asked for are built, and a model can be rebuilt in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "learnsched/finite/decision_index.hpp"
#include "learnsched/finite/decision_memo.hpp"
#include "learnsched/finite/guard.hpp"
#include "learnsched/finite/path_reference.hpp"
#include "learnsched/finite/policy.hpp"
#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

// A plan without its steps: what a batch keeps of each plan.
struct PlanSummary {
    double value = 0.0;
    double benefit = 0.0;
    double publish_s = 0.0;  // NaN if never published
    CostSplit cost;
};

// A policy's whole plan from the initial state: one segment per window visited.
struct Plan {
    Policy policy = Policy::Never;
    double value = 0.0;      // benefit - cost, s-eq.
    double benefit = 0.0;    // Phi(t_p), s-eq.
    double publish_s = 0.0;  // NaN if the plan never publishes
    CostSplit cost;
    std::vector<Segment> steps;
};

// Many decision states as columns of equal length (numpy arrays from Python): state i is
// (window[i], progress[i], durable[i], active[i] != 0).
struct StateColumns {
    const int* window = nullptr;
    const int* progress = nullptr;
    const int* durable = nullptr;
    const std::uint8_t* active = nullptr;
    std::size_t size = 0;

    State at(std::size_t i) const {
        return State{window[i], progress[i], durable[i], active[i] != 0};
    }
};

// Their actions as columns: kind (ActionKind's value), quanta, checkpoint and cold.
struct ActionColumns {
    std::uint8_t* kind = nullptr;
    int* quanta = nullptr;
    bool* checkpoint = nullptr;
    bool* cold = nullptr;
};

class Model {
  public:
    // Validates the scenario (std::invalid_argument) and builds the Window, Costed
    // Window and optimal value tables: O(K * J) time and memory.
    explicit Model(Scenario scenario);
    // The same with only the tables `tables` asks for (V^pi0 brings V_G: its actions
    // read it). Decisions and values that read a table not built throw (require_tables).
    Model(Scenario scenario, TableNeeds tables);

    // Prepare another scenario in this model's memory: each table, the lookahead indexes and
    // the window limits keep their capacity, so repeated builds skip a fresh model's
    // allocation and first touch (page faults). A scenario that fails validation
    // (std::invalid_argument) leaves the model unchanged; a failed allocation leaves it with
    // no tables.
    void rebuild(const Scenario& scenario, TableNeeds tables = kAllTables);
    // The same for a scenario that already passed validate() (solve_batch checks every
    // scenario before it starts): validation is skipped.
    void rebuild_validated(const Scenario& scenario, TableNeeds tables);

    const Scenario& scenario() const { return acc_.scenario(); }
    const TableNeeds& tables() const { return built_; }

    // The policy's action in `state` (std::invalid_argument for an invalid state, policy or
    // guard). `guard` is read by Policy::Guarded only. Costed Window's, Rollout's and DP's
    // decisions are remembered per state from the second call on (decision_memo.hpp).
    Action decide(const State& state, Policy policy, const Guard& guard = {}) const;
    // decide() for every state of `states`, written to `out` (each column states.size()
    // long). The policy and guard are checked once; std::invalid_argument names the first
    // invalid state as "states[i]: ...". Remembered decisions are read first; the others
    // are computed (in locality order) and remembered.
    void decide_many(const StateColumns& states, Policy policy, const Guard& guard,
                     const ActionColumns& out) const;
    // Follow the policy from the initial state to publication or the last window.
    Plan solve(Policy policy, const Guard& guard = {}) const;
    // solve() without the steps: the same value, benefit, publication time and costs.
    PlanSummary summarize(Policy policy, const Guard& guard = {}) const;

    // The accounting that prices every action (Eq. 10, rewards, successors).
    const SegmentAccounting& accounting() const { return acc_; }
    // Q^pi0(s, a) = R(s, a) + V^pi0(s') (Eq. 11) of a feasible action in a valid state;
    // std::invalid_argument otherwise, or if V^pi0 was not built.
    double reference_score(const State& state, const Action& action) const;

    double window_plan_value(const State& state) const;  // V_G
    double reference_value(const State& state) const;    // V^pi0 (Costed Window)
    double optimal_value(const State& state) const;      // V* (Eq. D.2)

    // std::invalid_argument naming the first table `policy` reads that was not built.
    void require_tables(Policy policy) const;

  private:
    void build_tables(TableNeeds tables);
    // Walk the plan from the initial state, passing each segment to `visit`.
    template <class Visit>
    PlanSummary walk(Policy policy, const Guard& guard, Visit&& visit) const;
    // std::invalid_argument naming `reader` and the first of `needs` that was not built.
    void require(const TableNeeds& needs, const char* reader) const;
    Action choose(const State& s, Policy policy, const Guard& guard) const;
    // choose() for every state of `states` (valid), each passed to write(i, action); with a
    // memo, each state is looked up there first and each computed action stored. Returns
    // the number of states found in the memo.
    template <class Write>
    std::size_t decide_columns(const StateColumns& states, Policy policy, const Guard& guard,
                               const DecisionMemo::Table* memo, Write&& write) const;
    // Ask the cache for the table entries a decision in `s` reads (decide_many, a few states
    // ahead: on tables larger than the caches each decision would wait for them otherwise).
    void prefetch(const State& s, Policy policy) const;
    static constexpr std::size_t kPrefetchAhead = 8;
    static constexpr std::size_t kMemoAhead = 16;  // a memo lookup is one load: further ahead
    Action costed_window_action(const State& s) const;
    Action guarded_action(const State& s, const Guard& guard) const;

    SegmentAccounting acc_;
    TableNeeds built_;
    ValueTable window_values_;
    ValueTable reference_values_;
    ValueTable optimal_values_;
    DequeScratch scratch_;  // V*'s deque rows, kept while small (see build_tables)
    PathChoiceReference path_reference_;  // pi0 with two return paths (path_reference.hpp)
    // Lookahead indexes over the Rollout (V^pi0) and DP (V*) continuations, built lazily.
    AdvanceIndex reference_index_;
    AdvanceIndex optimal_index_;
    DecisionMemo memo_;  // every decision asked again since the (re)build
};

}  // namespace learnsched
