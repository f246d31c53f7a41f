// phi3 (Phi-3, Phi-3.5 mini, Phi-4 mini): NEOX RoPE over the first
// rope.dimension_count dimensions of a head (partial rotary), Q/K/V fused in
// attn_qkv or separate, gate and up stacked in one ffn_up [n_embd, 2 n_ff]
// (gate first, SwiGLU), LongRoPE per-pair factors (rope_factors_short /
// rope_factors_long, chosen by the context size against
// rope.scaling.original_context_length), queries scaled by 1/sqrt(head size)
// before the scores. llama.cpp disables Phi's sliding window (the converters
// do not describe it faithfully), so kiln attends to the whole context too.
#include <cmath>

#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_phi3(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.tensors.rope_long_short = TensorUse::Optional;
    s.tensors.ffn_gate_up_fused = true;
    s.attention_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
    s.sliding_window = 0;
}

}  // namespace kiln
