#include "learnsched/portfolio/benefit.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace learnsched {

AgedBenefit::AgedBenefit(double rate, const BenefitSchedule& schedule, double horizon_s,
                         double half_life_s)
    : tau_s_(half_life_s / std::log(2.0)), horizon_s_(horizon_s) {
    if (schedule.empty()) {
        starts_.push_back(-std::numeric_limits<double>::infinity());
        rates_.push_back(rate);
    }
    for (const BenefitPiece& piece : schedule) {
        starts_.push_back(piece.start_s);
        rates_.push_back(piece.rate);
    }
    const std::size_t n = starts_.size();
    ends_.assign(n, horizon_s);
    later_.assign(n + 1, 0.0);
    for (std::size_t i = n; i-- > 0;) {
        if (i + 1 < n) ends_[i] = std::min(horizon_s, starts_[i + 1]);
        const double own = ends_[i] > starts_[i] ? rates_[i] * tau_s_ * -std::expm1(-(ends_[i] - starts_[i]) / tau_s_) : 0.0;
        const double rest = i + 1 < n ? std::exp(-(starts_[i + 1] - starts_[i]) / tau_s_) * later_[i + 1] : 0.0;
        later_[i] = std::isfinite(starts_[i]) ? own + rest : 0.0;  // unused for a constant rate
    }
}

double AgedBenefit::value(double publish_s) const {
    if (!(publish_s < horizon_s_)) return 0.0;  // nothing left to earn (and NaN earns nothing)
    const auto after = std::upper_bound(starts_.begin(), starts_.end(), publish_s);
    if (after == starts_.begin()) return std::exp(-(starts_.front() - publish_s) / tau_s_) * later_.front();
    const auto i = static_cast<std::size_t>(std::distance(starts_.begin(), after)) - 1;
    const double own = ends_[i] > publish_s ? rates_[i] * tau_s_ * -std::expm1(-(ends_[i] - publish_s) / tau_s_) : 0.0;
    const double rest = i + 1 < starts_.size() ? std::exp(-(starts_[i + 1] - publish_s) / tau_s_) * later_[i + 1] : 0.0;
    return own + rest;
}

}  // namespace learnsched
