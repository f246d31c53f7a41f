// gemma4 (Gemma 4 dense and E2B / E4B), as llama.cpp's gemma4 graph: embeddings
// scaled by sqrt(width), GELU-gated FFN, per-head Q/K RMS norms, post-attention
// and post-FFN norms, no query scaling (the norms take its place: scale 1).
// Sliding and full layers follow attention.sliding_window_pattern (required, one
// bool per layer) and each kind has its own head size (key_length /
// key_length_swa, keys equal to values), rotated dimensions
// (rope.dimension_count / _swa) and RoPE base (rope.freq_base /
// rope.freq_base_swa, 10000 by default); only the full layers divide by
// rope_freqs (proportional RoPE: large factors stop the rotation of a head's
// tail). V is RMS-normed without a weight; a layer without attn_v uses K's
// product as V. The last attention.shared_kv_layers layers compute no K / V and
// attend over the cache of the last earlier layer of their kind (n_kv - 2 for
// sliding, n_kv - 1 for full, as llama.cpp). E2B / E4B add per-layer embeddings
// (embedding_length_per_layer_input) after each FFN; layer_output_scale
// multiplies a layer's output; logits are soft-capped at final_logit_softcapping
// (30 when the key is absent; 0: none). Expert layers (26B-A4B: a router
// ffn_gate_inp by presence, with expert_count) keep the dense GELU FFN beside
// the experts (TensorRules::expert_dense_branch): post_ffw_norm_1(dense(ffn_norm
// x)) + post_ffw_norm_2(experts(pre_ffw_norm_2 x)), then post_ffw_norm; the
// router reads rms(x) / sqrt(width) * ffn_gate_inp.scale; softmax over all, the
// top k renormalized, GEGLU experts with per-expert output scales by presence, as
// llama.cpp's graph.
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr float k_default_swa_base = 10000.0f;  // llama.cpp's rope_freq_base_train_swa default
constexpr float k_default_final_softcap = 30.0f;
}  // namespace

// What gemma4 and gemma4-assistant share: norms, activation, the sliding
// pattern, each layer kind's head size and RoPE.
void configure_gemma4_layers(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    s.embedding_scale = std::sqrt(static_cast<float>(s.n_embd));
    s.activation = FfnActivation::Gelu;
    s.attention_scale = 1.0f;
    s.v_norm = true;
    TensorRules& t = s.tensors;
    t.qk_norm = TensorUse::Required;
    t.post_norms = TensorUse::Required;
    t.qkv_bias = false;
    t.attn_v = TensorUse::Optional;
    t.ffn_scales = TensorUse::Optional;
    t.layer_out_scale = TensorUse::Optional;
    if (!s.causal)
        throw Error("GGUF metadata '" + c.key("attention.causal") +
                        "' = false: Gemma 4's bidirectional sliding layers are not supported",
                    ErrorKind::Unsupported);

    const std::string pattern = c.key("attention.sliding_window_pattern");
    if (!md.has(pattern)) throw Error("GGUF metadata key '" + pattern + "' not found");
    if (md.at(pattern).type() != gguf::ValueType::Array)
        gguf::Metadata::type_error(pattern, "array of bools (one per layer)", md.at(pattern));
    read_swa_pattern(c, 0, false);
    if (s.sliding_window <= 0) throw Error("GGUF metadata key '" + c.key("attention.sliding_window") + "' not found");

    // Head sizes: the full layers' from key_length (the model's head_dim_k), the
    // sliding layers' from key_length_swa (required, as llama.cpp); keys equal values.
    if (s.head_dim_k != s.head_dim_v)
        throw Error("GGUF metadata: gemma4 needs " + c.key("attention.key_length") + " == " + c.key("attention.value_length"));
    const int hk_swa = c.count("attention.key_length_swa", true), hv_swa = c.count("attention.value_length_swa", true);
    if (hk_swa != hv_swa || hk_swa <= 0)
        throw Error("GGUF metadata: gemma4 needs " + c.key("attention.key_length_swa") + " == " +
                    c.key("attention.value_length_swa") + " (found " + std::to_string(hk_swa) + " and " +
                    std::to_string(hv_swa) + ")");
    bool any_full = false;
    for (LayerSpec& l : s.layers) {
        l.head_dim_k = l.sliding ? hk_swa : s.head_dim_k;
        l.head_dim_v = l.sliding ? hv_swa : s.head_dim_v;
        any_full |= !l.sliding;
    }

    // RoPE: the sliding layers' dimensions and base, no factors on them.
    RopeSpec& r = s.rope;
    r.n_dims_swa = md.has(c.key("rope.dimension_count_swa")) ? c.count("rope.dimension_count_swa", true) : r.n_dims;
    if (r.n_dims_swa <= 0 || r.n_dims_swa % 2 != 0 || r.n_dims_swa > hk_swa)
        throw Error("GGUF metadata '" + c.key("rope.dimension_count_swa") + "': " + std::to_string(r.n_dims_swa) +
                    " must be even and at most the sliding head size " + std::to_string(hk_swa));
    if (r.freq_base_swa <= 0.0f) r.freq_base_swa = k_default_swa_base;
    r.freq_scale_swa = 1.0f;
    r.factors_full_only = true;
    r.n_factors = s.head_dim_k / 2;
    t.rope_freqs = any_full ? TensorUse::Required : TensorUse::No;
}

void configure_gemma4(ArchConfig& c) {
    configure_gemma4_layers(c);
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    TensorRules& t = s.tensors;

    // Shared KV: layers from n_kv on read the last earlier layer of their kind.
    const int n_shared = c.count("attention.shared_kv_layers", false);
    if (n_shared > 0) {
        const int n_kv = s.n_layer - n_shared;
        if (n_kv < 2)
            throw Error("GGUF metadata '" + c.key("attention.shared_kv_layers") + "': " + std::to_string(n_shared) + " of " +
                        std::to_string(s.n_layer) + " layers leaves fewer than 2 with their own KV");
        for (int il = n_kv; il < s.n_layer; ++il) {
            LayerSpec& l = s.layers[static_cast<size_t>(il)];
            const int src = n_kv - (l.sliding ? 2 : 1);
            const LayerSpec& from = s.layers[static_cast<size_t>(src)];
            if (from.sliding != l.sliding || from.n_head_kv != l.n_head_kv)
                throw Error("layer " + std::to_string(il) + " shares layer " + std::to_string(src) +
                                "'s KV cache, which is of another kind (sliding pattern or KV heads, " +
                                c.key("attention.shared_kv_layers") + ")",
                            ErrorKind::Unsupported);
            l.kv_source = src;
        }
    }

    s.n_embd_per_layer = c.count("embedding_length_per_layer_input", true);  // required by llama.cpp; 0: none
    if (s.n_embd_per_layer > 0) t.per_layer_embd = TensorUse::Required;
    s.final_softcap = static_cast<float>(md.find_float(c.key("final_logit_softcapping")).value_or(k_default_final_softcap));
    if (c.count("expert_count", false) > 0) {
        t.experts = TensorUse::Optional;
        t.expert_dense_branch = true;
        read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
    }
}

}  // namespace kiln
