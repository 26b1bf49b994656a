#include "learnsched/finite/policy.hpp"

#include <stdexcept>
#include <string>

namespace learnsched {

std::string_view name(Policy policy) {
    switch (policy) {
        case Policy::Never: return "never";
        case Policy::Window: return "window";
        case Policy::StaticRoi: return "static_roi";
        case Policy::CostedWindow: return "costed_window";
        case Policy::Rollout: return "rollout";
        case Policy::Dp: return "dp";
        case Policy::Guarded: return "guarded";
    }
    return "unknown";
}

void invalid_policy(Policy policy) {
    throw std::invalid_argument("policy must be one of the seven Policy values, got " +
                                std::to_string(static_cast<int>(policy)));
}

TableNeeds& TableNeeds::operator|=(const TableNeeds& other) {
    window = window || other.window;
    reference = reference || other.reference;
    optimal = optimal || other.optimal;
    return *this;
}

TableNeeds table_needs(const std::vector<Policy>& policies) {
    TableNeeds needs;
    for (const Policy p : policies) {
        if (name(p) == "unknown") {
            throw std::invalid_argument("policies must hold Policy values, got " +
                                        std::to_string(static_cast<int>(p)));
        }
        needs |= table_needs(p);
    }
    return needs;
}

}  // namespace learnsched
