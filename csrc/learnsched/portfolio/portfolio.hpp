// A portfolio of self-evolution candidates sharing the idle windows of G GPUs.
//
// Each candidate is a finite-model job (finite/scenario.hpp): J quanta of delta seconds, its own
// benefit Phi(t_p), save and load costs, progress p and durable progress pbar. Every GPU has
// its own calendar of idle windows; the return path (t_ret, rho; optionally the cold
// alternative) is the serving engine's, shared by every candidate. The rules:
//
// - Stages: every GPU's windows in order of start time (ties by GPU index). At a stage one
//   GPU's window is decided: it goes to serving (wait) or to exactly one candidate, which
//   takes one finite-model action there (SegmentAccounting::take on that GPU's calendar:
//   rules 1-9 and Eq. 10 unchanged). Every window ends with capacity returned, so switching
//   candidates between windows costs what the finite model already charges: the new one's
//   load (rule 1) and the old one's checkpoint, paid when it returned (rule 6).
// - A candidate works on one GPU at a time: it is busy from its segment's start until
//   capacity is ready again (ready_s) and may start on any GPU at a window start from then on.
// - An initially active candidate is running on a GPU (the i-th active candidate in list
//   order on GPU i) and is that GPU's until its first window, where that GPU decides it alone
//   (continue, checkpoint-return, discard-return or abandon: rule 8).
// - Budget (App. C.2): optionally at most B GPU-seconds of segments in all, a segment's
//   GPU-seconds being its duration load + u*delta + [save] + t_ret (Eq. 10's left side). A
//   segment that works (publish, advance) must fit what is left; the zero-work returns of an
//   active candidate always may (capacity must come back) and count too.
// - Value (Eq. C.7 read with the finite model, docs/portfolio.md): the sum over candidates
//   of what each publication earns, Phi_c(t_p) = integral_{t_p}^{H_c} g_c(v) a_c(v - t_p) dv
//   with the age decay a_c(age) = 2^(-age / half_life) (none by default: a_c = 1, the finite
//   model's Phi), minus every segment's cost, unfinished work included.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "learnsched/finite/action.hpp"
#include "learnsched/finite/benefit.hpp"
#include "learnsched/finite/scenario.hpp"
#include "learnsched/finite/segment.hpp"
#include "learnsched/finite/value_table.hpp"

namespace learnsched {

// A portfolio, a table or a DP larger than the limits below. A class of its own, so that
// callers can tell "too large to solve" from bad input.
class StateSpaceError : public std::length_error {
  public:
    using std::length_error::length_error;
};

inline constexpr std::size_t kMaxCandidates = std::size_t{1} << 12;
inline constexpr std::size_t kMaxGpus = std::size_t{1} << 10;
// All GPUs' windows together: one decision stage each (a plan holds one step per stage).
inline constexpr std::size_t kMaxStages = kMaxWindows;
// Doubles every candidate's tables on every GPU hold together (table_doubles): 256 MiB.
inline constexpr std::size_t kMaxPortfolioDoubles = std::size_t{1} << 25;

struct PortfolioCandidate {
    std::string name;
    int work_quanta = 0;                // J
    double quantum_s = 0.0;             // delta
    double benefit_rate = 0.0;          // g, s-eq. per second until the horizon
    BenefitSchedule benefit_schedule;   // g(t) by pieces instead (benefit_rate then 0)
    double horizon_s = 0.0;             // H
    double save_s = 0.0;                // t_ck
    double load_s = 0.0;                // t_ld
    std::optional<double> half_life_s;  // age decay of the benefit (Eq. C.7); none: a = 1
    State initial;                      // progress, durable, active (window must be 0)
};

// The return path every candidate shares (the serving engine's).
struct SharedReturn {
    double recovery_s = 0.0;                // t_ret (warm, if two paths)
    double residency_rate = 0.0;            // rho of the warm path
    std::optional<double> cold_recovery_s;  // the cold alternative, if offered
};

struct Portfolio {
    std::vector<std::vector<Window>> gpus;  // one calendar per GPU
    SharedReturn returns;
    std::optional<double> budget_gpu_s;  // total GPU-seconds of segments, if bounded
    std::vector<PortfolioCandidate> candidates;
};

enum class PortfolioPolicy : unsigned char {
    Sequential,    // one by one in list (arrival) order, each by the one-candidate Rollout
    Density,       // greedy: the highest handoff-blind benefit density first
    Earliest,      // greedy: the earliest publication of its Window plan first
    CostedWindow,  // the portfolio reference pi0: the most valuable priced Window plan
    Rollout,       // one-step rollout over pi0 (Eq. 11)
    Dp,            // the exact optimum (Eq. D.2) over the portfolio's states
};
inline constexpr std::array kPortfolioPolicies{
    PortfolioPolicy::Sequential,   PortfolioPolicy::Density, PortfolioPolicy::Earliest,
    PortfolioPolicy::CostedWindow, PortfolioPolicy::Rollout, PortfolioPolicy::Dp};

std::string_view name(PortfolioPolicy policy);
// std::invalid_argument for a value outside the enum.
void check_policy(PortfolioPolicy policy);

// A stage: window `window` of GPU `gpu`.
struct Stage {
    int gpu = 0;
    int window = 0;
    double start_s = 0.0;
};

// One candidate's part of a portfolio state.
struct CandidateState {
    int progress = 0;  // p (unsaved work counts only while active)
    int durable = 0;   // pbar
    bool active = false;
    bool done = false;  // published or abandoned: nothing more to do
    // Busy on a GPU until then (capacity ready); +inf while an active candidate waits for
    // its GPU's first window; -inf when free.
    double busy_until_s = -std::numeric_limits<double>::infinity();
};

// The state at the start of a stage.
struct PortfolioState {
    int stage = 0;
    double gpu_s = 0.0;  // GPU-seconds of segments so far (the budget's count)
    std::vector<CandidateState> candidates;
};

// What a stage's GPU does: candidate -1 waits (the window goes to serving).
struct PortfolioAction {
    int candidate = -1;
    Action action;

    bool operator==(const PortfolioAction& other) const {
        return candidate == other.candidate && action == other.action;
    }
    bool operator!=(const PortfolioAction& other) const { return !(*this == other); }
};

// One stage of a plan: the segment of its candidate (a Wait segment with candidate -1).
struct PortfolioStep {
    int stage = 0;
    int gpu = 0;
    int candidate = -1;
    Segment segment;     // on the GPU's calendar: segment.window is the GPU's window index
    double gpu_s = 0.0;  // the segment's GPU-seconds
};

struct PortfolioPlan {
    PortfolioPolicy policy = PortfolioPolicy::Sequential;
    double value = 0.0;    // benefits - costs, s-eq.
    double benefit = 0.0;  // s-eq.
    double gpu_s = 0.0;    // GPU-seconds of every segment
    CostSplit cost;
    std::vector<double> publish_s;  // per candidate; NaN if it never publishes
    std::vector<PortfolioStep> steps;
};

// Throw std::invalid_argument naming the field of the first problem, StateSpaceError when
// the portfolio exceeds a size limit.
void validate(const Portfolio& portfolio);

// The doubles a prepared portfolio's tables hold: per entry (k, pbar) of every candidate on
// every GPU, sum of (K_g + 1) x (J_c + 1) entries, the Window plan (3), pi0's price and plan
// GPU-seconds (2) and its segment (4); with two return paths each fixed path's plan and
// Costed Window values (8 more); with `sequential`, the one-candidate models (2, or 6 with
// two paths).
std::size_t table_doubles(const Portfolio& portfolio, bool sequential);
// StateSpaceError naming the count if table_doubles exceeds kMaxPortfolioDoubles.
void check_table_size(const Portfolio& portfolio, bool sequential);

// Per candidate, the GPU its initially active candidate runs on (the i-th active candidate
// in list order on GPU i), or -1; std::invalid_argument if more are active than GPUs.
std::vector<int> active_gpus(const Portfolio& portfolio);

// Candidate c alone on GPU `gpu`'s calendar: its finite-model scenario, the shared return
// path with its own save and load, active (with its unsaved work) only on the GPU it runs
// on (`runs_there`), else in service mode with its durable progress. Not validated.
Scenario candidate_scenario(const Portfolio& portfolio, int c, int gpu, bool runs_there);

}  // namespace learnsched
