// jamba (AI21 Jamba): Mamba-1 layers (where the per-layer
// attention.head_count_kv is 0; dt, B and C RMS-normed with their weights
// ssm_dt_norm / ssm_b_norm / ssm_c_norm) and attention layers without any
// positional encoding, every layer followed by ffn_norm and an FFN: a mixture of
// experts where the layer has a router (softmax over all experts, the top k not
// renormalized, as llama.cpp fixes it), else a gated SiLU FFN. llama.cpp
// supports only ssm.inner_size = 2 x n_embd.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_jamba(ArchConfig& c) {
    ModelSpec& s = c.spec;
    read_ssm_keys(c, SsmKind::Mamba1);
    s.ssm.dt_bc_norms = true;
    if (s.ssm.d_inner != 2 * s.n_embd)
        throw Error("GGUF metadata '" + c.key("ssm.inner_size") + "': " + std::to_string(s.ssm.d_inner) +
                        " (only twice the embedding length, " + std::to_string(2 * s.n_embd) + ", is supported)",
                    ErrorKind::Unsupported);
    for (LayerSpec& l : s.layers) {
        if (l.n_head_kv == 0) l.mixer = MixerKind::Recurrent;
        l.use_rope = false;
    }
    if (c.metadata.find_uint(c.key("expert_count")).value_or(0) > 0) {
        s.tensors.experts = TensorUse::Optional;  // each layer by its router's presence
        read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false});
    }
}

}  // namespace kiln
