// Uninitialised, reusable storage for value tables and their scratch rows.
//
// Why not std::vector: a vector value-initialises (zero-fills) every element, and the
// tables' rows are all overwritten by the backward passes, so the fill only adds a pass
// over memory that is often page-faulted for the first time. Large blocks are mapped on
// 2 MiB boundaries with huge-page advice (Linux), so that their first touch faults 512x
// fewer pages.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

namespace learnsched {

// 2 MiB: a huge page, the alignment of mapped blocks.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Blocks of at least this many bytes are mapped 2 MiB-aligned with MADV_HUGEPAGE (Linux);
// smaller ones (and every block elsewhere) come from operator new. 32 MiB is glibc's
// largest mmap threshold: below it a freed table may stay in the heap, already faulted
// in, for the next model (or be trimmed: Model::rebuild is what never faults); above it
// every block is a fresh mapping anyway, whose first touch huge pages make cheaper.
inline constexpr std::size_t kMappedBlockBytes = std::size_t{32} << 20;

namespace detail {

// Frees a block from allocate_block by how it was made (its size decides that).
struct BlockRelease {
    std::size_t bytes = 0;
    void operator()(void* block) const noexcept;
};

// At least `bytes` of uninitialised memory, aligned for any scalar (2 MiB-aligned with
// huge-page advice from kMappedBlockBytes on, on Linux); std::bad_alloc if there is none.
std::unique_ptr<void, BlockRelease> allocate_block(std::size_t bytes);

}  // namespace detail

// A run of trivially copyable T whose capacity only grows: resize() keeps the memory it
// already has (already faulted in) and leaves every element uninitialised.
template <class T>
class UninitializedArray {
    static_assert(std::is_trivially_copyable_v<T>, "elements are copied with memcpy");

  public:
    UninitializedArray() = default;
    explicit UninitializedArray(std::size_t size) { resize(size); }
    UninitializedArray(const UninitializedArray& other) : UninitializedArray(other.size_) {
        if (size_ > 0) std::memcpy(data(), other.data(), size_ * sizeof(T));
    }
    UninitializedArray& operator=(const UninitializedArray& other) {
        if (this != &other) {
            resize(other.size_);
            if (size_ > 0) std::memcpy(data(), other.data(), size_ * sizeof(T));
        }
        return *this;
    }
    UninitializedArray(UninitializedArray&& other) noexcept
        : block_(std::move(other.block_)),
          size_(std::exchange(other.size_, 0)),
          capacity_(std::exchange(other.capacity_, 0)) {}
    UninitializedArray& operator=(UninitializedArray&& other) noexcept {
        block_ = std::move(other.block_);
        size_ = std::exchange(other.size_, 0);
        capacity_ = std::exchange(other.capacity_, 0);
        return *this;
    }

    // `size` elements of unspecified value: contents are discarded when it must grow.
    void resize(std::size_t size) {
        if (size > capacity_) {
            block_.reset();  // release first: peak memory is the new block, not both
            block_ = detail::allocate_block(size * sizeof(T));
            capacity_ = size;
        }
        size_ = size;
    }

    std::size_t size() const { return size_; }
    std::size_t capacity() const { return capacity_; }
    T* data() { return static_cast<T*>(block_.get()); }
    const T* data() const { return static_cast<const T*>(block_.get()); }

  private:
    std::unique_ptr<void, detail::BlockRelease> block_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace learnsched
