// Decisions remembered per state: a state asked again costs one load instead of
// the policy's lookahead (Rollout's and DP's scan over the window's checkpointed advances).
//
// A decision depends on the state and the model's tables alone, so each one is computed once
// per (re)build and kept as a packed 32-bit action. Per memoised policy (those that read
// tables: Costed Window, Rollout, DP; not Guarded, whose answer depends on its guard):
// - service states (k, pbar, pbar, idle): one 32-bit entry each, indexed k * (J + 1) + pbar;
// - active states (k, p, pbar, active): one 64-bit entry per (k, p) holding the last pbar
//   asked there with its action (a different pbar replaces it).
// Memory: 12 bytes per (window, progress) pair, K * (J + 1) of them, per policy memoised,
// armed on a policy's second call (decide or decide_many) since the (re)build: a model
// rebuilt for one decision, as the control loop's, never arms it, and a single batch pays
// nothing for it. Its storage keeps its capacity across rebuilds as the tables do; blocks
// from kMappedBlockBytes on are mapped afresh when armed again, so only the pages of states
// asked are ever touched. decide_many reads it by the hits of its last batch (Table::Use).
//
// Thread-safe as a const Model is: entries are atomic words (a racing fill writes the same
// value), arming happens under a lock and is published by a release store.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "learnsched/finite/action.hpp"
#include "learnsched/finite/policy.hpp"
#include "learnsched/finite/scenario.hpp"
#include "learnsched/finite/table_storage.hpp"

namespace learnsched {

class DecisionMemo {
  public:
    // One policy's entries: find() a remembered action, store() a computed one.
    class Table {
      public:
        // The action remembered for `s`, if any: only a state that passed validate_state in
        // this build was ever stored, so a hit needs no validation (any other state, valid
        // or not, misses; the indexes are range-checked first).
        bool find(const State& s, Action& out) const {
            if (static_cast<unsigned>(s.window) >= windows_ ||
                static_cast<std::size_t>(static_cast<unsigned>(s.progress)) >= stride_) {
                return false;
            }
            const std::size_t i = index(s);
            if (!s.active) {
                const std::uint32_t word =
                    s.durable == s.progress ? service()[i].load(std::memory_order_relaxed) : 0;
                if (word == 0) return false;
                out = unpack(word);
                return true;
            }
            const std::uint64_t word = active()[i].load(std::memory_order_relaxed);
            if ((word & kActionBits) == 0 || word >> 32 != static_cast<std::uint32_t>(s.durable)) {
                return false;
            }
            out = unpack(static_cast<std::uint32_t>(word));
            return true;
        }
        // Remember `a` for `s` (a valid state of this build).
        void store(const State& s, const Action& a) const;
        // Ask the cache for the entry of a valid state `s` (decide_many, a few states ahead).
        void prefetch(const State& s) const;
        // How decide_many uses the memo, from the share of hits in the last batch that
        // looked its states up: most (Lookup: every state looked up first, in the order
        // given), some (Sorted: each looked up and stored in the sorted pass), or almost
        // none (Skip: a batch of states never asked before pays for the memo's traffic, as
        // much as 25% at J = 360,000, so the next kProbeEvery - 1 batches do without it).
        enum class Use : std::uint8_t { Sorted, Lookup, Skip };
        Use batch_use() const;
        // Record a batch of `size` states that found `hits` of them here (the first batch
        // since arming found an empty memo: it is not a sample).
        void batch_hits(std::size_t hits, std::size_t size) const;

      private:
        friend class DecisionMemo;
        static constexpr std::uint64_t kActionBits = 0xFFFFFFFFULL;
        // An action as a nonzero word (0 marks an entry not filled): kind + 1, checkpoint,
        // cold, quanta (< 2^24: kMaxStates).
        static std::uint32_t pack(const Action& a) {
            return (static_cast<std::uint32_t>(a.kind) + 1) |
                   static_cast<std::uint32_t>(a.checkpoint) << 3 |
                   static_cast<std::uint32_t>(a.cold) << 4 |
                   static_cast<std::uint32_t>(a.quanta) << 5;
        }
        static Action unpack(std::uint32_t word) {
            return Action{static_cast<ActionKind>((word & 7) - 1), static_cast<int>(word >> 5),
                          (word >> 3 & 1) != 0, (word >> 4 & 1) != 0};
        }
        // The entries live in plain storage viewed as atomics (C++17 has no atomic_ref):
        // both have one size and alignment (decision_memo.cpp checks).
        std::atomic<std::uint32_t>* service() const {
            return reinterpret_cast<std::atomic<std::uint32_t>*>(
                const_cast<std::uint32_t*>(service_storage_.data()));
        }
        std::atomic<std::uint64_t>* active() const {
            return reinterpret_cast<std::atomic<std::uint64_t>*>(
                const_cast<std::uint64_t*>(active_storage_.data()));
        }
        std::size_t index(const State& s) const {
            return static_cast<std::size_t>(s.window) * stride_ +
                   static_cast<std::size_t>(s.progress);
        }

        UninitializedArray<std::uint32_t> service_storage_;
        UninitializedArray<std::uint64_t> active_storage_;
        unsigned windows_ = 0;    // K
        std::size_t stride_ = 1;  // J + 1
        std::atomic<bool> armed_{false};
        std::atomic<bool> asked_{false};  // called once since the (re)build
        static constexpr unsigned kProbeEvery = 8;
        mutable std::atomic<Use> use_{Use::Sorted};
        mutable std::atomic<unsigned> skipped_{0};  // batches skipped since the last probe
        mutable std::atomic<bool> first_batch_{true};
    };

    DecisionMemo();

    // Forget every entry (a rebuild) for K windows and J quanta; memory is kept.
    void reset(int windows, int work_quanta);

    // The entries of `policy` if they are armed, else null (no side effect).
    const Table* armed(Policy policy) const {
        const std::size_t i = slot(policy);
        if (i >= kPolicies) return nullptr;
        const Table& t = shared_->tables[i];
        return t.armed_.load(std::memory_order_acquire) ? &t : nullptr;
    }
    // The same, arming them on the policy's second call since the (re)build; null where
    // the policy is not memoised or on its first call. Call it once per decision or batch,
    // after the tables the policy reads were found built.
    const Table* table(Policy policy) const;

  private:
    static constexpr std::size_t kPolicies = 3;  // Costed Window, Rollout, DP
    static constexpr std::size_t slot(Policy policy) {
        switch (policy) {
            case Policy::CostedWindow: return 0;
            case Policy::Rollout: return 1;
            case Policy::Dp: return 2;
            default: return kPolicies;
        }
    }
    struct Shared {
        std::array<Table, kPolicies> tables;
        std::mutex arming;
        std::size_t pairs = 0;  // K * (J + 1) (window, progress) pairs
    };
    // Zero t's entries and publish them; false (t left unarmed) if they cannot be allocated.
    bool arm(Table& t) const;
    // Held by pointer so that a Model stays movable.
    std::unique_ptr<Shared> shared_;
};

}  // namespace learnsched
