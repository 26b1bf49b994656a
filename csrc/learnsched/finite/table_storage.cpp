#include "learnsched/finite/table_storage.hpp"

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
    // The heap: rows need no more than a double's alignment, and an over-aligned request
    // (memalign) only wastes the chunk's head.
    return {::operator new(bytes), BlockRelease{bytes}};
}

}  // namespace learnsched::detail
