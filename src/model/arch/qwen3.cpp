// qwen3: NEOX RoPE, per-head RMS norm of Q and K before RoPE (attn_q_norm /
// attn_k_norm, required), and a head size from attention.key_length that need
// not equal width / heads; the FFN matrices may carry weight scales.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen3(ArchConfig& c) {
    c.spec.tensors.qk_norm = TensorUse::Required;  // binding fails naming the tensor if absent
    c.spec.tensors.ffn_scales = TensorUse::Optional;
}

}  // namespace kiln
