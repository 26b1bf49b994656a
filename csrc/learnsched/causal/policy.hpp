// Causal policies, the plans they compare, the moves they make and where they decide.
#pragma once

#include <array>
#include <cstdint>

#include "learnsched/finite/policy.hpp"

namespace learnsched {

enum class CausalPolicy : std::uint8_t {
    Never,         // never lend: the baseline every verdict is paired against
    Window,        // lend at once in every gap, save after every quantum, work until done
    CostedWindow,  // Window's plan, gated by its expected priced value under the forecast
    Rollout,       // Eq. 11 over the forecast: R(a) + mean_i V_i^pi0(s'), pi0 on ties
    MeanDp,        // R(a) + mean_i V_i*(s'): each sample's own optimum, averaged
    RiskRollout,   // Rollout over the plans whose return is in time with chance >= level
};
inline constexpr std::array kCausalPolicies{CausalPolicy::Never,   CausalPolicy::Window,
                                            CausalPolicy::CostedWindow, CausalPolicy::Rollout,
                                            CausalPolicy::MeanDp,  CausalPolicy::RiskRollout};
const char* name(CausalPolicy policy);
TableNeeds table_needs(CausalPolicy policy);

// What a causal decision plans (scored to the end of the gap) ...
enum class PlanKind : std::uint8_t {
    Wait,              // not now (re-decided at the next quantum boundary)
    Abandon,           // lent: return and drop the candidate
    CheckpointReturn,  // lent: save and return
    DiscardReturn,     // lent: drop unsaved work and return
    Greedy,            // Window's plan: save after every quantum until published
    Publish,           // work the rest without a save, then publish
    Advance,           // work `quanta` more quanta, then checkpoint and return
    Optimal,           // no plan: the clairvoyant's move, optimal on the known trace
};
inline constexpr std::array kPlanKinds{
    PlanKind::Wait,    PlanKind::Abandon, PlanKind::CheckpointReturn, PlanKind::DiscardReturn,
    PlanKind::Greedy,  PlanKind::Publish, PlanKind::Advance,          PlanKind::Optimal};
struct CausalPlan {
    PlanKind kind = PlanKind::Wait;
    int quanta = 0;
};
const char* name(PlanKind kind);

// ... and the one step it takes now.
enum class Move : std::uint8_t { Wait, Work, Save, CheckpointReturn, DiscardReturn, Abandon };
inline constexpr std::array kMoves{Move::Wait,          Move::Work,
                                   Move::Save,          Move::CheckpointReturn,
                                   Move::DiscardReturn, Move::Abandon};
const char* name(Move move);

// A decision point: time, the gap's start, progress and whether the GPU is lent.
struct CausalPoint {
    double t = 0.0;
    double gap_start = 0.0;
    int progress = 0;
    int durable = 0;
    bool lent = false;
};

}  // namespace learnsched
