// Uninitialised, reusable storage for value tables and their scratch rows.
//
// Why not std::vector: a vector value-initialises (zero-fills) every element, and the
// tables' rows are all overwritten by the backward passes, so the fill only adds a pass
// over memory that is often page-faulted for the first time. Large blocks are fresh
// anonymous mappings, which read as zeros untouched: a table's zero row (after the last
// window) is then never written, so its pages are never faulted in for writing.
//
// Why no huge-page advice (MADV_HUGEPAGE): the kernel's zeroing and compaction of fresh
// 2 MiB pages makes a fresh process's cap-size build slow and bimodal, most of its time in
// the kernel, where 4 KiB pages with the zero rows untouched are steady (docs/performance.md).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

namespace learnsched {

// Blocks of at least this many bytes are fresh anonymous mappings (Linux); smaller ones
// (and every block elsewhere) come from operator new, and from 128 KiB on are kept when
// released by a per-thread cache (128 MiB at most in a process, table_storage.cpp) that lends
// them, already faulted in, to the thread's next tables: a model built for one solve then
// writes memory faulted in before, as Model::rebuild does. 32 MiB is glibc's largest mmap
// threshold: above it every block is a fresh mapping anyway, and ours is known to be zero.
inline constexpr std::size_t kMappedBlockBytes = std::size_t{32} << 20;

namespace detail {

// Frees a block from allocate_block by how it was made (its size decides that).
struct BlockRelease {
    std::size_t bytes = 0;
    void operator()(void* block) const noexcept;
};

// At least `bytes` of uninitialised memory, aligned for any scalar (page-aligned from
// kMappedBlockBytes on, on Linux), from the thread's cache where it holds a block that large;
// std::bad_alloc if there is none.
std::unique_ptr<void, BlockRelease> allocate_block(std::size_t bytes);

// Whether allocate_block(bytes) returns zero-filled memory: a fresh anonymous mapping reads
// as zeros without being touched (the kernel maps its shared zero page until a write).
bool block_is_zeroed(std::size_t bytes);

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
    // Returns whether they are all zero bits: a new block that was mapped fresh, so that a
    // caller which needs zeros can skip writing (and first touching) them.
    bool resize(std::size_t size) {
        bool zeroed = false;
        if (size > capacity_) {
            block_.reset();  // release first: peak memory is the new block, not both
            block_ = detail::allocate_block(size * sizeof(T));
            capacity_ = size;
            zeroed = detail::block_is_zeroed(size * sizeof(T));
        }
        size_ = size;
        return zeroed;
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
