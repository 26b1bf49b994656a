#include "learnsched/finite/action.hpp"

namespace learnsched {

std::string_view name(ActionKind kind) {
    switch (kind) {
        case ActionKind::Wait: return "wait";
        case ActionKind::Abandon: return "abandon";
        case ActionKind::CheckpointReturn: return "checkpoint_return";
        case ActionKind::DiscardReturn: return "discard_return";
        case ActionKind::Publish: return "publish";
        case ActionKind::Advance: return "advance";
    }
    return "unknown";
}

}  // namespace learnsched
