// The six policies of the finite experiment (paper Sections 4.1-4.2, App. D), and the
// guarded rollout the paper names as the condition for online use (Section 4.2, App. D.3).
#pragma once

#include <array>
#include <string_view>
#include <vector>

namespace learnsched {

enum class Policy : unsigned char {
    Never,         // wait; an active candidate abandons
    Window,        // greedy: publish if it fits, else the most checkpointed quanta
    StaticRoi,     // Window, gated by a handoff-blind return on investment
    CostedWindow,  // pi0: Window, gated by the fully priced value of the Window plan
    Rollout,       // LearnSched: one-step rollout over pi0 (Eq. 11)
    Dp,            // exact optimum (Eq. D.2)
    Guarded,       // rollout that replaces pi0's action only by a score margin > 2*epsilon (Eq. D.5)
};
inline constexpr std::array kFinitePolicies{
    Policy::Never,   Policy::Window, Policy::StaticRoi, Policy::CostedWindow,
    Policy::Rollout, Policy::Dp,     Policy::Guarded};

std::string_view name(Policy policy);
// std::invalid_argument naming a value outside the enum (an integer from Python can be any).
[[noreturn]] void invalid_policy(Policy policy);
inline void check_policy(Policy policy) {
    if (name(policy) == "unknown") invalid_policy(policy);
}

// Which continuation tables decisions read. Never, Window and Static ROI read none;
// Costed Window prices the Window plan (V_G); Rollout and Guarded score by V^pi0 and take
// pi0's action by V_G; Dp reads V*.
struct TableNeeds {
    bool window = false;     // V_G
    bool reference = false;  // V^pi0 (building it reads V_G)
    bool optimal = false;    // V*

    TableNeeds& operator|=(const TableNeeds& other);
    // Every table `other` needs is here (inline: each decision asks).
    bool covers(const TableNeeds& other) const {
        return (window || !other.window) && (reference || !other.reference) &&
               (optimal || !other.optimal);
    }
};

inline constexpr TableNeeds kAllTables{true, true, true};

// None for a value outside the enum (inline: each decision asks).
inline TableNeeds table_needs(Policy policy) {
    switch (policy) {
        case Policy::Never:
        case Policy::Window:
        case Policy::StaticRoi: return {};
        case Policy::CostedWindow: return {true, false, false};
        case Policy::Rollout:
        case Policy::Guarded: return {true, true, false};
        case Policy::Dp: return {false, false, true};
    }
    return {};
}
// Every table some of `policies` reads; std::invalid_argument for a value outside the enum.
TableNeeds table_needs(const std::vector<Policy>& policies);

}  // namespace learnsched
