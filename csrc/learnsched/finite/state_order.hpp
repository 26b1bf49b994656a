// The order decide_many visits its states in: by window, then by the quanta the window starts
// from, so that consecutive decisions read neighbouring entries of the value tables and of
// the lookahead index rather than random ones, and take the same branches.
#pragma once

#include <cstdint>
#include <vector>

#include "learnsched/finite/model.hpp"

namespace learnsched {

// Indices of the (validated) states of a scenario of `windows` windows and `work_quanta`
// quanta, sorted stably by (window, durable or, if active, progress, active) by two 13-bit
// radix passes over keys below 2 x kMaxStates: O(n). Empty when sorting would not pay:
// fewer than kOrderFrom states, tables of fewer than kOrderTableStates entries (they stay
// in the cache whatever the order, so sorting only adds its own cost: docs/performance.md),
// states already nearly in that order (at most one step back in 64), or more than 2^32 of
// them.
std::vector<std::uint32_t> locality_order(const StateColumns& states, int windows,
                                          int work_quanta);

inline constexpr std::size_t kOrderFrom = std::size_t{1} << 14;
inline constexpr std::uint64_t kOrderTableStates = std::uint64_t{1} << 15;  // 256 KiB a table

}  // namespace learnsched
