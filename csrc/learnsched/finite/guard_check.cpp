#include "learnsched/finite/guard_check.hpp"

#include <cmath>
#include <vector>

namespace learnsched {
namespace {

// Score every feasible action of `s` into `report`; the successors of the non-terminal
// ones go to `visit`.
template <class Visit>
void score_state(const Model& model, const ScoreEstimator& scores, const State& s,
                 ScoreErrorReport& report, Visit&& visit) {
    const SegmentAccounting& acc = model.accounting();
    ++report.states;
    acc.for_each_action(s, [&](const Action& a) {
        const double estimate = checked_estimate(scores, s, a);
        const double exact = model.reference_score(s, a);
        const double error = std::abs(estimate - exact);
        ++report.actions;
        if (report.actions == 1 || error > report.worst) {  // the first, or a larger error
            report.worst = error;
            report.worst_state = s;
            report.worst_action = a;
            report.worst_estimate = estimate;
            report.worst_exact = exact;
        }
        if (!a.is_terminal()) visit(acc.take(s, a).next);
    });
}

}  // namespace

ScoreErrorReport measure_score_error(const Model& model, const ScoreEstimator& scores,
                                     double epsilon, Reach reach) {
    const Guard guard{epsilon, {}, &scores};
    validate(guard);
    model.require_tables(Policy::Guarded);
    const SegmentAccounting& acc = model.accounting();
    const int K = acc.window_count();
    ScoreErrorReport report;
    const auto none = [](const State&) {};
    if (reach == Reach::Guarded) {  // the guarded policy's own path
        for (State s = model.scenario().initial; s.window < K;) {
            score_state(model, scores, s, report, none);
            const Action a = model.decide(s, Policy::Guarded, guard);
            if (a.is_terminal()) break;
            s = acc.take(s, a).next;
        }
        return report;
    }
    // Every reachable state: window 0's initial state, then service states (k, pbar) whose
    // durable progress some plan reaches, one window at a time.
    const auto J = static_cast<std::size_t>(acc.work_quanta());
    std::vector<char> here(J + 1, 0);
    std::vector<char> next(J + 1, 0);
    const auto mark = [&](const State& s) { next[static_cast<std::size_t>(s.durable)] = 1; };
    score_state(model, scores, model.scenario().initial, report, mark);
    for (int k = 1; k < K; ++k) {
        here.swap(next);
        next.assign(J + 1, 0);
        for (std::size_t q = 0; q <= J; ++q) {
            if (here[q] == 0) continue;
            const int pbar = static_cast<int>(q);
            score_state(model, scores, State{k, pbar, pbar, false}, report, mark);
        }
    }
    return report;
}

}  // namespace learnsched
