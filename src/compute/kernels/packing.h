// Repacking weight matrices into the panel layouts of layout.h (at load).
#pragma once

#include <cstdint>
#include <memory>

#include "compute/kernels/layout.h"

namespace kiln {

// Whether `type` has a panel layout (whether any kernel can use it is the
// dispatch table's business: see matmul.h).
bool has_packed_layout(GgmlType type);

// F32, F16 or BF16: weights in the float panel layout (32 rows, element-major).
bool is_float_weight(GgmlType type);

// The layout (everything but the data) pack_matrix gives a type, layout variant
// and shape; false if the type has no panel layout. The memory plan sizes
// repacked weights with it. Throws kiln::Error for a variant the type does not
// have (every type has PanelLayout::Standard).
bool packed_layout(GgmlType type, PanelLayout variant, int64_t n_in, int64_t n_out, PackedMatrix& layout);
// Bytes an allocation of n packed bytes takes (64-byte aligned, at least 64).
uint64_t packed_allocation_bytes(uint64_t n);

// Repacks n_out rows of n_in elements (row r at data + r * row_bytes) into the
// panel layout `variant` of the type (the one the kernel table that will read it
// names: KernelTable::panel_layout); nullptr if the type has no panel layout.
// Throws kiln::Error on a shape that is not whole blocks, a variant the type does
// not have, or when memory runs out.
//
// With release_source the source rows' pages are dropped from the resident set
// as they are packed (only for bytes in a read-only file mapping: they come back
// from the page cache if read again; anonymous memory would be zeroed).
std::unique_ptr<PackedMatrix> pack_matrix(GgmlType type, PanelLayout variant, const uint8_t* data, uint64_t row_bytes, int64_t n_in,
                                          int64_t n_out, bool release_source = false);

// Packs panels [p0, p1) of a quantized matrix of `layout` (packed_layout's, its
// variant included) into dst, (p1 - p0) * layout.panel_bytes: the panels
// pack_matrix would make, for
// kernels that read a matrix in place from the file and repack it as they go.
void pack_panels(const PackedMatrix& layout, const uint8_t* data, uint64_t row_bytes, int64_t p0, int64_t p1, uint8_t* dst);
// Drops the resident pages of [p, p + n) that lie wholly inside the range (a
// read-only file mapping: they are only unmapped, never lost).
void release_pages(const uint8_t* p, uint64_t n);
// madvise(advice) over the pages that [p, p + n) touches (a read-only file
// mapping: MADV_RANDOM, MADV_WILLNEED); failures are ignored (advice only).
void advise_pages(const uint8_t* p, uint64_t n, int advice);

}  // namespace kiln
