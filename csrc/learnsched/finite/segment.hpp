// Segment accounting of one window (finite-model rules 1-8): load, Eq. 10
// feasibility, the timeline, and the cost split of every action.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <vector>

#include "learnsched/finite/action.hpp"
#include "learnsched/finite/scenario.hpp"

namespace learnsched {

// Cost of a segment in s-eq., split by cause (paper Eq. 14's categories).
struct CostSplit {
    double work = 0.0;
    double save = 0.0;
    double load = 0.0;
    double recovery = 0.0;
    double residency = 0.0;

    // The causes' names in the order of as_array(): the one home of the column order.
    static constexpr std::array<const char*, 5> kFields = {"work", "save", "load", "recovery",
                                                           "residency"};
    std::array<double, 5> as_array() const { return {work, save, load, recovery, residency}; }
    double total() const { return work + save + load + recovery + residency; }
    CostSplit& operator+=(const CostSplit& other);
};

// One action taken in one window: its timeline, costs, benefit and successor.
struct Segment {
    int window = 0;
    Action action;
    double start_s = 0.0;    // l_k: every segment starts at the window start
    double publish_s = 0.0;  // NaN unless the action publishes
    double ready_s = 0.0;    // capacity ready again; NaN for Wait
    CostSplit cost;
    double benefit = 0.0;  // Phi(t_p) = g (H - t_p)^+ when publishing
    State next;            // state at the next window (unused when terminal)

    double reward() const { return benefit - cost.total(); }
};

// Precomputed per-window limits and the accounting of every action. The scenario
// must already be validated; actions passed in must come from for_each_action.
class SegmentAccounting {
  public:
    explicit SegmentAccounting(Scenario scenario);
    // Account for another (validated) scenario in the memory this one holds.
    void reset(const Scenario& scenario);

    const Scenario& scenario() const { return scenario_; }
    const BenefitCurve& benefit() const { return benefit_; }
    int window_count() const { return scenario_.window_count(); }
    int work_quanta() const { return scenario_.work_quanta; }
    // 2 when the scenario offers the cold alternative (paths: warm = false, cold = true), else 1.
    int path_count() const { return scenario_.costs.offers_choice() ? 2 : 1; }

    // Rule 1: resuming from a checkpoint in service mode pays t_ld; otherwise 0.
    bool pays_load(const State& s) const { return !s.active && s.durable > 0; }
    // Quanta the window starts from: unsaved work counts only while active.
    int base(const State& s) const { return s.active ? s.progress : s.durable; }
    int remaining(const State& s) const { return scenario_.work_quanta - base(s); }

    // Eq. 10: largest u with load + u*delta + [save] + return <= L_k (-1 if not even u = 0),
    // returning by the warm (or only) path or, if `cold`, by the cold alternative.
    int max_quanta(const State& s, bool checkpoint, bool cold = false) const;
    // The largest over every offered path.
    int max_quanta_any(const State& s, bool checkpoint) const;
    bool can_publish(const State& s, bool cold = false) const {
        return remaining(s) <= max_quanta(s, false, cold);
    }
    bool can_publish_any(const State& s) const { return remaining(s) <= max_quanta_any(s, false); }
    // Eq. 10 for any action from for_each_action's kinds, by the action's own path.
    bool fits(const State& s, const Action& a) const;

    Segment take(const State& s, const Action& a) const;
    double reward(const State& s, const Action& a) const { return take(s, a).reward(); }

    // Every feasible action in the canonical tie-break order of the spec: wait (or
    // abandon, then checkpoint-return if there is unsaved work, discard-return if active);
    // publish; advance
    // with checkpoint for u = max..1; advance without checkpoint for u = max..1. In a
    // two-path scenario each returning action comes by the warm path, then by the cold one.
    template <class Visit>
    void for_each_action(const State& s, Visit&& visit) const;
    // The head of that order: wait or the three returns, then publish (by every path).
    template <class Visit>
    void for_each_leading_action(const State& s, Visit&& visit) const;
    // Its advances with (or without) a checkpoint: u = max..1, warm before cold at each u.
    template <class Visit>
    void for_each_advance(const State& s, bool checkpoint, Visit&& visit) const;

  private:
    struct Limits {
        // Largest u per [pays load] for the checkpointed / unsaved segment, -1 if none.
        std::array<int, 2> with_checkpoint{};
        std::array<int, 2> without_checkpoint{};
    };
    int quanta_that_fit(double fixed_s, const Window& w) const;
    void compute_limits();  // limits_ from scenario_

    Scenario scenario_;
    BenefitCurve benefit_;  // Phi(t_p)
    std::vector<std::array<Limits, 2>> limits_;  // per window, per path (warm, cold)
};

// Inline: the value-table loops use only reward() and next, and the compiler drops the rest.
inline int SegmentAccounting::max_quanta(const State& s, bool checkpoint, bool cold) const {
    const Limits& lim = limits_[static_cast<std::size_t>(s.window)][cold ? 1 : 0];
    const int load = pays_load(s) ? 1 : 0;
    return checkpoint ? lim.with_checkpoint[load] : lim.without_checkpoint[load];
}

inline int SegmentAccounting::max_quanta_any(const State& s, bool checkpoint) const {
    const int warm = max_quanta(s, checkpoint, false);
    return path_count() == 2 ? std::max(warm, max_quanta(s, checkpoint, true)) : warm;
}

inline bool SegmentAccounting::fits(const State& s, const Action& a) const {
    switch (a.kind) {
        case ActionKind::Wait: return !s.active;
        case ActionKind::Abandon:
        case ActionKind::DiscardReturn: return s.active && max_quanta(s, false, a.cold) >= 0;
        // With nothing unsaved there is nothing to checkpoint: that return is discard-return
        // plus a save of nothing, never an action (rule 8 keeps unsaved work).
        case ActionKind::CheckpointReturn:
            return s.active && s.progress > s.durable && max_quanta(s, true, a.cold) >= 0;
        case ActionKind::Publish: return a.quanta == remaining(s) && can_publish(s, a.cold);
        case ActionKind::Advance:
            return a.quanta >= 1 && a.quanta < remaining(s) &&
                   a.quanta <= max_quanta(s, a.checkpoint, a.cold);
    }
    return false;
}

inline Segment SegmentAccounting::take(const State& s, const Action& a) const {
    const HandoffCosts& c = scenario_.costs;
    const Window& w = scenario_.windows[static_cast<std::size_t>(s.window)];
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

    Segment seg;
    seg.window = s.window;
    seg.action = a;
    seg.start_s = w.start_s;
    seg.publish_s = kNone;
    seg.ready_s = kNone;
    seg.next = State{s.window + 1, s.durable, s.durable, false};  // rules 6-8: unsaved work is lost
    if (a.kind == ActionKind::Wait) return seg;  // rule 7: free

    const ReturnPath path = return_path(c, a.cold);
    const bool works = a.kind == ActionKind::Publish || a.kind == ActionKind::Advance;
    seg.cost.work = a.quanta * scenario_.quantum_s;
    seg.cost.save = a.checkpoint ? c.save_s : 0.0;
    seg.cost.load = works && pays_load(s) ? c.load_s : 0.0;  // rule 1: paid only when working
    seg.cost.recovery = path.recovery_s;
    const double busy_s = seg.cost.load + seg.cost.work + seg.cost.save + seg.cost.recovery;
    seg.cost.residency = path.residency_rate * busy_s;  // rule 4: (1 + rho) * duration
    seg.ready_s = w.start_s + busy_s;                   // rule 3

    if (a.kind == ActionKind::Publish) {
        seg.next.progress = seg.next.durable = scenario_.work_quanta;  // complete (plan ends)
        // Rule 3. Summed as busy_s sums (load + work first, then the rest): with every
        // term >= 0 and rounding monotone, publish_s <= ready_s holds exactly.
        seg.publish_s = w.start_s + (seg.cost.load + seg.cost.work);
        seg.benefit = benefit_.value(seg.publish_s);  // Phi(t_p): g * (H - t_p)^+ if constant
    } else if (a.checkpoint) {
        const int saved = base(s) + a.quanta;
        seg.next.progress = saved;
        seg.next.durable = saved;
    }
    return seg;
}

template <class Visit>
void SegmentAccounting::for_each_leading_action(const State& s, Visit&& visit) const {
    const int paths = path_count();
    // Each returning action by every path that fits, warm (or the only path) first.
    auto by_paths = [&](const Action& a) {
        for (int p = 0; p < paths; ++p) {
            const Action variant = a.by_path(p == 1);
            if (fits(s, variant)) visit(variant);
        }
    };
    if (s.active) {
        by_paths(Action{ActionKind::Abandon, 0, false});
        by_paths(Action{ActionKind::CheckpointReturn, 0, true});
        by_paths(Action{ActionKind::DiscardReturn, 0, false});
    } else {
        visit(Action{ActionKind::Wait, 0, false});
    }
    by_paths(Action{ActionKind::Publish, remaining(s), false});
}

template <class Visit>
void SegmentAccounting::for_each_advance(const State& s, bool checkpoint, Visit&& visit) const {
    const int paths = path_count();
    // Eq. 10 per path, looked up once: the hot loop compares u with each path's reach.
    const std::array<int, 2> reach{max_quanta(s, checkpoint, false),
                                   paths == 2 ? max_quanta(s, checkpoint, true) : -1};
    for (int u = std::min(std::max(reach[0], reach[1]), remaining(s) - 1); u >= 1; --u) {
        for (int p = 0; p < paths; ++p) {
            if (u <= reach[static_cast<std::size_t>(p)]) {
                visit(Action{ActionKind::Advance, u, checkpoint, p == 1});
            }
        }
    }
}

template <class Visit>
void SegmentAccounting::for_each_action(const State& s, Visit&& visit) const {
    for_each_leading_action(s, visit);
    for_each_advance(s, true, visit);
    for_each_advance(s, false, visit);
}

}  // namespace learnsched
