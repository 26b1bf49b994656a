#include "table_storage.hpp"

#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace learnsched::detail {
namespace {

#if defined(__linux__)
std::size_t page_bytes() {
    static const std::size_t bytes = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return bytes;
}

std::size_t mapped_bytes(std::size_t bytes) {
    const std::size_t page = page_bytes();
    return (bytes + page - 1) / page * page;
}

// Map one huge page more than needed, then unmap the unaligned head and the tail, so the
// block starts on a 2 MiB boundary: only aligned 2 MiB ranges can be backed by huge pages.
void* map_huge_aligned(std::size_t bytes) {
    const std::size_t length = mapped_bytes(bytes);
    const std::size_t span = length + kHugePageBytes;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    const std::size_t head = aligned - start;
    if (head > 0) munmap(raw, head);
    const std::size_t tail = span - head - length;
    if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
    void* block = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
    madvise(block, length, MADV_HUGEPAGE);  // advice only: without it the block still works
#endif
    return block;
}
#endif

}  // namespace

void BlockRelease::operator()(void* block) const noexcept {
#if defined(__linux__)
    if (bytes >= kMappedBlockBytes) {
        munmap(block, mapped_bytes(bytes));
        return;
    }
#endif
    ::operator delete(block);
}

std::unique_ptr<void, BlockRelease> allocate_block(std::size_t bytes) {
#if defined(__linux__)
    if (bytes >= kMappedBlockBytes) return {map_huge_aligned(bytes), BlockRelease{bytes}};
#endif
    // The heap: rows need no more than a double's alignment, and an over-aligned request
    // (memalign) only wastes the chunk's head.
    return {::operator new(bytes), BlockRelease{bytes}};
}

}  // namespace learnsched::detail
