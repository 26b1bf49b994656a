#include "learnsched/causal/sim.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "learnsched/check.hpp"

namespace learnsched {

CausalSim::CausalSim(const UnlentSchedule& schedule, const CausalCandidate& candidate,
                     double from_s, double to_s)
    : schedule_(&schedule),
      c_(std::make_shared<const CausalCandidate>(prepare(candidate))),
      to_s_(to_s) {
    if (!std::isfinite(from_s) || !std::isfinite(to_s) || !(to_s > from_s)) {
        throw std::invalid_argument("the horizon must be finite with end > start, got [" +
                                    std::to_string(from_s) + ", " + std::to_string(to_s) + ")");
    }
    const RequestTrace& trace = schedule.trace();
    if (to_s > trace.arrival.back()) {
        throw std::invalid_argument("the horizon ends at " + std::to_string(to_s) +
                                    ", after the trace's last request at " +
                                    std::to_string(trace.arrival.back()));
    }
    from_s_ = from_s;
    next_ = static_cast<std::size_t>(
        std::lower_bound(trace.arrival.begin(), trace.arrival.end(), from_s) -
        trace.arrival.begin());
    free_ = next_ > 0 ? schedule.finish(next_ - 1) : -kInf;
    next_gap();
}

bool CausalSim::allows(Move move) const {
    if (!deciding_) return false;
    switch (move) {
        case Move::Wait: return !point_.lent;
        case Move::Work: return true;
        case Move::Save:
        case Move::CheckpointReturn: return point_.lent && point_.progress > point_.durable;
        case Move::DiscardReturn:
        case Move::Abandon: return point_.lent;
    }
    return false;
}

void CausalSim::next_gap(bool serve_arrival) {
    const RequestTrace& trace = schedule_->trace();
    const std::size_t n = trace.size();
    // The state in locals, written back once: the trace's arrays could alias this
    // object's fields, so the chain of finish times would otherwise go through memory.
    std::size_t i = next_;
    double free = free_;
    StepResult tally = pending_;
    // Serve FIFO until the queue empties in the horizon (idle from `free` on).
    while (i < n && (serve_arrival || !(trace.arrival[i] > free && free >= from_s_))) {
        serve_arrival = false;
        free = std::max(trace.arrival[i], free) + trace.service[i];
        const double late = free - trace.deadline[i];
        if (late > kLateToleranceS) {
            ++tally.late_requests;
            tally.lateness_s += late;
        }
        ++i;
    }
    served_ += static_cast<int>(i - next_);
    next_ = i;
    free_ = free;
    pending_ = tally;
    if (i >= n || free >= to_s_ || done_) {
        deciding_ = false;
        return;
    }
    arrival_ = trace.arrival[i];
    point_.t = point_.gap_start = free;
    point_.lent = false;
    deciding_ = true;
}

void CausalSim::end_gap(double ready_s) {
    point_.lent = false;
    free_ = std::max(free_, ready_s);
    next_gap(true);  // the arrival that ended the gap first (the rest of the gap stays idle)
}

CausalSim::StepResult CausalSim::apply(Move move) {
    if (!allows(move)) {
        throw std::invalid_argument(std::string("move ") + name(move) +
                                    " is not allowed at this decision point");
    }
    pending_ = StepResult{};
    const double t = point_.t;
    const double ret = c_->recovery_s;
    const double benefit_before = benefit_;
    const double cost_before = cost_;
    // A loan the arrival cuts short: capacity ready t_ret after it, unsaved work lost.
    const auto cut = [&] {
        spend(arrival_ - t + ret);
        point_.progress = point_.durable;
        end_gap(arrival_ + ret);
    };
    switch (move) {
        case Move::Wait: {
            const double next = t + c_->quantum_s;
            if (next >= arrival_) {
                end_gap(-kInf);
            } else {
                point_.t = next;
            }
            break;
        }
        case Move::Work: {
            double load = 0.0;
            if (!point_.lent) {
                point_.lent = true;
                ++handoffs_;
                load = point_.durable > 0 ? c_->load_s : 0.0;
            }
            const double end = t + load + c_->quantum_s;
            const bool last = point_.progress + 1 == c_->work_quanta;
            if (!by_arrival(end, arrival_)) {  // a quantum counts only if done by the arrival
                cut();
                break;
            }
            ++point_.progress;
            spend(load + c_->quantum_s);
            if (last) {
                benefit_ += c_->benefit.value(end);
                spend(ret);
                point_.durable = point_.progress;
                published_ = done_ = true;
                publish_s_ = end;
                end_gap(end + ret);
            } else {
                point_.t = end;
            }
            break;
        }
        case Move::Save: {
            const double end = t + c_->save_s;
            if (!by_arrival(end, arrival_)) {
                cut();
                break;
            }
            point_.durable = point_.progress;
            ++checkpoints_;
            spend(c_->save_s);
            point_.t = end;
            break;
        }
        case Move::CheckpointReturn: {
            const double end = t + c_->save_s;
            if (!by_arrival(end, arrival_)) {
                cut();
                break;
            }
            point_.durable = point_.progress;
            ++checkpoints_;
            spend(c_->save_s + ret);
            end_gap(end + ret);
            break;
        }
        case Move::DiscardReturn:
            point_.progress = point_.durable;
            spend(ret);
            end_gap(t + ret);
            break;
        case Move::Abandon:
            spend(ret);
            done_ = true;
            end_gap(t + ret);
            break;
    }
    late_ += pending_.late_requests;
    lateness_s_ += pending_.lateness_s;
    pending_.reward = (benefit_ - benefit_before) - (cost_ - cost_before) -
                      c_->lateness_price * pending_.lateness_s;
    value_ += pending_.reward;
    return pending_;
}

void CausalSim::resume(const CausalCandidate& candidate, int progress, int durable) {
    if (deciding_ && point_.lent) {
        throw std::logic_error("a causal run can change candidates only while not lent");
    }
    CausalCandidate next = prepare(candidate);
    if (durable < 0 || progress < durable || progress >= next.work_quanta) {
        throw std::invalid_argument("resume: need 0 <= durable <= progress < work_quanta, got " +
                                    std::to_string(durable) + ", " + std::to_string(progress));
    }
    c_ = std::make_shared<const CausalCandidate>(std::move(next));
    point_.progress = progress;
    point_.durable = durable;
    done_ = published_ = false;
    if (!deciding_) next_gap();
}

double CausalSim::bound() const {
    if (!deciding_) return 0.0;
    const int rest = c_->work_quanta - (point_.lent ? point_.progress : point_.durable);
    return c_->benefit.value(point_.t + rest * c_->quantum_s);  // Phi never rises with t_p
}

std::vector<std::uint64_t> CausalSim::key() const {
    const auto bits = [](double x) {
        std::uint64_t b = 0;
        std::memcpy(&b, &x, sizeof b);
        return b;
    };
    return {static_cast<std::uint64_t>(next_),
            bits(free_),
            bits(point_.t),
            bits(point_.gap_start),
            static_cast<std::uint64_t>(point_.progress),
            static_cast<std::uint64_t>(point_.durable),
            static_cast<std::uint64_t>(point_.lent) | (static_cast<std::uint64_t>(done_) << 1) |
                (static_cast<std::uint64_t>(deciding_) << 2)};
}

}  // namespace learnsched
