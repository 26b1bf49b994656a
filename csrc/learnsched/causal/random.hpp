// SplitMix64: a tiny, fully specified generator (std::uniform_*_distribution is not), so
// that draws are the same on every platform.
#pragma once

#include <cstdint>

namespace learnsched {

inline std::uint64_t next_u64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

inline double uniform(std::uint64_t& state) {  // [0, 1)
    return static_cast<double>(next_u64(state) >> 11) * 0x1.0p-53;
}

}  // namespace learnsched
