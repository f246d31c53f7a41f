// Re-encodes a GGUF's layer matrices in another type with kiln's reference
// quantizers (through f32), the way the low-bit tests and
// tools/lowbit_fixtures.py give kiln and llama.cpp the same file.
#pragma once

#include <string>

#include "kiln/gguf/ggml_type.h"

namespace kiln::test {

// Writes `src` to `dst` with every 2-D "blk.*" tensor whose rows are whole blocks
// of `type` re-encoded as `type` (others, the embedding and the norms as they
// are). Deterministic: the same bytes on every machine. Returns the number of
// tensors re-encoded.
int requantize_layers(const std::string& src, const std::string& dst, GgmlType type);

}  // namespace kiln::test
