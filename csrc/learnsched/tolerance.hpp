// Floating-point tolerances shared by every policy.
//
// The paper grid has exact ties (e.g. Static ROI == 0 in 20 scenarios) whose two
// sides are computed along different arithmetic paths; the smallest real margin on
// the grid is one checkpoint (0.068075 s-eq.), so 1e-9 (relative above 1) separates
// rounding noise from real differences by seven orders of magnitude.
#pragma once

#include <algorithm>
#include <cmath>

namespace learnsched {

inline constexpr double kTieTolerance = 1e-9;

// True when a beats b by more than rounding noise (ties keep the incumbent).
inline bool strictly_greater(double a, double b) {
    return a - b > kTieTolerance * std::max({1.0, std::abs(a), std::abs(b)});
}

// Eq. 10 with the same tolerance: a segment of `duration_s` fits a window of `length_s`.
inline bool fits_within(double duration_s, double length_s) {
    return duration_s <= length_s + kTieTolerance * std::max(1.0, std::abs(length_s));
}

}  // namespace learnsched
