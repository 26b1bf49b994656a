#include "learnsched/causal/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"
#include "learnsched/causal/random.hpp"

namespace learnsched {

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t horizon, std::uint64_t policy) {
    std::uint64_t s = seed;
    std::uint64_t out = next_u64(s);
    s = out ^ (horizon + 0x632be59bd9b4e019ull);
    out = next_u64(s);
    s = out ^ (policy + 0x85157af5ull);
    return next_u64(s);
}

CausalOutcome run_causal(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                         double from_s, double to_s, CausalPolicy policy, double return_level,
                         const CausalForecast& forecast, std::uint64_t seed, bool keep_steps) {
    CausalSim sim(schedule, candidate, from_s, to_s);
    if (forecast.tables != nullptr &&
        forecast.tables->candidate().work_quanta != candidate.work_quanta) {
        throw std::invalid_argument("the forecast's tables were built for another work size");
    }
    CausalOutcome out;
    DecisionScratch scratch;
    std::uint64_t rng = seed;
    while (sim.deciding()) {
        const CausalPoint point = sim.point();
        const CausalDecision d = decide(candidate, point, policy, return_level, forecast, rng,
                                        scratch);
        const CausalSim::StepResult r = sim.apply(d.move);
        if (keep_steps) out.steps.push_back(CausalStep{point, d, r});
    }
    summarize(sim, out);
    return out;
}

void summarize(const CausalSim& sim, CausalOutcome& out) {
    out.value = sim.value();
    out.benefit = sim.benefit();
    out.cost = sim.cost();
    out.lent_s = sim.lent_s();
    out.lateness_s = sim.lateness_s();
    out.late_requests = sim.late_requests();
    out.requests = sim.requests();
    out.handoffs = sim.handoffs();
    out.checkpoints = sim.checkpoints();
    out.published = sim.published();
    out.publish_s = sim.published() ? sim.publish_s() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace learnsched
