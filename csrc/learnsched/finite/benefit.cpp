#include "learnsched/finite/benefit.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace learnsched {

BenefitCurve::BenefitCurve(double rate, double horizon_s) : BenefitCurve(rate, {}, horizon_s) {}

BenefitCurve::BenefitCurve(double rate, const BenefitSchedule& schedule, double horizon_s) {
    assign(rate, schedule, horizon_s);
}

void BenefitCurve::assign(double rate, const BenefitSchedule& schedule, double horizon_s) {
    constant_ = schedule.empty();
    constant_rate_ = rate;
    horizon_s_ = horizon_s;
    starts_.clear();
    rates_.clear();
    if (constant_) {
        starts_.push_back(-std::numeric_limits<double>::infinity());
        rates_.push_back(rate);
    }
    for (const BenefitPiece& piece : schedule) {
        if (!rates_.empty() && piece.rate == rates_.back()) continue;  // the same rate goes on
        starts_.push_back(piece.start_s);
        rates_.push_back(piece.rate);
    }
    const std::size_t n = starts_.size();
    ends_.assign(n, horizon_s);
    after_.assign(n, 0.0);
    double later = 0.0;  // summed from the last piece backwards
    for (std::size_t i = n; i-- > 0;) {
        if (i + 1 < n) ends_[i] = std::min(horizon_s, starts_[i + 1]);
        after_[i] = later;
        if (!constant_ && starts_[i] < ends_[i]) later = rates_[i] * (ends_[i] - starts_[i]) + later;
    }
    before_ = later;  // unused for a constant rate, whose first piece starts at -inf
}

std::size_t BenefitCurve::piece_of(double t_s) const {
    const auto after = std::upper_bound(starts_.begin(), starts_.end(), t_s);
    return static_cast<std::size_t>(std::distance(starts_.begin(), after)) - 1;
}

double BenefitCurve::value_after(double start_s, double work_s) const {
    if (constant_) return rates_.front() * std::max(0.0, horizon_s_ - start_s - work_s);
    return value(start_s + work_s);
}

double BenefitCurve::rate_at(double t_s) const {
    if (!(t_s < horizon_s_) || t_s < starts_.front()) return 0.0;
    return rates_[piece_of(t_s)];
}

}  // namespace learnsched
