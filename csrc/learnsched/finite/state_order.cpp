#include "learnsched/finite/state_order.hpp"

#include <array>
#include <limits>
#include <utility>

namespace learnsched {
namespace {

constexpr int kDigitBits = 13;
constexpr std::size_t kBuckets = std::size_t{1} << kDigitBits;
static_assert(2 * kDigitBits >= 25, "two digits cover every key: 2 x kMaxStates = 2^25");

// One stable counting pass of the LSD radix sort by the digit at `shift` of each entry's key
// (the key sits above the low 32 bits, which hold the index).
void radix_pass(const std::vector<std::uint64_t>& from, std::vector<std::uint64_t>& to, int shift) {
    std::array<std::size_t, kBuckets> start{};
    for (const std::uint64_t e : from) ++start[(e >> shift) & (kBuckets - 1)];
    std::size_t sum = 0;
    for (std::size_t& s : start) sum += std::exchange(s, sum);
    for (const std::uint64_t e : from) to[start[(e >> shift) & (kBuckets - 1)]++] = e;
}

}  // namespace

std::vector<std::uint32_t> locality_order(const StateColumns& states, int windows,
                                          int work_quanta) {
    const std::size_t n = states.size;
    const auto stride = static_cast<std::uint64_t>(work_quanta) + 1;
    const std::uint64_t table = (static_cast<std::uint64_t>(windows) + 1) * stride;
    const bool few = n < kOrderFrom || table < kOrderTableStates;
    if (few || n > std::numeric_limits<std::uint32_t>::max()) return {};
    std::vector<std::uint64_t> entries(n);
    std::size_t steps_back = 0;  // in the order of (window, start): where the tables are read
    std::uint64_t previous = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool active = states.active[i] != 0;
        const int start = active ? states.progress[i] : states.durable[i];
        const std::uint64_t place = static_cast<std::uint64_t>(states.window[i]) * stride +
                                    static_cast<std::uint64_t>(start);
        steps_back += place < previous ? 1 : 0;
        previous = place;
        // Active states after service ones of the same start: one kind of decision at a time.
        entries[i] = (place * 2 + (active ? 1 : 0)) << 32 | i;
    }
    if (steps_back <= n / 64) return {};  // nearly in order already: sorting would not pay
    std::vector<std::uint64_t> sorted(n);
    radix_pass(entries, sorted, 32);
    radix_pass(sorted, entries, 32 + kDigitBits);
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(entries[i]);
    return order;
}

}  // namespace learnsched
