// Floating-point tolerances shared by every policy.
//
// Values: the paper grid has exact ties (e.g. Static ROI == 0 in 20 scenarios) whose
// two sides come from different arithmetic paths, and its smallest real margin is one
// checkpoint (0.068075 s-eq.). 1e-9 s-eq. absolute, plus 1e-12 of the magnitude for
// very large values, separates rounding noise from real differences.
//
// Time (Eq. 10): a window's length is only as exact as its endpoints, so the slack
// grows with their magnitude (a few ulps), not with the length: a scheduler that uses
// epoch seconds keeps exact fits without loosening the check.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace learnsched {

inline constexpr double kTieTolerance = 1e-9;           // s-eq. and seconds, absolute
inline constexpr double kRelativeTieTolerance = 1e-12;  // of the larger value's magnitude

// True when a beats b by more than rounding noise (ties keep the incumbent).
inline bool strictly_greater(double a, double b) {
    return a - b > kTieTolerance + kRelativeTieTolerance * std::max(std::abs(a), std::abs(b));
}

// True when a and b are equal up to rounding noise: neither is strictly greater (NaN ties
// nothing).
inline bool ties(double a, double b) {
    const double scale = std::max(std::abs(a), std::abs(b));
    return std::abs(a - b) <= kTieTolerance + kRelativeTieTolerance * scale;
}

// Eq. 10: a segment of `duration_s` fits the window [start_s, end_s].
inline bool fits_within(double duration_s, double start_s, double end_s) {
    const double slack = kTieTolerance + 16 * DBL_EPSILON * std::max(std::abs(start_s), std::abs(end_s));
    return duration_s <= (end_s - start_s) + slack;
}

}  // namespace learnsched
