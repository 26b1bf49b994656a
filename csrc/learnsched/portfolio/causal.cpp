#include "learnsched/portfolio/causal.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "learnsched/portfolio/portfolio.hpp"
#include "learnsched/finite/tolerance.hpp"

namespace learnsched {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string at(std::size_t c) { return "candidates[" + std::to_string(c) + "]"; }

void check(const std::vector<CausalCandidate>& candidates, const std::vector<int>& durable,
           const std::vector<CausalForecast>& forecasts, CausalPortfolioPolicy portfolio_policy,
           CausalPolicy policy) {
    const std::size_t n = candidates.size();
    if (n == 0) throw std::invalid_argument("a causal portfolio needs at least one candidate");
    if (n > kMaxCandidates) {
        throw StateSpaceError("a portfolio has at most " + std::to_string(kMaxCandidates) +
                              " candidates, got " + std::to_string(n));
    }
    if (durable.size() != n || forecasts.size() != n) {
        throw std::invalid_argument("give one durable progress and forecast per candidate");
    }
    if (portfolio_policy == CausalPortfolioPolicy::Gain &&
        (policy == CausalPolicy::Window || policy == CausalPolicy::Never)) {
        throw std::invalid_argument("the gain portfolio policy ranks by forecast scores: give "
                                    "candidates a policy that reads a forecast, not " +
                                    std::string(name(policy)));
    }
    const CausalCandidate& first = candidates[0];
    for (std::size_t c = 0; c < n; ++c) {
        const CausalCandidate& k = candidates[c];
        if (!(k.recovery_s == first.recovery_s && k.residency_rate == first.residency_rate &&
              k.lateness_price == first.lateness_price)) {
            throw std::invalid_argument(at(c) + ": the return path (recovery_s, residency_rate) "
                                        "and the lateness price are shared by every candidate");
        }
        if (durable[c] < 0 || durable[c] >= k.work_quanta) {
            throw std::invalid_argument(at(c) + ": durable progress must be in [0, work_quanta), "
                                        "got " + std::to_string(durable[c]));
        }
        const SampleTables* tables = forecasts[c].tables;
        if (tables != nullptr && tables->candidate().work_quanta != k.work_quanta) {
            throw std::invalid_argument(at(c) + ": its forecast's tables were built for another "
                                        "work size");
        }
    }
}

// What a candidate's work left earns per second of it, handoff-blind (Static ROI's timing,
// as the known-window density policy): Phi(t + r delta) / (r delta).
double density(const CausalCandidate& c, double t, int durable) {
    const double work = (c.work_quanta - durable) * c.quantum_s;
    return c.benefit.value(t + work) / work;
}

struct Job {
    int progress = 0;
    int durable = 0;
    bool done = false;
    double publish_s = kNaN;
    int loans = 0;
};

class Driver {
  public:
    Driver(const UnlentSchedule& schedule, const std::vector<CausalCandidate>& candidates,
           const std::vector<int>& durable, const std::vector<CausalForecast>& forecasts,
           double from_s, double to_s, CausalPortfolioPolicy portfolio_policy,
           CausalPolicy policy, double return_level, std::uint64_t seed)
        : forecasts_(forecasts), portfolio_policy_(portfolio_policy), policy_(policy),
          level_(return_level), rng_(seed), jobs_(candidates.size()),
          sim_(schedule, candidates[0], from_s, to_s) {
        candidates_.reserve(candidates.size());
        for (std::size_t c = 0; c < candidates.size(); ++c) {
            candidates_.push_back(prepare(candidates[c]));
            jobs_[c].progress = jobs_[c].durable = durable[c];
        }
        sim_.resume(candidates_[0], durable[0], durable[0]);
    }

    CausalPortfolioOutcome run() {
        for (;;) {
            if (!sim_.deciding()) {
                // Stopped: the horizon is over, or the holder is done (published or
                // abandoned) and the run waits at the next gap for another candidate.
                const int next = first_open();
                if (!jobs_[static_cast<std::size_t>(holder_)].done || next < 0) break;
                hold(next);
                if (!sim_.deciding()) break;
            }
            const CausalPoint point = sim_.point();
            Move move = Move::Wait;
            int lent_to = holder_;
            if (point.lent) {
                move = ask(static_cast<std::size_t>(holder_), point, rng_).move;
            } else {
                lent_to = choose(point);
                if (lent_to >= 0) {
                    hold(lent_to);
                    move = Move::Work;
                    ++jobs_[static_cast<std::size_t>(lent_to)].loans;
                } else {
                    hold(cadence());
                }
            }
            steps_.push_back(CausalPortfolioStep{point.t, lent_to, move});
            sim_.apply(move);
            settle(move);
        }
        return outcome();
    }

  private:
    CausalDecision ask(std::size_t c, const CausalPoint& point, std::uint64_t& rng) {
        return decide(candidates_[c], point, policy_, level_, forecasts_[c], rng, scratch_);
    }

    int first_open() const {
        for (std::size_t c = 0; c < jobs_.size(); ++c) {
            if (!jobs_[c].done) return static_cast<int>(c);
        }
        return -1;
    }

    // Idle: the candidate to lend to now, or -1 to wait a quantum. Ties go to list order.
    // Every candidate reads the same draws of the current gap (one gap, one forecast of its
    // end: common random numbers, so no candidate lends on luckier draws than another).
    int choose(const CausalPoint& point) {
        const std::uint64_t state = rng_;
        std::uint64_t rng = state;
        if (portfolio_policy_ == CausalPortfolioPolicy::Sequential) {
            const int c = first_open();
            const Move move = ask(static_cast<std::size_t>(c), at_point(point, c), rng).move;
            rng_ = rng;
            return move == Move::Work ? c : -1;
        }
        int best = -1;
        double best_key = 0.0;
        for (std::size_t c = 0; c < jobs_.size(); ++c) {
            if (jobs_[c].done) continue;
            rng = state;
            const CausalDecision d = ask(c, at_point(point, static_cast<int>(c)), rng);
            rng_ = rng;
            if (d.move != Move::Work) continue;
            const double key = portfolio_policy_ == CausalPortfolioPolicy::Gain
                                   ? d.value - d.wait_value
                                   : density(candidates_[c], point.t, jobs_[c].durable);
            if (best < 0 || strictly_greater(key, best_key)) {
                best = static_cast<int>(c);
                best_key = key;
            }
        }
        return best;
    }

    // The candidate whose quantum paces waiting: sequential's holder, else the finest.
    int cadence() const {
        if (portfolio_policy_ == CausalPortfolioPolicy::Sequential) return first_open();
        int best = first_open();
        for (std::size_t c = 0; c < jobs_.size(); ++c) {
            if (!jobs_[c].done &&
                candidates_[c].quantum_s < candidates_[static_cast<std::size_t>(best)].quantum_s) {
                best = static_cast<int>(c);
            }
        }
        return best;
    }

    CausalPoint at_point(const CausalPoint& point, int c) const {
        CausalPoint p = point;
        p.progress = jobs_[static_cast<std::size_t>(c)].progress;
        p.durable = jobs_[static_cast<std::size_t>(c)].durable;
        return p;
    }

    void hold(int c) {
        if (c == holder_) return;
        const Job& job = jobs_[static_cast<std::size_t>(c)];
        sim_.resume(candidates_[static_cast<std::size_t>(c)], job.progress, job.durable);
        holder_ = c;
    }

    // The holder's state after a move.
    void settle(Move move) {
        Job& job = jobs_[static_cast<std::size_t>(holder_)];
        job.progress = sim_.point().progress;
        job.durable = sim_.point().durable;
        if (sim_.published()) {
            job.done = true;
            job.publish_s = sim_.publish_s();
        } else if (move == Move::Abandon) {
            job.done = true;
        }
    }

    CausalPortfolioOutcome outcome() {
        CausalPortfolioOutcome out;
        out.value = sim_.value();
        out.benefit = sim_.benefit();
        out.cost = sim_.cost();
        out.lateness_s = sim_.lateness_s();
        out.gpu_s = sim_.cost() / (1.0 + candidates_[0].residency_rate);
        out.late_requests = sim_.late_requests();
        out.requests = sim_.requests();
        out.handoffs = sim_.handoffs();
        out.checkpoints = sim_.checkpoints();
        for (const Job& job : jobs_) {
            out.publish_s.push_back(job.publish_s);
            out.loans.push_back(job.loans);
        }
        out.steps = steps_;
        return out;
    }

    std::vector<CausalCandidate> candidates_;
    const std::vector<CausalForecast>& forecasts_;
    CausalPortfolioPolicy portfolio_policy_;
    CausalPolicy policy_;
    double level_;
    std::uint64_t rng_;
    std::vector<Job> jobs_;
    CausalSim sim_;
    DecisionScratch scratch_;
    std::vector<CausalPortfolioStep> steps_;
    int holder_ = 0;
};

}  // namespace

const char* name(CausalPortfolioPolicy policy) {
    switch (policy) {
        case CausalPortfolioPolicy::Sequential: return "sequential";
        case CausalPortfolioPolicy::Density: return "density";
        case CausalPortfolioPolicy::Gain: return "gain";
    }
    return "?";
}

CausalPortfolioOutcome run_portfolio_causal(const UnlentSchedule& schedule,
                                            const std::vector<CausalCandidate>& candidates,
                                            const std::vector<int>& durable,
                                            const std::vector<CausalForecast>& forecasts,
                                            double from_s, double to_s,
                                            CausalPortfolioPolicy portfolio_policy,
                                            CausalPolicy policy, double return_level,
                                            std::uint64_t seed) {
    check(candidates, durable, forecasts, portfolio_policy, policy);
    return Driver(schedule, candidates, durable, forecasts, from_s, to_s, portfolio_policy,
                  policy, return_level, seed)
        .run();
}

}  // namespace learnsched
