// The benefit of publishing (paper Section 3.1): Phi(t_p) = integral from t_p to H of the
// benefit rate g(v), s-eq. The finite model's constant rate gives g * (H - t_p)^+; a
// piecewise-constant schedule [[t_0, g_0], [t_1, g_1], ...] gives the benefit over time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace learnsched {

// One piece of a benefit schedule: rate g (s-eq. per second) from start_s until the next
// piece starts (the last piece until the horizon). Before the first piece the rate is 0.
struct BenefitPiece {
    double start_s = 0.0;
    double rate = 0.0;

    bool operator==(const BenefitPiece& other) const {
        return start_s == other.start_s && rate == other.rate;
    }
};

using BenefitSchedule = std::vector<BenefitPiece>;

// Phi over one schedule and horizon, prepared once: O(log n) per value for n pieces.
// Summation order (so that every value is reproducible): the integral over the piece that
// holds t_p, plus the pieces after it summed from the last one backwards.
class BenefitCurve {
  public:
    BenefitCurve() = default;
    // A constant rate g (>= 0, finite): value(t) == g * max(0, H - t) bit for bit.
    BenefitCurve(double rate, double horizon_s);
    // A validated schedule (validate_benefit_schedule), or the constant `rate` if it is
    // empty. Adjacent pieces of equal rate are one piece, so a schedule whose rate never
    // changes from its start on gives the constant's values bit for bit from that start.
    BenefitCurve(double rate, const BenefitSchedule& schedule, double horizon_s);
    // The same curve in the memory this one holds (Model::rebuild allocates nothing).
    void assign(double rate, const BenefitSchedule& schedule, double horizon_s);

    // Phi(t_p) = integral_{t_p}^{H} g(v) dv (0 from H on), s-eq.
    double value(double publish_s) const;
    // Static ROI's handoff-blind benefit of publishing `work_s` after `start_s`:
    // Phi(start_s + work_s), rounded as g * max(0, (H - start_s) - work_s) for a constant rate.
    double value_after(double start_s, double work_s) const;
    // g(t), s-eq. per second (0 before the first piece and from H on).
    double rate_at(double t_s) const;
    bool constant() const { return constant_; }
    double horizon_s() const { return horizon_s_; }

  private:
    std::size_t piece_of(double t_s) const;  // the last piece starting at or before t_s

    bool constant_ = true;
    double constant_rate_ = 0.0;  // rates_[0] of a constant curve, read without the vector
    double horizon_s_ = 0.0;
    std::vector<double> starts_{0.0};  // piece starts, increasing (-inf for a constant rate)
    std::vector<double> rates_{0.0};
    std::vector<double> ends_{0.0};    // min(H, next start): where each piece stops earning
    std::vector<double> after_{0.0};   // integral over every later piece, s-eq.
    double before_ = 0.0;              // Phi at the first start: the whole schedule's integral
};

// Inline: every publish reward of the value-table loops calls it.
inline double BenefitCurve::value(double publish_s) const {
    // The one piece from -inf, branch-free and without reading the vectors: bit for bit the
    // general path's g * (H - t) + 0.0 before H and its 0 from H on (and for NaN), since
    // g * 0 + 0.0 is +0.0 (the + 0.0 also keeps a -0.0 rate's product +0.0).
    if (constant_) return constant_rate_ * std::max(0.0, horizon_s_ - publish_s) + 0.0;
    if (!(publish_s < horizon_s_)) return 0.0;        // (H - t)^+ = 0 (and NaN earns nothing)
    if (publish_s < starts_.front()) return before_;  // no rate before the first piece
    const std::size_t i = starts_.size() == 1 ? 0 : piece_of(publish_s);
    // One piece from -inf: g * (H - t) + 0.0, exactly the constant's g * max(0, H - t).
    return rates_[i] * (ends_[i] - publish_s) + after_[i];
}

}  // namespace learnsched
