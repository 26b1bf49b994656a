#include "scenario_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace learnsched {
namespace {

constexpr Move kMoves[] = {Move::Wait, Move::Work, Move::Save, Move::CheckpointReturn,
                           Move::DiscardReturn, Move::Abandon};

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

class TreeSolver {
  public:
    TreeSolver(const std::vector<const UnlentSchedule*>& branches,
               const std::vector<double>& probabilities, std::size_t max_nodes)
        : probabilities_(probabilities), max_nodes_(max_nodes) {
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

    // Expected value from `node` on, given that the truth is one of its branches.
    double value(const Node& node) {
        const CausalSim& head = node.front().sim;
        if (!head.deciding()) return 0.0;
        std::vector<std::uint64_t> key = head.key();
        std::uint64_t mask = 0;
        for (const Member& x : node) mask |= std::uint64_t{1} << x.branch;
        key.push_back(mask);
        if (const auto hit = memo_.find(key); hit != memo_.end()) return hit->second;
        const double total = probability(node);
        double best = -std::numeric_limits<double>::infinity();
        for (const Move move : kMoves) {
            if (!head.allows(move)) continue;
            double sum = 0.0;
            Node after;
            after.reserve(node.size());
            for (const Member& x : node) {
                Member y = x;
                sum += probabilities_[x.branch] * y.sim.apply(move).reward;
                after.push_back(std::move(y));
            }
            for (const Node& group : split(std::move(after))) {
                sum += probability(group) * value(group);
            }
            best = std::max(best, sum / total);
        }
        if (memo_.size() >= max_nodes_) {
            throw std::length_error("the scenario tree has more than " +
                                    std::to_string(max_nodes_) +
                                    " decision nodes: too large to solve exactly");
        }
        memo_.emplace(std::move(key), best);
        return best;
    }

  private:
    const std::vector<double>& probabilities_;
    std::size_t max_nodes_;
    std::vector<std::size_t> agree_;
    std::unordered_map<std::vector<std::uint64_t>, double, KeyHash> memo_;
};

}  // namespace

double stochastic_dp(const std::vector<const UnlentSchedule*>& branches,
                     const std::vector<double>& probabilities, const CausalCandidate& candidate,
                     double from_s, double to_s, std::size_t max_nodes) {
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
    TreeSolver solver(branches, probabilities, max_nodes);
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

}  // namespace learnsched
