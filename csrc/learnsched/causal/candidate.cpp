#include "learnsched/causal/candidate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"
#include "learnsched/finite/scenario.hpp"

namespace learnsched {

CausalCandidate prepare(CausalCandidate c) {
    const auto finite_nonnegative = [](const char* field, double v) {
        if (!std::isfinite(v) || v < 0.0) {
            throw std::invalid_argument(std::string(field) + " must be finite and >= 0, got " +
                                        std::to_string(v));
        }
    };
    if (c.work_quanta < 1) {
        throw std::invalid_argument("work_quanta must be >= 1, got " +
                                    std::to_string(c.work_quanta));
    }
    if (!std::isfinite(c.quantum_s) || !(c.quantum_s > 0.0)) {
        throw std::invalid_argument("quantum_s must be finite and > 0, got " +
                                    std::to_string(c.quantum_s));
    }
    finite_nonnegative("recovery_s", c.recovery_s);
    finite_nonnegative("residency_rate", c.residency_rate);
    finite_nonnegative("save_s", c.save_s);
    finite_nonnegative("load_s", c.load_s);
    finite_nonnegative("lateness_price", c.lateness_price);
    Scenario benefit;  // the finite model's benefit rules, checked by its own validation
    benefit.benefit_rate = c.benefit_rate;
    benefit.benefit_schedule = c.benefit_schedule;
    benefit.horizon_s = c.horizon_s;
    validate_benefit(benefit);
    c.benefit = benefit_curve(benefit);
    return c;
}

}  // namespace learnsched
