// smollm3: llama layers where every fourth layer applies no RoPE ("NoPE").
// The period is not stored in GGUF; llama.cpp fixes it at 4 for this family.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_no_rope_layer_step = 4;
}

void configure_smollm3(ArchConfig& c) {
    for (size_t il = 0; il < c.spec.layers.size(); ++il)
        c.spec.layers[il].use_rope = (il + 1) % k_no_rope_layer_step != 0;
}

}  // namespace kiln
