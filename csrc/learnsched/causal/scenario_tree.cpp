#include "learnsched/causal/scenario_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace learnsched {
namespace {

// Requests two traces share from the first on (identical arrival, service, deadline).
std::size_t common_prefix(const RequestTrace& a, const RequestTrace& b) {
    const std::size_t n = std::min(a.size(), b.size());
    std::size_t i = 0;
    while (i < n && a.arrival[i] == b.arrival[i] && a.service[i] == b.service[i] &&
           a.deadline[i] == b.deadline[i]) {
        ++i;
    }
    return i;
}

struct Member {
    std::size_t branch;
    CausalSim sim;
};
using Node = std::vector<Member>;

struct KeyHash {
    std::size_t operator()(const std::vector<std::uint64_t>& key) const {
        std::uint64_t h = 1469598103934665603ull;
        for (const std::uint64_t k : key) h = (h ^ k) * 1099511628211ull;
        return static_cast<std::size_t>(h);
    }
};

// The moves a node weighs. With one branch (the truth known) some are dominated and
// skipped: a save before going on (returning there instead keeps the same work, costs
// less and is ready sooner), and waiting part of a gap then lending (lending at the gap's
// start publishes no later and is ready no later, for the same cost): an idle node either
// lends at once or waits the whole gap through (Skip).
enum class Option : std::uint8_t { Wait, Work, Save, CheckpointReturn, DiscardReturn, Abandon, Skip };
constexpr Option kTreeOptions[] = {Option::Wait, Option::Work, Option::Save,
                                   Option::CheckpointReturn, Option::DiscardReturn,
                                   Option::Abandon};
constexpr Option kTruthOptions[] = {Option::Skip, Option::Work, Option::CheckpointReturn,
                                    Option::DiscardReturn, Option::Abandon};

static_assert(static_cast<int>(Option::Abandon) == static_cast<int>(Move::Abandon),
              "an Option names a Move by the same value");
Move move_of(Option o) { return o == Option::Skip ? Move::Wait : static_cast<Move>(o); }

// Take option `o` from `sim`'s decision point; the reward to the next decision node.
double take(CausalSim& sim, Option o, std::vector<CausalStep>* steps = nullptr) {
    const auto step = [&](Move m) {
        const CausalPoint point = sim.point();
        const CausalSim::StepResult r = sim.apply(m);
        if (steps != nullptr) {
            steps->push_back(CausalStep{point, CausalDecision{{PlanKind::Optimal, 0}, m}, r});
        }
        return r.reward;
    };
    if (o != Option::Skip) return step(move_of(o));
    double reward = 0.0;  // waits until the gap is over (each wait earns nothing)
    const double gap = sim.point().gap_start;
    do {
        reward += step(Move::Wait);
    } while (sim.deciding() && !sim.point().lent && sim.point().gap_start == gap &&
             sim.point().t > gap);
    return reward;
}

class TreeSolver {
  public:
    TreeSolver(const std::vector<const UnlentSchedule*>& branches,
               const std::vector<double>& probabilities, std::size_t max_nodes, bool prune)
        : probabilities_(probabilities), max_nodes_(max_nodes),
          truth_(prune && branches.size() == 1) {
        if (max_nodes_ < 1) throw std::invalid_argument("max_nodes must be >= 1");
        const std::size_t m = branches.size();
        agree_.assign(m * m, 0);
        for (std::size_t a = 0; a < m; ++a) {
            for (std::size_t b = 0; b < m; ++b) {
                agree_[a * m + b] = common_prefix(branches[a]->trace(), branches[b]->trace());
            }
        }
    }

    // Members a scheduler cannot tell apart: the same state, the same requests seen.
    std::vector<Node> split(Node members) const {
        std::vector<Node> groups;
        const std::size_t m = probabilities_.size();
        for (Member& x : members) {
            bool placed = false;
            for (Node& g : groups) {
                const Member& y = g.front();
                const std::size_t seen = x.sim.observed();
                if (seen == y.sim.observed() && agree_[x.branch * m + y.branch] >= seen &&
                    x.sim.key() == y.sim.key()) {
                    g.push_back(std::move(x));
                    placed = true;
                    break;
                }
            }
            if (!placed) groups.push_back(Node{std::move(x)});
        }
        return groups;
    }

    double probability(const Node& node) const {
        double p = 0.0;
        for (const Member& x : node) p += probabilities_[x.branch];
        return p;
    }

    static std::vector<std::uint64_t> key_of(const Node& node) {
        std::vector<std::uint64_t> key = node.front().sim.key();
        std::uint64_t mask = 0;
        for (const Member& x : node) mask |= std::uint64_t{1} << x.branch;
        key.push_back(mask);
        return key;
    }

    // The best option at `node` (solved already).
    Option best(const Node& node) const { return memo_.at(key_of(node)).option; }
    std::size_t nodes() const { return memo_.size(); }

    // Expected value from `node` on, given that the truth is one of its branches.
    double value(const Node& node) {
        const CausalSim& head = node.front().sim;
        if (!head.deciding()) return 0.0;
        std::vector<std::uint64_t> key = key_of(node);
        if (const auto hit = memo_.find(key); hit != memo_.end()) return hit->second.value;
        const double total = probability(node);
        double best = -std::numeric_limits<double>::infinity();
        Option chosen = Option::Wait;
        const auto weigh = [&](Option option) {
            if (!head.allows(move_of(option))) return;
            double sum = 0.0;
            Node after;
            after.reserve(node.size());
            for (const Member& x : node) {
                Member y = x;
                sum += probabilities_[x.branch] * take(y.sim, option);
                after.push_back(std::move(y));
            }
            const std::vector<Node> groups = split(std::move(after));
            // Branch and bound: no future earns more than publishing as early as possible
            // at no cost (CausalSim::bound); an option that cannot beat the best so far
            // is not solved further. Exact: only options that cannot win are cut.
            double bound = sum;
            for (const Node& group : groups) {
                bound += probability(group) * group.front().sim.bound();
            }
            if (!(bound / total > best)) return;
            for (const Node& group : groups) sum += probability(group) * value(group);
            if (sum / total > best) {  // strictly: ties keep the earlier option
                best = sum / total;
                chosen = option;
            }
        };
        if (truth_) {
            for (const Option o : kTruthOptions) weigh(o);
        } else {
            for (const Option o : kTreeOptions) weigh(o);
        }
        if (memo_.size() >= max_nodes_) {
            throw std::overflow_error("the scenario tree has more than max_nodes = " +
                                    std::to_string(max_nodes_) +
                                    " decision nodes: too large to solve exactly");
        }
        memo_.emplace(std::move(key), Solved{best, chosen});
        return best;
    }

  private:
    std::vector<double> probabilities_;
    std::size_t max_nodes_;
    bool truth_;  // one branch: dominated options skipped
    std::vector<std::size_t> agree_;
    struct Solved {
        double value;
        Option option;
    };
    std::unordered_map<std::vector<std::uint64_t>, Solved, KeyHash> memo_;
};

}  // namespace

double stochastic_dp(const std::vector<const UnlentSchedule*>& branches,
                     const std::vector<double>& probabilities, const CausalCandidate& candidate,
                     double from_s, double to_s, std::size_t max_nodes, bool prune) {
    if (branches.empty() || branches.size() > kMaxBranches) {
        throw std::invalid_argument("a scenario tree needs 1 to " + std::to_string(kMaxBranches) +
                                    " branches, got " + std::to_string(branches.size()));
    }
    if (probabilities.size() != branches.size()) {
        throw std::invalid_argument("probabilities must have one entry per branch");
    }
    double sum = 0.0;
    for (std::size_t b = 0; b < probabilities.size(); ++b) {
        if (!(probabilities[b] > 0.0) || !std::isfinite(probabilities[b])) {
            throw std::invalid_argument("probabilities[" + std::to_string(b) +
                                        "] must be finite and > 0, got " +
                                        std::to_string(probabilities[b]));
        }
        sum += probabilities[b];
    }
    if (std::abs(sum - 1.0) > 1e-9) {
        throw std::invalid_argument("probabilities must sum to 1, got " + std::to_string(sum));
    }
    TreeSolver solver(branches, probabilities, max_nodes, prune);
    Node root;
    for (std::size_t b = 0; b < branches.size(); ++b) {
        root.push_back(Member{b, CausalSim(*branches[b], candidate, from_s, to_s)});
    }
    double value = 0.0;
    for (const Node& group : solver.split(std::move(root))) {
        value += solver.probability(group) * solver.value(group);
    }
    return value;
}

ExactSchedule exact_schedule(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                             double from_s, double to_s, std::size_t max_nodes) {
    const std::vector<double> one{1.0};
    TreeSolver solver({&schedule}, one, max_nodes, true);
    Node node{Member{0, CausalSim(schedule, candidate, from_s, to_s)}};
    solver.value(node);
    ExactSchedule out;
    out.nodes = solver.nodes();
    CausalSim& sim = node.front().sim;
    while (sim.deciding()) take(sim, solver.best(node), &out.outcome.steps);  // the replay
    summarize(sim, out.outcome);
    return out;
}

}  // namespace learnsched
