#include <algorithm>

#include "kiln/error.h"
#include "kiln/model_card.h"
#include "model/registry.h"

namespace kiln {

namespace {

using gguf::Metadata;
using gguf::Value;
using gguf::ValueType;

// A hyperparameter that may be a scalar or a per-layer array of integers.
std::vector<uint64_t> per_layer(const Metadata& md, const std::string& key) {
    const Value* v = md.find(key);
    if (!v) return {};
    if (v->type() == ValueType::Array) {
        if (v->lazy()) return {};
        std::vector<uint64_t> out;
        for (const Value& x : v->items()) {
            if (!x.is_integer()) Metadata::type_error(key, "array of integers", *v);
            out.push_back(x.raw_u64());
        }
        return out;
    }
    return {md.get_uint(key)};
}

std::string token_text(const gguf::File& file, uint64_t id) {
    const Value* tokens = file.metadata().find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type() != ValueType::Array || tokens->elem_type() != ValueType::String ||
        id >= tokens->count())
        return "";
    if (!tokens->lazy()) return tokens->items()[id].raw_string();
    return "";  // filled in by describe_model from one read of the array
}

}  // namespace

std::string file_type_name(uint64_t ft) {
    switch (ft) {
        case 0: return "F32";
        case 1: return "F16";
        case 2: return "Q4_0";
        case 3: return "Q4_1";
        case 7: return "Q8_0";
        case 8: return "Q5_0";
        case 9: return "Q5_1";
        case 10: return "Q2_K";
        case 11: return "Q3_K_S";
        case 12: return "Q3_K_M";
        case 13: return "Q3_K_L";
        case 14: return "Q4_K_S";
        case 15: return "Q4_K_M";
        case 16: return "Q5_K_S";
        case 17: return "Q5_K_M";
        case 18: return "Q6_K";
        case 19: return "IQ2_XXS";
        case 20: return "IQ2_XS";
        case 21: return "Q2_K_S";
        case 22: return "IQ3_XS";
        case 23: return "IQ3_XXS";
        case 24: return "IQ1_S";
        case 25: return "IQ4_NL";
        case 26: return "IQ3_S";
        case 27: return "IQ3_M";
        case 28: return "IQ2_S";
        case 29: return "IQ2_M";
        case 30: return "IQ4_XS";
        case 31: return "IQ1_M";
        case 32: return "BF16";
        case 36: return "TQ1_0";
        case 37: return "TQ2_0";
        case 38: return "MXFP4_MOE";
        case 39: return "NVFP4";
        case 40: return "Q1_0";
        default: return "";
    }
}

std::optional<double> ModelCard::kv_bytes_per_position(double bytes_per_element) const {
    if (!n_layer || n_head_kv.empty()) return std::nullopt;
    double total = 0;
    for (uint64_t il = 0; il < *n_layer; ++il) {
        uint64_t hkv = n_head_kv.size() == 1 ? n_head_kv[0] : (il < n_head_kv.size() ? n_head_kv[il] : 0);
        uint64_t hq = n_head.empty() ? 0 : (n_head.size() == 1 ? n_head[0] : (il < n_head.size() ? n_head[il] : 0));
        uint64_t dk = head_dim_k.value_or(hq && n_embd ? *n_embd / hq : 0);
        uint64_t dv = head_dim_v.value_or(dk);
        total += static_cast<double>(hkv * (dk + (latent_kv ? 0 : dv))) * bytes_per_element;
    }
    return total;
}

std::optional<double> ModelCard::expanded_kv_bytes_per_position(double bytes_per_element) const {
    if (!latent_kv || !n_layer || n_head.empty() || !head_dim_qk_mla || !head_dim_v_mla) return std::nullopt;
    double total = 0;
    for (uint64_t il = 0; il < *n_layer; ++il) {
        const uint64_t hq = n_head.size() == 1 ? n_head[0] : (il < n_head.size() ? n_head[il] : 0);
        total += static_cast<double>(hq * (*head_dim_qk_mla + *head_dim_v_mla)) * bytes_per_element;
    }
    return total;
}

ModelCard describe_model(const gguf::File& file) {
    const Metadata& md = file.metadata();
    ModelCard c;
    c.architecture = md.has("general.architecture") ? md.get_string("general.architecture") : "";
    const std::string a = c.architecture + ".";
    c.name = md.find_string("general.name").value_or("");
    c.size_label = md.find_string("general.size_label").value_or("");
    c.basename = md.find_string("general.basename").value_or("");
    c.finetune = md.find_string("general.finetune").value_or("");
    if (auto ft = md.find_uint("general.file_type")) c.file_type = file_type_name(*ft);

    c.n_layer = md.find_uint(a + "block_count");
    c.n_embd = md.find_uint(a + "embedding_length");
    c.n_ctx_train = md.find_uint(a + "context_length");
    c.n_expert = md.find_uint(a + "expert_count");
    c.n_expert_used = md.find_uint(a + "expert_used_count");
    c.sliding_window = md.find_uint(a + "attention.sliding_window");
    c.n_head = per_layer(md, a + "attention.head_count");
    c.n_head_kv = per_layer(md, a + "attention.head_count_kv");
    if (c.n_head_kv.empty()) c.n_head_kv = c.n_head;  // absent means no grouping (llama.cpp's default)
    c.n_ff = per_layer(md, a + "feed_forward_length");
    c.head_dim_k = md.find_uint(a + "attention.key_length");
    c.head_dim_v = md.find_uint(a + "attention.value_length");
    if (!c.head_dim_k && c.n_embd && !c.n_head.empty() && c.n_head[0] > 0) c.head_dim_k = *c.n_embd / c.n_head[0];
    if (!c.head_dim_v) c.head_dim_v = c.head_dim_k;
    c.head_dim_qk_mla = md.find_uint(a + "attention.key_length_mla");
    c.head_dim_v_mla = md.find_uint(a + "attention.value_length_mla");
    c.latent_kv = md.find_uint(a + "attention.kv_lora_rank").value_or(0) > 0 && c.head_dim_qk_mla && c.head_dim_v_mla;

    const ArchRow* row = find_architecture(c.architecture);
    c.rope_kind = std::string(rope_kind_name(row ? row->rope : RopeKind::Unknown));
    c.rope_dims = md.find_uint(a + "rope.dimension_count");
    c.rope_freq_base = md.find_float(a + "rope.freq_base");
    c.rope_freq_base_swa = md.find_float(a + "rope.freq_base_swa");
    c.rope_scaling = md.find_string(a + "rope.scaling.type").value_or("none");
    c.rope_scaling_factor = md.find_float(a + "rope.scaling.factor");
    c.rope_scaling_orig_ctx = md.find_uint(a + "rope.scaling.original_context_length");

    c.tokenizer_model = md.find_string("tokenizer.ggml.model").value_or("");
    c.tokenizer_pre = md.find_string("tokenizer.ggml.pre").value_or("");
    if (const Value* t = md.find("tokenizer.ggml.tokens"); t && t->type() == ValueType::Array) c.n_vocab = t->count();
    c.bos_id = md.find_uint("tokenizer.ggml.bos_token_id");
    c.eos_id = md.find_uint("tokenizer.ggml.eos_token_id");
    c.eot_id = md.find_uint("tokenizer.ggml.eot_token_id");
    if (c.bos_id || c.eos_id || c.eot_id) {
        const Value* t = md.find("tokenizer.ggml.tokens");
        if (t && t->type() == ValueType::Array && t->elem_type() == ValueType::String) {
            std::vector<std::string> texts;
            if (t->lazy()) texts = file.read_strings("tokenizer.ggml.tokens");
            auto text = [&](uint64_t id) { return t->lazy() ? (id < texts.size() ? texts[id] : "") : token_text(file, id); };
            if (c.bos_id) c.bos_text = text(*c.bos_id);
            if (c.eos_id) c.eos_text = text(*c.eos_id);
            if (c.eot_id) c.eot_text = text(*c.eot_id);
        }
    }
    if (auto tpl = md.find_string("tokenizer.chat_template")) {
        c.has_chat_template = true;
        c.chat_template_bytes = tpl->size();
    }

    c.file_size = file.total_file_size();
    c.n_tensors = file.tensors().size();
    c.n_shards = static_cast<uint32_t>(file.shards().size());
    for (const auto& s : file.shards()) c.front_bytes += s.data_offset;
    for (const gguf::TensorInfo& t : file.tensors()) {
        c.n_params += t.n_elements();
        c.data_bytes += t.bytes;
        TypeUsage& u = c.type_mix[std::string(ggml_type_name(t.type))];
        u.tensors += 1;
        u.bytes += t.bytes;
        u.elements += t.n_elements();
    }
    return c;
}

}  // namespace kiln
