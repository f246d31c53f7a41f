// qwen35 (Qwen 3.5, dense): a hybrid of gated delta-net layers (linear
// attention with a recurrent state; src/model/delta_net.cpp) and, every
// `full_attention_interval`-th layer (or where `attention.recurrent_layers`
// says 0), gated full attention: the Q projection holds a sigmoid output gate per
// head, QK-norm, partial rotary embedding. Every layer has a SwiGLU FFN whose
// input norm is stored as `post_attention_norm`. Multi-token-prediction blocks
// (nextn_predict_layers, Qwen 3.5 / 3.6) after the trunk: the first is the draft
// head (src/model/nextn.h), a full-attention block.
//
// RoPE is llama.cpp's interleaved multi-section kind (IMROPE); for text every
// section carries the token's position, which makes it the NEOX rotation of the
// first rope.dimension_count dimensions — provided the sections cover every
// rotated pair (a pair left to the fourth, "extra" section would stay unrotated),
// which is checked.
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

int key_int(ArchConfig& c, const char* name, int min) {
    const std::string key = c.key(name);
    const uint64_t v = c.metadata.get_uint(key);
    if (v < static_cast<uint64_t>(min) || v > (1u << 20))
        throw Error("GGUF metadata '" + key + "': " + std::to_string(v) + " is out of range (at least " + std::to_string(min) + ")");
    return static_cast<int>(v);
}

// Whether llama.cpp's IMROPE gives every rotated pair one of the first three
// sections (the text position), given the four section sizes.
void check_rope_sections(ArchConfig& c, int n_pairs) {
    const std::string key = c.key("rope.dimension_sections");
    const gguf::Value* v = c.metadata.find(key);
    if (!v) return;  // llama.cpp requires it; without it the rotation is plain NEOX
    if (v->type() != gguf::ValueType::Array || v->lazy() || v->count() < 3 || v->count() > 4)
        throw Error("GGUF metadata '" + key + "': expected an array of 4 integers");
    int sec[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < v->items().size(); ++i) {
        if (!v->items()[i].is_integer()) throw Error("GGUF metadata '" + key + "': expected an array of 4 integers");
        sec[i] = static_cast<int>(v->items()[i].raw_i64());
        if (sec[i] < 0 || sec[i] > n_pairs) throw Error("GGUF metadata '" + key + "': section " + std::to_string(sec[i]) + " is out of range");
    }
    const int total = sec[0] + sec[1] + sec[2] + sec[3];
    if (total <= 0) throw Error("GGUF metadata '" + key + "': the sections are empty");
    for (int i = 0; i < n_pairs; ++i) {
        const int s = i % total;
        const bool text = (s % 3 == 0 && s < 3 * sec[0]) || (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]);
        if (!text)
            throw Error("GGUF metadata '" + key + "': rotated pair " + std::to_string(i) +
                            " falls in the extra section (not supported for text)",
                        ErrorKind::Unsupported);
    }
}

}  // namespace

void configure_gated_delta_net(ArchConfig& c) {
    ModelSpec& s = c.spec;
    // Multi-token-prediction blocks are counted in block_count and follow the
    // trunk; qwen35 / qwen35moe have read them already (configure_qwen35), others
    // (qwen3next: llama.cpp loads its MTP tensors but has no graph to draft with)
    // are refused.
    if (s.n_layer_nextn == 0 && c.metadata.find_uint(c.key("nextn_predict_layers")).value_or(0) > 0)
        throw Error("GGUF metadata '" + c.key("nextn_predict_layers") + "': multi-token-prediction layers are not supported",
                    ErrorKind::Unsupported);
    const size_t n_all = s.layers.size() + static_cast<size_t>(s.n_layer_nextn);
    SsmSpec& m = s.ssm;
    m.kind = SsmKind::GatedDeltaNet;
    m.d_conv = key_int(c, "ssm.conv_kernel", 1);
    m.d_inner = key_int(c, "ssm.inner_size", 1);
    m.d_state = key_int(c, "ssm.state_size", 1);  // the key / value head size
    m.dt_rank = key_int(c, "ssm.time_step_rank", 1);  // value heads
    m.n_group = key_int(c, "ssm.group_count", 1);     // key heads
    if (m.d_inner != m.dt_rank * m.d_state || m.dt_rank % m.n_group != 0)
        throw Error("GGUF metadata: '" + c.key("ssm.inner_size") + "' " + std::to_string(m.d_inner) + " must be '" +
                    c.key("ssm.time_step_rank") + "' (value heads) " + std::to_string(m.dt_rank) + " x '" + c.key("ssm.state_size") +
                    "' " + std::to_string(m.d_state) + ", and the value heads a multiple of '" + c.key("ssm.group_count") +
                    "' (key heads) " + std::to_string(m.n_group));
    // Which layers are recurrent: the file's list, or all but every interval-th.
    const std::string list_key = c.key("attention.recurrent_layers");
    if (const gguf::Value* v = c.metadata.find(list_key)) {
        // One value per layer, the MTP blocks' included (llama.cpp reads n_layer_all) or not.
        if (v->type() != gguf::ValueType::Array || v->lazy() || (v->count() != s.layers.size() && v->count() != n_all))
            throw Error("GGUF metadata '" + list_key + "': expected one value per layer (" + std::to_string(n_all) + ")");
        for (size_t il = 0; il < s.layers.size(); ++il)
            if (v->items()[il].raw_u64() != 0) s.layers[il].mixer = MixerKind::Recurrent;
    } else {
        const uint64_t interval = c.metadata.find_uint(c.key("full_attention_interval")).value_or(4);
        if (interval < 1 || interval > s.layers.size())
            throw Error("GGUF metadata '" + c.key("full_attention_interval") + "': " + std::to_string(interval) + " is out of range");
        for (size_t il = 0; il < s.layers.size(); ++il)
            if ((il + 1) % interval != 0) s.layers[il].mixer = MixerKind::Recurrent;
    }
    for (LayerSpec& l : s.layers)
        if (l.mixer == MixerKind::Recurrent) l.use_rope = false;
    s.attn_output_gate = true;
    s.tensors.qk_norm = TensorUse::Required;
    s.ffn_norm_tensor = "post_attention_norm.weight";
}

void configure_qwen35(ArchConfig& c) {
    // Qwen 3.5 / 3.6's MTP block: a gated full-attention block of the trunk's kind
    // (llama.cpp's qwen35 / qwen35moe MTP graphs), the draft head.
    read_nextn_layers(c);
    c.spec.tensors.nextn_head = true;
    configure_gated_delta_net(c);
    check_rope_sections(c, c.spec.rope.n_dims / 2);
}

}  // namespace kiln
