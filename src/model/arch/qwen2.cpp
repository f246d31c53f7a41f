// qwen2: llama-shaped with NEOX RoPE (from the registry row) and Q/K/V biases,
// which the loader finds by presence.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen2(ArchConfig&) {}

}  // namespace kiln
