#include "learnsched/portfolio/dp.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

namespace learnsched {
namespace {

template <class T>
void put(std::string& out, const T& value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
}

}  // namespace

PortfolioDp::PortfolioDp(const PortfolioModel& model, std::size_t max_states)
    : model_(model), max_states_(max_states) {
    const auto stages = static_cast<std::size_t>(model.stage_count());
    if (stages > kMaxDpStages) {
        std::ostringstream out;
        out << "dp: the portfolio has " << stages << " stages, above the DP's limit of "
            << kMaxDpStages << " (use another policy)";
        throw StateSpaceError(out.str());
    }
    double bound = static_cast<double>(stages);
    for (const PortfolioCandidate& c : model.portfolio().candidates) bound *= c.work_quanta + 2.0;
    if (bound > static_cast<double>(max_states)) {
        std::ostringstream out;
        out.precision(6);
        out << "dp: up to " << bound << " states (stages x prod (work_quanta + 2)), above the "
            << "limit of " << max_states << ": use fewer candidates, windows or quanta, or "
            << "another policy";
        throw StateSpaceError(out.str());
    }
}

std::string PortfolioDp::key(const PortfolioState& x) const {
    std::string out;
    out.reserve(sizeof(int) + sizeof(double) + x.candidates.size() * (2 * sizeof(int) + 1 + sizeof(double)));
    put(out, x.stage);
    put(out, model_.bounded() ? x.gpu_s : 0.0);
    const double now = model_.stage(x.stage).start_s;
    for (const CandidateState& cs : x.candidates) {
        const bool busy = !cs.done && cs.busy_until_s > now;
        put(out, cs.done ? 0 : cs.progress);
        put(out, cs.done ? 0 : cs.durable);
        put(out, static_cast<char>((cs.active ? 1 : 0) | (cs.done ? 2 : 0)));
        put(out, busy ? cs.busy_until_s : -std::numeric_limits<double>::infinity());
    }
    return out;
}

double PortfolioDp::score(const PortfolioState& x, const PortfolioAction& a) {
    const PortfolioStep step = model_.take(x, a);
    PortfolioState next = x;
    model_.advance(next, step);
    return step.segment.reward() + value(next);  // Eq. D.2: R(x, a) + V*(x')
}

double PortfolioDp::value(const PortfolioState& x) {
    if (x.stage >= model_.stage_count()) return 0.0;
    std::string k = key(x);
    if (const auto it = memo_.find(k); it != memo_.end()) return it->second;
    double best = -std::numeric_limits<double>::infinity();
    model_.for_each_choice(x, [&](const PortfolioAction& a) { best = std::max(best, score(x, a)); });
    if (memo_.size() >= max_states_) {
        std::ostringstream out;
        out << "dp: more than " << max_states_ << " states reached (a budget or overlapping "
            << "GPUs multiply them): use a smaller portfolio or another policy";
        throw StateSpaceError(out.str());
    }
    memo_.emplace(std::move(k), best);
    return best;
}

PortfolioAction PortfolioDp::decide(const PortfolioState& x) {
    PortfolioAction best;
    double best_q = 0.0;
    bool first = true;
    model_.for_each_choice(x, [&](const PortfolioAction& a) {
        const double q = score(x, a);
        if (first || strictly_greater(q, best_q)) {
            best = a;
            best_q = q;
            first = false;
        }
    });
    return best;
}

}  // namespace learnsched
