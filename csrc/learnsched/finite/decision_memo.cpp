#include "learnsched/finite/decision_memo.hpp"

#include <cstring>
#include <new>

namespace learnsched {
namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t) &&
              std::atomic<std::uint64_t>::is_always_lock_free);
// quanta <= J < 2^24 packs in bits 5..28; pbar <= J in bits 32..55 of an active entry.
static_assert(kMaxStates <= std::size_t{1} << 24, "a state field fits 24 bits");

// `size` zero entries in `storage`, keeping its memory where it is small: a large block is
// released and mapped afresh (zero untouched), so that arming never writes (and faults in)
// the entries of states that are not asked.
template <class T>
void zeroed(UninitializedArray<T>& storage, std::size_t size) {
    if (storage.capacity() * sizeof(T) >= kMappedBlockBytes) storage = UninitializedArray<T>();
    if (!storage.resize(size) && size > 0) std::memset(storage.data(), 0, size * sizeof(T));
}

}  // namespace

void DecisionMemo::Table::store(const State& s, const Action& a) const {
    if (!s.active) {
        service()[index(s)].store(pack(a), std::memory_order_relaxed);
    } else {
        active()[index(s)].store(static_cast<std::uint64_t>(s.durable) << 32 | pack(a),
                                 std::memory_order_relaxed);
    }
}

void DecisionMemo::Table::prefetch(const State& s) const {
#if defined(__GNUC__)
    // For writing: a miss stores its decision there.
    if (s.active) {
        __builtin_prefetch(active() + index(s), 1);
    } else {
        __builtin_prefetch(service() + index(s), 1);
    }
#else
    (void)s;
#endif
}

DecisionMemo::Table::Use DecisionMemo::Table::batch_use() const {
    const Use use = use_.load(std::memory_order_relaxed);
    if (use != Use::Skip) return use;
    if (skipped_.fetch_add(1, std::memory_order_relaxed) + 1 < kProbeEvery) return Use::Skip;
    skipped_.store(0, std::memory_order_relaxed);
    return Use::Sorted;  // probe: are states asked again now?
}

void DecisionMemo::Table::batch_hits(std::size_t hits, std::size_t size) const {
    if (first_batch_.exchange(false, std::memory_order_relaxed)) return;  // stays Sorted
    const Use use = 2 * hits >= size ? Use::Lookup : 16 * hits >= size ? Use::Sorted : Use::Skip;
    use_.store(use, std::memory_order_relaxed);
}

DecisionMemo::DecisionMemo() : shared_(std::make_unique<Shared>()) {}

void DecisionMemo::reset(int windows, int work_quanta) {
    Shared& sh = *shared_;
    const std::size_t stride = static_cast<std::size_t>(work_quanta) + 1;
    sh.pairs = static_cast<std::size_t>(windows) * stride;
    for (Table& t : sh.tables) {
        t.windows_ = static_cast<unsigned>(windows);
        t.stride_ = stride;
        t.armed_.store(false, std::memory_order_relaxed);
        t.asked_.store(false, std::memory_order_relaxed);
    }
}

const DecisionMemo::Table* DecisionMemo::table(Policy policy) const {
    const std::size_t i = slot(policy);
    if (i >= kPolicies) return nullptr;
    Table& t = shared_->tables[i];
    if (t.armed_.load(std::memory_order_acquire)) return &t;
    if (!t.asked_.exchange(true, std::memory_order_relaxed)) return nullptr;
    return arm(t) ? &t : nullptr;
}

bool DecisionMemo::arm(Table& t) const {
    const std::lock_guard<std::mutex> lock(shared_->arming);
    if (t.armed_.load(std::memory_order_relaxed)) return true;
    try {
        zeroed(t.service_storage_, shared_->pairs);
        zeroed(t.active_storage_, shared_->pairs);
    } catch (const std::bad_alloc&) {  // no memory for it: decisions are computed, as before
        t.service_storage_ = UninitializedArray<std::uint32_t>();
        t.active_storage_ = UninitializedArray<std::uint64_t>();
        return false;
    }
    t.use_.store(Table::Use::Sorted, std::memory_order_relaxed);
    t.skipped_.store(0, std::memory_order_relaxed);
    t.first_batch_.store(true, std::memory_order_relaxed);
    t.armed_.store(true, std::memory_order_release);  // publishes the zeroed entries
    return true;
}

}  // namespace learnsched
