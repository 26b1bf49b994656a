// Window macro-actions (paper Section 4.1) in the canonical tie-break order.
#pragma once

#include <cstdint>
#include <string_view>

namespace learnsched {

enum class ActionKind : std::uint8_t {
    Wait,              // service mode: leave the window to serving
    Abandon,           // active: return capacity and drop the candidate (absorbing)
    CheckpointReturn,  // active: save unsaved work and return without advancing
    DiscardReturn,     // active: drop unsaved work and return (not absorbing)
    Publish,           // finish the remaining quanta and publish
    Advance,           // run `quanta` quanta, optionally checkpoint, and return
};

struct Action {
    constexpr Action(ActionKind kind_ = ActionKind::Wait, int quanta_ = 0, bool checkpoint_ = false,
                     bool cold_ = false)
        : kind(kind_), checkpoint(checkpoint_), cold(cold_), quanta(quanta_) {}

    // Members ordered so that an Action packs into 8 bytes and returns in one register.
    ActionKind kind;
    bool checkpoint;  // save a checkpoint before returning
    bool cold;        // return by the scenario's cold alternative path (two-path scenarios only)
    int quanta;       // quanta advanced in this window (remaining quanta for Publish)

    bool operator==(const Action& other) const {
        return kind == other.kind && quanta == other.quanta && checkpoint == other.checkpoint &&
               cold == other.cold;
    }
    bool operator!=(const Action& other) const { return !(*this == other); }
    // The same action by the other return path.
    Action by_path(bool cold_path) const { return Action{kind, quanta, checkpoint, cold_path}; }
    // Publication and abandonment end the plan.
    bool is_terminal() const { return kind == ActionKind::Publish || kind == ActionKind::Abandon; }
};

std::string_view name(ActionKind kind);

}  // namespace learnsched
