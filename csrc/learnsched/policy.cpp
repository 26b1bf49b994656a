#include "policy.hpp"

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

}  // namespace learnsched
