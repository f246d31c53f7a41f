// nemotron_h_moe (NVIDIA Nemotron 3 Nano 30B-A3B and its kin): nemotron_h's
// layers (Mamba-2, attention without positions, or an FFN, one block per layer
// chosen by the per-layer arrays) with every FFN layer a mixture of experts as
// llama.cpp builds it: sigmoid of the router's logits, the selection shifted by
// exp_probs_b (required), weights renormalized when expert_weights_norm says so
// and scaled by expert_weights_scale; each expert and the shared expert (required,
// no gate of its own) is ungated ReLU², down(max(up x, 0)²).
// Not supported (a load error naming them): the latent projections of the larger
// models (moe_latent_size, ffn_latent_down / ffn_latent_up), per-layer expert
// counts (an expert_used_count array), more than one shared expert, and the
// multi-token-prediction blocks (nextn_predict_layers).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_nemotron_h_moe(ArchConfig& c) {
    configure_nemotron_h(c);
    ModelSpec& s = c.spec;
    auto refuse_positive = [&](const char* name, const char* what) {
        if (c.metadata.find_uint(c.key(name)).value_or(0) > 0)
            throw Error("GGUF metadata '" + c.key(name) + "': " + what + " are not supported", ErrorKind::Unsupported);
    };
    refuse_positive("moe_latent_size", "latent expert projections");
    refuse_positive("nextn_predict_layers", "multi-token-prediction layers");
    if (c.metadata.find_uint(c.key("expert_shared_count")).value_or(1) > 1)
        throw Error("GGUF metadata '" + c.key("expert_shared_count") + "': more than one shared expert is not supported",
                    ErrorKind::Unsupported);
    TensorRules& t = s.tensors;
    t.experts = TensorUse::Required;
    t.expert_probs_bias = TensorUse::Required;
    t.shared_expert = TensorUse::Required;
    read_moe_hparams(c, {.gating = ExpertGating::Sigmoid, .norm_weights = false, .from_keys = true});
    // llama.cpp reads the norm and the scale but fixes the gating and has no groups.
    if (s.moe.gating != ExpertGating::Sigmoid)
        throw Error("GGUF metadata '" + c.key("expert_gating_func") + "': architecture '" + s.arch + "' routes by sigmoid",
                    ErrorKind::Unsupported);
    if (s.moe.n_group > 1)
        throw Error("GGUF metadata '" + c.key("expert_group_count") + "': grouped routing is not supported for architecture '" +
                        s.arch + "'",
                    ErrorKind::Unsupported);
    s.moe.ungated = true;
}

}  // namespace kiln
