#include "segment.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "tolerance.hpp"

namespace learnsched {

CostSplit& CostSplit::operator+=(const CostSplit& other) {
    work += other.work;
    save += other.save;
    load += other.load;
    recovery += other.recovery;
    residency += other.residency;
    return *this;
}

SegmentAccounting::SegmentAccounting(Scenario scenario) : scenario_(std::move(scenario)) {
    const HandoffCosts& c = scenario_.costs;
    limits_.reserve(scenario_.windows.size());
    for (const Window& w : scenario_.windows) {
        Limits lim;
        for (int load = 0; load < 2; ++load) {
            const double fixed = (load ? c.load_s : 0.0) + c.recovery_s;
            lim.with_checkpoint[load] = quanta_that_fit(fixed + c.save_s, w.length_s());
            lim.without_checkpoint[load] = quanta_that_fit(fixed, w.length_s());
        }
        limits_.push_back(lim);
    }
}

int SegmentAccounting::quanta_that_fit(double fixed_s, double length_s) const {
    if (!fits_within(fixed_s, length_s)) return -1;
    const int cap = scenario_.work_quanta;
    const double delta = scenario_.quantum_s;
    // Clamp in floating point first: a huge window over a tiny quantum must not overflow int.
    const double estimate = std::floor((length_s - fixed_s) / delta);
    int u = estimate >= cap ? cap : static_cast<int>(std::max(0.0, estimate));
    while (u < cap && fits_within(fixed_s + (u + 1) * delta, length_s)) ++u;
    while (u > 0 && !fits_within(fixed_s + u * delta, length_s)) --u;
    return u;
}

int SegmentAccounting::max_quanta(const State& s, bool checkpoint) const {
    const Limits& lim = limits_[static_cast<std::size_t>(s.window)];
    const int load = pays_load(s) ? 1 : 0;
    return checkpoint ? lim.with_checkpoint[load] : lim.without_checkpoint[load];
}

bool SegmentAccounting::is_feasible(const State& s, const Action& a) const {
    bool found = false;
    for_each_action(s, [&](const Action& candidate) { found = found || candidate == a; });
    return found;
}

Segment SegmentAccounting::take(const State& s, const Action& a) const {
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

    const bool works = a.kind == ActionKind::Publish || a.kind == ActionKind::Advance;
    seg.cost.work = a.quanta * scenario_.quantum_s;
    seg.cost.save = a.checkpoint ? c.save_s : 0.0;
    seg.cost.load = works && pays_load(s) ? c.load_s : 0.0;  // rule 1: paid only when working
    seg.cost.recovery = c.recovery_s;
    const double busy_s = seg.cost.work + seg.cost.save + seg.cost.load + seg.cost.recovery;
    seg.cost.residency = c.residency_rate * busy_s;  // rule 4: (1 + rho) * duration
    seg.ready_s = w.start_s + busy_s;                // rule 3

    if (a.kind == ActionKind::Publish) {
        seg.publish_s = w.start_s + seg.cost.load + seg.cost.work;  // rule 3
        seg.benefit = scenario_.benefit_rate * std::max(0.0, scenario_.horizon_s - seg.publish_s);
    } else if (a.checkpoint) {
        const int saved = base(s) + a.quanta;
        seg.next.progress = saved;
        seg.next.durable = saved;
    }
    return seg;
}

}  // namespace learnsched
