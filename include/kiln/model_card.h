// A model card: what a GGUF file is, computed from its metadata and tensor table
// alone (no tensor data is read). Used by `kiln inspect` and `kiln analyze`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/gguf/file.h"

namespace kiln {

struct TypeUsage {
    uint64_t tensors = 0;
    uint64_t bytes = 0;
    uint64_t elements = 0;
};

struct ModelCard {
    std::string architecture;
    std::string name, size_label, basename, finetune;
    std::string file_type;  // from general.file_type: "Q4_K_M", "F16", ... ("" if absent)

    std::optional<uint64_t> n_layer, n_embd, n_ctx_train, n_expert, n_expert_used, sliding_window;
    // Per-layer where the file stores arrays; one element when it stores a scalar.
    std::vector<uint64_t> n_head, n_head_kv, n_ff;
    std::optional<uint64_t> head_dim_k, head_dim_v;  // from key_length / value_length, else width / heads
    // Multi-head latent attention (attention.kv_lora_rank with key_length_mla): the
    // cache holds one latent row of head_dim_k values per position and layer, whose
    // first head_dim_v values serve as V; the expanded heads it stands for are
    // n_head x (head_dim_qk + head_dim_v_mla).
    bool latent_kv = false;
    std::optional<uint64_t> head_dim_qk_mla, head_dim_v_mla;

    std::string rope_kind;  // "norm", "neox", "none", "unknown"
    std::optional<uint64_t> rope_dims;
    std::optional<double> rope_freq_base, rope_freq_base_swa;
    std::string rope_scaling;  // "none", "linear", "yarn", "longrope", ...
    std::optional<double> rope_scaling_factor;
    std::optional<uint64_t> rope_scaling_orig_ctx;

    std::string tokenizer_model, tokenizer_pre;
    uint64_t n_vocab = 0;
    std::optional<uint64_t> bos_id, eos_id, eot_id;
    std::string bos_text, eos_text, eot_text;
    bool has_chat_template = false;
    uint64_t chat_template_bytes = 0;

    uint64_t file_size = 0;
    uint64_t n_tensors = 0;
    uint64_t n_params = 0;
    uint64_t data_bytes = 0;
    uint64_t front_bytes = 0;  // header + metadata + tensor table (+ padding), summed over shards
    uint32_t n_shards = 1;
    std::map<std::string, TypeUsage> type_mix;  // by ggml type name

    double bits_per_weight() const { return n_params ? 8.0 * static_cast<double>(data_bytes) / static_cast<double>(n_params) : 0; }
    // KV cache bytes per position for `bytes_per_element` (2 for f16, 34/32 for q8_0),
    // summed over layers: n_head_kv * (head_dim_k + head_dim_v) per layer (latent_kv:
    // n_head_kv * head_dim_k).
    std::optional<double> kv_bytes_per_position(double bytes_per_element) const;
    // latent_kv: what expanded keys and values would take per position,
    // n_head * (head_dim_qk_mla + head_dim_v_mla) per layer (for comparison).
    std::optional<double> expanded_kv_bytes_per_position(double bytes_per_element) const;
};

ModelCard describe_model(const gguf::File& file);

// "Q4_K_M" for general.file_type 15; "" if unknown.
std::string file_type_name(uint64_t file_type);

}  // namespace kiln
