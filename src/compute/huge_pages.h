// Buffers that every decode step walks end to end (the KV cache, a q8_0 cache's
// rows converted to f32): from 2 MiB up they sit on 2 MiB boundaries and ask for
// transparent huge pages. With 4 KiB pages a cache larger than the TLB's reach
// misses it every few rows. Where the kernel grants none (THP off) they are
// ordinary pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace kiln {

// 64-byte aligned, uninitialised; std::bad_alloc when out of memory. Free with std::free.
void* allocate_huge(size_t bytes);

// Owns what allocate_huge (or std::aligned_alloc) returned.
struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
using HugeBytes = std::unique_ptr<uint8_t[], FreeDeleter>;

template <typename T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(allocate_huge(n * sizeof(T))); }
    void deallocate(T* p, size_t) { std::free(p); }
    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const { return true; }
};

using HugeFloats = std::vector<float, HugePageAllocator<float>>;

}  // namespace kiln
