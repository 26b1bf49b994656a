#include "learnsched/finite/segment.hpp"

#include <cmath>
#include <utility>

#include "learnsched/finite/tolerance.hpp"

namespace learnsched {

CostSplit& CostSplit::operator+=(const CostSplit& other) {
    work += other.work;
    save += other.save;
    load += other.load;
    recovery += other.recovery;
    residency += other.residency;
    return *this;
}

SegmentAccounting::SegmentAccounting(Scenario scenario)
    : scenario_(std::move(scenario)), benefit_(benefit_curve(scenario_)) {
    compute_limits();
}

void SegmentAccounting::reset(const Scenario& scenario) {
    scenario_ = scenario;  // copy-assigned: the windows keep their vector's capacity
    benefit_.assign(scenario_.benefit_rate, scenario_.benefit_schedule, scenario_.horizon_s);
    compute_limits();
}

void SegmentAccounting::compute_limits() {
    const HandoffCosts& c = scenario_.costs;
    limits_.clear();
    limits_.reserve(scenario_.windows.size());
    for (const Window& w : scenario_.windows) {
        std::array<Limits, 2> per_path{};
        for (int p = 0; p < path_count(); ++p) {
            const ReturnPath path = return_path(c, p == 1);
            for (int load = 0; load < 2; ++load) {
                const double fixed = (load ? c.load_s : 0.0) + path.recovery_s;
                per_path[p].with_checkpoint[load] = quanta_that_fit(fixed + c.save_s, w);
                per_path[p].without_checkpoint[load] = quanta_that_fit(fixed, w);
            }
        }
        limits_.push_back(per_path);
    }
}

int SegmentAccounting::quanta_that_fit(double fixed_s, const Window& w) const {
    if (!fits_within(fixed_s, w.start_s, w.end_s)) return -1;
    const int cap = scenario_.work_quanta;
    const double delta = scenario_.quantum_s;
    // Clamp in floating point first: a huge window over a tiny quantum must not overflow int.
    const double estimate = std::floor((w.length_s() - fixed_s) / delta);
    int u = estimate >= cap ? cap : static_cast<int>(std::max(0.0, estimate));
    while (u < cap && fits_within(fixed_s + (u + 1) * delta, w.start_s, w.end_s)) ++u;
    while (u > 0 && !fits_within(fixed_s + u * delta, w.start_s, w.end_s)) --u;
    return u;
}

}  // namespace learnsched
