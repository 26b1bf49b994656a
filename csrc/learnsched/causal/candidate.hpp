// The candidate of causal scheduling.
#pragma once

#include "learnsched/finite/benefit.hpp"

namespace learnsched {

// The candidate in causal mode: the finite model's work, benefit and one return path.
struct CausalCandidate {
    int work_quanta = 0;        // J
    double quantum_s = 0.0;     // delta
    double benefit_rate = 0.0;  // g, s-eq./s (0 with a schedule)
    BenefitSchedule benefit_schedule;  // g(t) by pieces, if not empty
    double horizon_s = 0.0;     // H
    double recovery_s = 0.0;    // t_ret
    double residency_rate = 0.0;
    double save_s = 0.0;
    double load_s = 0.0;
    double lateness_price = 0.0;  // s-eq. per late request-second
    BenefitCurve benefit;         // Phi(t_p), made by prepare()
};
// Validate (std::invalid_argument naming the field) and build the benefit curve.
CausalCandidate prepare(CausalCandidate candidate);

}  // namespace learnsched
