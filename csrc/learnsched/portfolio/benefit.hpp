// Eq. C.7's benefit with age decay, read with the finite model: an artifact published at t_p
// earns g(v) * 2^(-(v - t_p)/h) at time v until the horizon H, so that
//   Phi(t_p) = integral_{t_p}^{H} g(v) 2^(-(v - t_p)/h) dv,
// g constant or piecewise constant (finite/benefit.hpp). Without a half-life the portfolio uses
// BenefitCurve itself (the finite model's Phi, bit for bit).
#pragma once

#include <vector>

#include "learnsched/finite/benefit.hpp"

namespace learnsched {

class AgedBenefit {
  public:
    AgedBenefit() = default;
    // A validated rate or schedule (validate_benefit_schedule), horizon and half-life h > 0.
    AgedBenefit(double rate, const BenefitSchedule& schedule, double horizon_s, double half_life_s);

    // Phi(t_p), s-eq.: O(log n) for n pieces. With tau = h / ln 2, a piece of rate g over
    // [a, b] earns g tau (e^(-(a - t)/tau) - e^(-(b - t)/tau)); the pieces after t's are
    // summed from the last backwards, each scaled to the start of the one before it, so that
    // every exponent is <= 0.
    double value(double publish_s) const;

  private:
    double tau_s_ = 1.0;
    double horizon_s_ = 0.0;
    std::vector<double> starts_;  // piece starts (-inf for a constant rate)
    std::vector<double> rates_;
    std::vector<double> ends_;    // min(H, next start)
    std::vector<double> later_;   // [i]: what the pieces from i on earn, valued at starts_[i]
};

}  // namespace learnsched
