// deepseek2 (DeepSeek-V2 / V2-Lite / V2.5, DeepSeek-V3 and R1, Kimi K2 files
// written as deepseek2): multi-head latent attention (ModelSpec::mla, src/model/mla.cpp)
// with the latent cached, NORM RoPE on the rotated part only, leading dense
// blocks (leading_dense_block_count), then expert layers routed from the file's
// keys (expert_gating_func: softmax when absent, as llama.cpp for V2 files, or
// sigmoid; expert_weights_norm; expert_weights_scale; group-limited selection by
// expert_group_count / expert_group_used_count; the exp_probs_b selection bias
// by presence) plus the ungated shared experts (expert_shared_count of them, one
// ffn_*_shexp of their total width). Multi-token-prediction layers
// (nextn_predict_layers, DeepSeek-V3's last layer where converted): the first
// is the draft head (src/model/nextn.h, llama.cpp's deepseek2 MTP graph), any
// others are skipped with a load note.
//
// Keys as llama.cpp reads them: attention.kv_lora_rank (required),
// attention.q_lora_rank (0 or absent: attn_q; llama.cpp accepts it absent only
// for V2-Lite-sized files, by layer count — kiln by the key), key_length_mla /
// value_length_mla (a head's query-key and value sizes; absent in files
// converted before llama.cpp split attn_kv_b, which are refused: reconvert),
// key_length / value_length = the latent's sizes. YaRN: the file's
// rope.scaling.yarn_log_multiplier is 0.1 · mscale_all_dim (the converter's
// factor, divided out as llama.cpp does); the rotation's magnitude and the
// scores' scale mscale² / sqrt(head_dim_qk) follow llama.cpp's computation
// step for step (its DeepSeek-V2 special case included).
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_deepseek2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    MlaSpec& m = s.mla;

    read_nextn_layers(c);  // the first NextN block is the draft head (--spec mtp)
    c.spec.tensors.nextn_head = true;
    if (md.find_float(c.key("attention.temperature_scale")).value_or(0.0) != 0.0)
        throw Error("GGUF metadata '" + c.key("attention.temperature_scale") + "': attention temperature tuning is not supported yet",
                    ErrorKind::Unsupported);
    m.kv_lora_rank = c.count("attention.kv_lora_rank", true);
    m.q_lora_rank = c.count("attention.q_lora_rank", false);
    m.head_dim_qk = c.count("attention.key_length_mla", false);
    m.head_dim_v = c.count("attention.value_length_mla", false);
    if (m.head_dim_qk == 0 || m.head_dim_v == 0)
        throw Error("GGUF metadata key '" + c.key("attention.key_length_mla") + "' / '" + c.key("attention.value_length_mla") +
                        "' not found: a deepseek2 file converted before attn_kv_b was split into attn_k_b / attn_v_b "
                        "(kiln runs the latent attention of current conversions only; convert the model again)",
                    ErrorKind::Unsupported);
    const int rot = s.rope.n_dims;
    if (m.kv_lora_rank <= 0 || m.head_dim_qk - rot < 1 || s.head_dim_k != m.kv_lora_rank + rot || s.head_dim_v != m.kv_lora_rank)
        throw Error("GGUF metadata: deepseek2 latent attention wants attention.key_length = kv_lora_rank + rope.dimension_count (" +
                    std::to_string(m.kv_lora_rank) + " + " + std::to_string(rot) + "), value_length = kv_lora_rank and key_length_mla > " +
                    std::to_string(rot) + "; found key_length " + std::to_string(s.head_dim_k) + ", value_length " +
                    std::to_string(s.head_dim_v) + ", key_length_mla " + std::to_string(m.head_dim_qk));
    for (size_t il = 0; il < s.layers.size(); ++il)
        if (s.layers[il].n_head_kv != 1)
            throw Error("GGUF metadata '" + c.key("attention.head_count_kv") + "': latent attention has 1 KV head (the latent row), layer " +
                        std::to_string(il) + " has " + std::to_string(s.layers[il].n_head_kv));

    // YaRN and the scores' scale (llama.cpp: llama_context's yarn_attn_factor, then
    // the deepseek2 graph's mscale).
    float log_mul = static_cast<float>(md.find_float(c.key("rope.scaling.yarn_log_multiplier")).value_or(0.0));
    log_mul /= 0.1f;
    const float rope_attn = static_cast<float>(md.find_float(c.key("rope.scaling.attn_factor")).value_or(1.0));
    const float freq_scale = s.rope.freq_scale;
    float attn_factor = rope_attn;
    if (s.rope.yarn_ext_factor != 0.0f) {
        const float mscale = log_mul != 0.0f && log_mul != 1.0f ? log_mul : 1.0f;  // llama.cpp's DeepSeek-V2 case
        attn_factor = yarn_attn_factor(1.0f / freq_scale, mscale, log_mul, rope_attn);
    }
    s.rope.yarn_attn_factor = attn_factor;
    const float attn_factor_org = attn_factor * (1.0f + 0.1f * std::log(1.0f / freq_scale));
    const float mscale = attn_factor_org * (1.0f + 0.1f * log_mul * std::log(1.0f / freq_scale));
    m.kq_scale = 1.0f * mscale * mscale / std::sqrt(static_cast<float>(m.head_dim_qk));

    TensorRules& t = s.tensors;
    t.experts = TensorUse::Optional;
    t.expert_probs_bias = TensorUse::Optional;
    const int n_shared = c.count("expert_shared_count", true);
    t.shared_expert = n_shared > 0 ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false, .from_keys = true});
}

}  // namespace kiln
