#include "compute/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>

namespace kiln {

void* allocate_huge(size_t bytes) {
    constexpr size_t huge = size_t{2} << 20;
    void* p = nullptr;
    if (bytes >= huge) {
        const size_t rounded = (bytes + huge - 1) / huge * huge;
        p = std::aligned_alloc(huge, rounded);
        if (p) madvise(p, rounded, MADV_HUGEPAGE);
    } else {
        p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
    }
    if (!p) throw std::bad_alloc();
    return p;
}

}  // namespace kiln
