#include "learnsched/finite/model.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "learnsched/finite/reference_policies.hpp"
#include "learnsched/finite/state_order.hpp"
#include "learnsched/finite/tolerance.hpp"

namespace learnsched {
namespace {

Scenario validated(Scenario scenario) {
    validate(scenario);
    return scenario;
}

// The first feasible action in canonical order: DP's incumbent, so that ties keep it.
Action first_action(const SegmentAccounting& acc, const State& s) {
    if (!s.active) return Action{ActionKind::Wait, 0, false};
    Action first{ActionKind::Abandon, 0, false};
    if (!acc.fits(s, first)) first = first.by_path(true);  // validated: some path fits
    return first;
}

}  // namespace

Model::Model(Scenario scenario) : Model(std::move(scenario), kAllTables) {}

Model::Model(Scenario scenario, TableNeeds tables) : acc_(validated(std::move(scenario))) {
    build_tables(tables);
}

void Model::rebuild(const Scenario& scenario, TableNeeds tables) {
    validate(scenario);
    rebuild_validated(scenario, tables);
}

void Model::rebuild_validated(const Scenario& scenario, TableNeeds tables) {
    built_ = TableNeeds{};  // the old tables no longer match
    acc_.reset(scenario);
    build_tables(tables);
}

void Model::build_tables(TableNeeds tables) {
    tables.window = tables.window || tables.reference;  // Costed Window's actions read V_G
    built_ = TableNeeds{};  // until every requested table is complete
    const int K = acc_.window_count();
    const int J = acc_.work_quanta();
    memo_.reset(K, J);  // decisions of the old tables forgotten
    // The lookahead indexes served the old tables: emptied, their memory kept.
    reference_index_.reset(K, J, acc_.path_count());
    optimal_index_.reset(K, J, acc_.path_count());
    // V* first: its two scratch rows are freed before a fresh model allocates the others
    // when they are large, so they never add to the peak of three tables; small ones stay
    // for the next rebuild (a batch worker then allocates nothing per scenario).
    if (tables.optimal) {
        optimal_values_.reset(K, J);
        fill_optimal_values(acc_, optimal_values_, scratch_);
        if (scratch_.keys.capacity() * sizeof(double) >= kMappedBlockBytes) scratch_ = {};
    }
    if (tables.window) {
        window_values_.reset(K, J);
        fill_window_plan_values(acc_, window_values_);
    }
    const bool two_paths = acc_.path_count() == 2;
    if (tables.window && two_paths) path_reference_.build(acc_);  // pi0's fixed-path tables
    if (tables.reference) {
        reference_values_.reset(K, J);
        if (two_paths) {
            path_reference_.fill_values(acc_, reference_values_);
        } else {
            fill_reference_values(acc_, window_values_, reference_values_);
        }
    }
    built_ = tables;
}

void Model::require(const TableNeeds& needs, const char* reader) const {
    if (built_.covers(needs)) return;
    const char* table = needs.window && !built_.window         ? "window-plan values V_G"
                        : needs.reference && !built_.reference ? "reference values V^pi0"
                                                               : "optimal values V*";
    throw std::invalid_argument(std::string(reader) + " reads the " + table +
                                ", which this model was built without");
}

void Model::require_tables(Policy policy) const {
    const TableNeeds needs = table_needs(policy);
    if (!built_.covers(needs)) require(needs, ("policy " + std::string(name(policy))).c_str());
}

Action Model::costed_window_action(const State& s) const {
    if (acc_.path_count() == 2) return path_reference_.action(s);
    return learnsched::costed_window_action(acc_, window_values_, s);
}

Action Model::guarded_action(const State& s, const Guard& guard) const {
    const Action a0 = costed_window_action(s);
    if (!guard.noise && guard.scores == nullptr) {  // exact: Rollout's lookahead, then Eq. D.5
        const ScoredAction best = lookahead(acc_, reference_values_, reference_index_, s, a0);
        const double q0 = action_value(acc_, reference_values_, s, a0);
        return best.action != a0 && strictly_greater(best.value, q0 + 2.0 * guard.epsilon)
                   ? best.action
                   : a0;
    }
    // Estimates can reorder the scores (and are asked for every action): the full scan.
    // Qhat(s, a) is the user's estimate, or Q^pi0(s, a) + e_a for score noise.
    auto score = [&](const Action& a) {
        if (guard.scores != nullptr) return checked_estimate(*guard.scores, s, a);
        const double e = guard.noise(s, a);
        if (!std::isfinite(e)) {
            throw std::invalid_argument("score noise must be finite, got " + std::to_string(e) +
                                        " for action " + std::string(name(a.kind)));
        }
        return action_value(acc_, reference_values_, s, a) + e;
    };
    const double q0 = score(a0);
    Action best = a0;
    double best_q = q0;
    acc_.for_each_action(s, [&](const Action& a) {
        if (a == a0) return;
        const double q = score(a);
        if (strictly_greater(q, best_q)) {
            best = a;
            best_q = q;
        }
    });
    return best != a0 && strictly_greater(best_q, q0 + 2.0 * guard.epsilon) ? best : a0;  // Eq. D.5
}

Action Model::choose(const State& s, Policy policy, const Guard& guard) const {
    switch (policy) {
        case Policy::Never: return never_action(acc_, s);
        case Policy::Window: return window_action(acc_, s);
        case Policy::StaticRoi:
            return strictly_greater(static_roi(acc_, s), 0.0) ? window_action(acc_, s)
                                                               : decline_action(acc_, s);
        case Policy::CostedWindow: return costed_window_action(s);
        case Policy::Rollout:  // Eq. 11: keep pi0's action unless another scores strictly higher
            return lookahead(acc_, reference_values_, reference_index_, s, costed_window_action(s))
                .action;
        case Policy::Dp:  // from wait (or abandon), which leads the canonical order
            return lookahead(acc_, optimal_values_, optimal_index_, s, first_action(acc_, s)).action;
        case Policy::Guarded: return guarded_action(s, guard);
    }
    invalid_policy(policy);
}

Action Model::decide(const State& state, Policy policy, const Guard& guard) const {
    Action a;
    const DecisionMemo::Table* remembered = memo_.armed(policy);
    if (remembered != nullptr && remembered->find(state, a)) {
        validate(guard);  // the state and tables were checked when it was stored
        return a;
    }
    validate_state(scenario(), state);
    validate(guard);
    require_tables(policy);
    const DecisionMemo::Table* memo = memo_.table(policy);
    a = choose(state, policy, guard);
    if (memo != nullptr) memo->store(state, a);
    return a;
}

template <class Write>
std::size_t Model::decide_columns(const StateColumns& states, Policy policy, const Guard& guard,
                                  const DecisionMemo::Table* memo, Write&& write) const {
    std::size_t hits = 0;
    const auto decide_one = [&](const State& s) {
        Action a;
        if (memo == nullptr) return choose(s, policy, guard);
        if (memo->find(s, a)) {
            ++hits;
            return a;
        }
        a = choose(s, policy, guard);
        memo->store(s, a);
        return a;
    };
    // Each decision depends on its state alone, so any order gives the same columns.
    const std::vector<std::uint32_t> order =
        locality_order(states, acc_.window_count(), acc_.work_quanta());
    if (order.empty()) {
        for (std::size_t i = 0; i < states.size; ++i) {
            if (i + kPrefetchAhead < states.size) {
                prefetch(states.at(i + kPrefetchAhead), policy);
                if (memo != nullptr) memo->prefetch(states.at(i + kPrefetchAhead));
            }
            write(i, decide_one(states.at(i)));
        }
        return hits;
    }
    // The columns are read and written in the order given, through packed copies in the
    // sorted order: their random accesses are then a gather and a scatter in tight loops
    // (many misses in flight at once), not a miss inside every decision. The memo is
    // indexed as the tables are, so it too is read and written nearly in order.
    std::vector<State> sorted(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) sorted[k] = states.at(order[k]);
    std::vector<Action> actions(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k + kPrefetchAhead < sorted.size()) {
            prefetch(sorted[k + kPrefetchAhead], policy);
            if (memo != nullptr) memo->prefetch(sorted[k + kPrefetchAhead]);
        }
        actions[k] = decide_one(sorted[k]);
    }
    for (std::size_t k = 0; k < order.size(); ++k) write(order[k], actions[k]);
    return hits;
}

void Model::decide_many(const StateColumns& states, Policy policy, const Guard& guard,
                        const ActionColumns& out) const {
    check_policy(policy);  // once, not per state
    validate(guard);
    require_tables(policy);  // a table not built is an error, never a read of it
    for (std::size_t i = 0; i < states.size; ++i) {  // the first invalid state in the order given
        try {
            validate_state(scenario(), states.at(i));
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("states[" + std::to_string(i) + "]: " + e.what());
        }
    }
    const auto write = [&](std::size_t i, const Action& a) {
        out.kind[i] = static_cast<std::uint8_t>(a.kind);
        out.quanta[i] = a.quanta;
        out.checkpoint[i] = a.checkpoint;
        out.cold[i] = a.cold;
    };
    const DecisionMemo::Table* memo = memo_.table(policy);
    const auto use = memo != nullptr ? memo->batch_use() : DecisionMemo::Table::Use::Skip;
    if (use != DecisionMemo::Table::Use::Lookup) {
        // States mostly new: looked up (and stored) in the sorted pass, nearly in order, or
        // decided without the memo while batches keep missing it.
        const DecisionMemo::Table* used = use == DecisionMemo::Table::Use::Sorted ? memo : nullptr;
        const std::size_t hits = decide_columns(states, policy, guard, used, write);
        if (used != nullptr) used->batch_hits(hits, states.size);
        return;
    }
    // States mostly asked before: every one looked up first, one load each in the order
    // given (prefetched ahead: the memo is as large as a table), without sorting them; the
    // states missed are then decided as a smaller batch.
    std::vector<std::size_t> missed;
    for (std::size_t i = 0; i < states.size; ++i) {
        if (i + kMemoAhead < states.size) memo->prefetch(states.at(i + kMemoAhead));
        Action a;
        if (memo->find(states.at(i), a)) {
            write(i, a);
        } else {
            missed.push_back(i);
        }
    }
    memo->batch_hits(states.size - missed.size(), states.size);
    if (missed.empty()) return;
    const std::size_t m = missed.size();
    std::vector<int> window(m), progress(m), durable(m);
    std::vector<std::uint8_t> active(m);
    for (std::size_t k = 0; k < m; ++k) {
        const std::size_t i = missed[k];
        window[k] = states.window[i];
        progress[k] = states.progress[i];
        durable[k] = states.durable[i];
        active[k] = states.active[i];
    }
    const StateColumns rest{window.data(), progress.data(), durable.data(), active.data(), m};
    decide_columns(rest, policy, guard, memo,
                   [&](std::size_t k, const Action& a) { write(missed[k], a); });
}

void Model::prefetch(const State& s, Policy policy) const {
#if defined(__GNUC__)
    // The entries most decisions in `s` read besides the lookahead's advances: the
    // continuation after a wait or a discard (durable quanta) and after the advances' start.
    const auto next = [&](const ValueTable& t) {
        __builtin_prefetch(t.row(s.window + 1) + s.durable);
        __builtin_prefetch(t.row(s.window + 1) + acc_.base(s));
    };
    if (policy == Policy::Dp) {
        next(optimal_values_);
    } else if (table_needs(policy).reference) {
        next(reference_values_);
        __builtin_prefetch(window_values_.row(s.window) + s.durable);  // Costed Window's V_G
    }
#else
    (void)s;
    (void)policy;
#endif
}

template <class Visit>
PlanSummary Model::walk(Policy policy, const Guard& guard, Visit&& visit) const {
    validate(guard);
    require_tables(policy);
    PlanSummary sum;
    sum.publish_s = std::numeric_limits<double>::quiet_NaN();
    State s = scenario().initial;
    while (s.window < acc_.window_count()) {
        const Action a = choose(s, policy, guard);
        Segment seg = acc_.take(s, a);
        sum.value += seg.reward();
        sum.benefit += seg.benefit;
        sum.cost += seg.cost;
        if (a.kind == ActionKind::Publish) sum.publish_s = seg.publish_s;
        s = seg.next;
        visit(std::move(seg));
        if (a.is_terminal()) break;
    }
    return sum;
}

Plan Model::solve(Policy policy, const Guard& guard) const {
    Plan plan;
    plan.policy = policy;
    plan.steps.reserve(static_cast<std::size_t>(acc_.window_count()));
    const PlanSummary sum =
        walk(policy, guard, [&](Segment&& seg) { plan.steps.push_back(std::move(seg)); });
    plan.value = sum.value;
    plan.benefit = sum.benefit;
    plan.publish_s = sum.publish_s;
    plan.cost = sum.cost;
    return plan;
}

PlanSummary Model::summarize(Policy policy, const Guard& guard) const {
    return walk(policy, guard, [](Segment&&) {});
}

double Model::reference_score(const State& state, const Action& action) const {
    validate_state(scenario(), state);
    require(TableNeeds{true, true, false}, "reference_score");
    if (!acc_.fits(state, action)) {
        throw std::invalid_argument("action " + std::string(name(action.kind)) + " with quanta=" +
                                    std::to_string(action.quanta) +
                                    " is not feasible in this state (Eq. 10)");
    }
    return action_value(acc_, reference_values_, state, action);
}

double Model::window_plan_value(const State& state) const {
    validate_state(scenario(), state);
    require(TableNeeds{true, false, false}, "window_plan_value");
    return state_value(acc_, window_values_, state,
                       [&](const State& s) { return window_action(acc_, s); });
}

double Model::reference_value(const State& state) const {
    validate_state(scenario(), state);
    require(TableNeeds{true, true, false}, "reference_value");
    return state_value(acc_, reference_values_, state,
                       [&](const State& s) { return costed_window_action(s); });
}

double Model::optimal_value(const State& state) const {
    validate_state(scenario(), state);
    require(TableNeeds{false, false, true}, "optimal_value");
    return state_value(acc_, optimal_values_, state,
                       [&](const State& s) { return choose(s, Policy::Dp, Guard{}); });
}

}  // namespace learnsched
