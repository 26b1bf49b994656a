#include "learnsched/finite/table_storage.hpp"

#include <atomic>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace learnsched::detail {
namespace {

#if defined(__linux__)
std::size_t mapped_bytes(std::size_t bytes) {
    static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
}
#endif

// What threads keep of their released tables: at most kCachedBlocks blocks a thread and
// kCachedBytes in the whole process. Blocks under glibc's default mmap threshold come from
// the heap's free lists, already faulted in, so caching them would gain nothing; mapped ones
// (kMappedBlockBytes on) are released at once, as their zero rows are never written.
constexpr std::size_t kCachedBlocks = 8;
constexpr std::size_t kCachedMinBytes = std::size_t{128} << 10;
constexpr std::size_t kCachedBytes = std::size_t{128} << 20;
static_assert(kCachedBytes >= kMappedBlockBytes, "any block below the mapped size fits");

// A thread's heap blocks released by its tables, lent again to its next tables: a new model
// then writes memory already faulted in, where a freed block of this size would often have
// gone back to the kernel (glibc unmaps large chunks and trims a large free heap top).
// Per thread, so that models built with the GIL released share no lock; trivially
// destructible, so that it stays usable while the thread's other thread_local objects are
// destroyed (CacheDrain empties it at thread exit).
struct BlockCache {
    struct Entry {
        void* block;
        std::size_t bytes;
    };
    Entry entries[kCachedBlocks];
    std::size_t count;  // entries[0] the oldest
    bool closed;        // the thread is exiting: blocks are freed, not kept
};

thread_local BlockCache cache{};
std::atomic<std::size_t> cached_bytes{0};  // every thread's cache together

// Count `bytes` more as cached if the process stays within kCachedBytes.
bool reserve(std::size_t bytes) {
    std::size_t now = cached_bytes.load(std::memory_order_relaxed);
    do {
        if (now + bytes > kCachedBytes) return false;
    } while (!cached_bytes.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    return true;
}

// Entry i taken out of this thread's cache.
BlockCache::Entry remove(std::size_t i) {
    const BlockCache::Entry entry = cache.entries[i];
    for (std::size_t j = i + 1; j < cache.count; ++j) cache.entries[j - 1] = cache.entries[j];
    --cache.count;
    cached_bytes.fetch_sub(entry.bytes, std::memory_order_relaxed);
    return entry;
}

void evict_oldest() { ::operator delete(remove(0).block); }

struct CacheDrain {
    ~CacheDrain() {
        while (cache.count > 0) evict_oldest();
        cache.closed = true;
    }
};

// Keep a heap block of `bytes` for this thread's next tables if it may be cached (oldest
// blocks evicted to make room); false if the caller must free it.
bool keep(void* block, std::size_t bytes) noexcept {
    if (bytes < kCachedMinBytes || bytes >= kMappedBlockBytes || cache.closed) return false;
    thread_local CacheDrain drain;  // from the first kept block on, emptied at thread exit
    (void)drain;
    if (cache.count == kCachedBlocks) evict_oldest();
    while (!reserve(bytes)) {
        if (cache.count == 0) return false;  // other threads hold the rest
        evict_oldest();
    }
    cache.entries[cache.count++] = {block, bytes};
    return true;
}

// The smallest cached block of at least `bytes`, taken out of the cache with its size
// ({nullptr, 0} if none).
BlockCache::Entry take(std::size_t bytes) {
    std::size_t best = cache.count;
    for (std::size_t i = 0; i < cache.count; ++i) {
        const std::size_t size = cache.entries[i].bytes;
        if (size >= bytes && (best == cache.count || size < cache.entries[best].bytes)) best = i;
    }
    return best == cache.count ? BlockCache::Entry{nullptr, 0} : remove(best);
}

}  // namespace

void BlockRelease::operator()(void* block) const noexcept {
#if defined(__linux__)
    if (bytes >= kMappedBlockBytes) {
        munmap(block, mapped_bytes(bytes));
        return;
    }
#endif
    if (!keep(block, bytes)) ::operator delete(block);
}

bool block_is_zeroed(std::size_t bytes) {
#if defined(__linux__)
    return bytes >= kMappedBlockBytes;
#else
    (void)bytes;
    return false;
#endif
}

std::unique_ptr<void, BlockRelease> allocate_block(std::size_t bytes) {
#if defined(__linux__)
    if (bytes >= kMappedBlockBytes) {
        void* block = mmap(nullptr, mapped_bytes(bytes), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (block == MAP_FAILED) throw std::bad_alloc();
        return {block, BlockRelease{bytes}};
    }
#endif
    if (bytes >= kCachedMinBytes) {
        const BlockCache::Entry cached = take(bytes);
        // Released by its own size: it goes back to the cache whole.
        if (cached.block != nullptr) return {cached.block, BlockRelease{cached.bytes}};
    }
    // The heap: rows need no more than a double's alignment, and an over-aligned request
    // (memalign) only wastes the chunk's head.
    return {::operator new(bytes), BlockRelease{bytes}};
}

}  // namespace learnsched::detail
