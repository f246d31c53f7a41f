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

// Repacks n_out rows of n_in elements (row r at data + r * row_bytes); nullptr if
// the type has no panel layout. Throws kiln::Error on a shape that is not whole
// blocks or when memory runs out.
std::unique_ptr<PackedMatrix> pack_matrix(GgmlType type, const uint8_t* data, uint64_t row_bytes, int64_t n_in,
                                          int64_t n_out);

}  // namespace kiln
