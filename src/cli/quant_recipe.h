// Which type each tensor gets when `kiln quantize` makes a preset (Q4_K_M,
// Q5_K_S, Q8_0, ...): llama.cpp's llama-quantize rules, so that the same input
// and options give the same types (and, the quantizers being ggml's reference
// algorithms, the same bytes). The rules, in llama-quantize's order:
//  * only 2D / 3D tensors whose name ends in "weight" are quantized, never norms,
//    the MoE router (ffn_gate_inp), positional / token-type embeddings, Mamba's
//    conv1d, RWKV's small mixing weights, ... (tensor_allows_quantization);
//  * output.weight (and token_embd.weight when the output is tied to it) gets
//    Q6_K for the k-quant presets, Q8_0 when its rows do not fit the block;
//  * attn_v / attn_qkv, ffn_down and attn_output get more bits in some layers for
//    the _M / _L / Q2_K presets (use_more_bits: the first and last eighth of the
//    layers and every third in between), by the preset and the model's GQA ratio
//    and expert count;
//  * a row width that is not a whole number of the type's blocks falls back to a
//    type whose block fits (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K
//    -> Q4_0, IQ4_XS -> IQ4_NL; F16 when even that does not fit).
// The presets that need an importance matrix (IQ1-IQ3) are not offered.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/gguf/file.h"

namespace kiln::cli {

struct QuantPreset {
    std::string_view name;  // as llama-quantize spells it: "Q4_K_M"
    uint32_t ftype;         // general.file_type (llama_ftype)
    GgmlType default_type;  // the type of most tensors
    std::string_view description;
};

std::span<const QuantPreset> quant_presets();
const QuantPreset* find_quant_preset(std::string_view name);  // case-insensitive; nullptr if unknown

struct QuantRecipeOptions {
    bool pure = false;                 // every quantizable tensor the default type (no per-layer mixture)
    bool leave_output_tensor = false;  // output.weight keeps its type
    std::optional<GgmlType> output_tensor_type, token_embedding_type;
    std::vector<std::pair<std::string, GgmlType>> tensor_types;  // --tensor-type PATTERN=TYPE (regex search; first match)
    bool has_imatrix = false;  // some choices differ with an importance matrix (Q4_0 / Q5_0 ffn_down, IQ4_NL)
};

class QuantRecipe {
public:
    QuantRecipe(const gguf::File& file, const QuantPreset& preset, QuantRecipeOptions options);
    // The tensors in llama-quantize's order (by layer, then by name) with their new types.
    struct Entry {
        const gguf::TensorInfo* tensor;
        GgmlType type;
        bool fallback;  // the row width forced another type than the rules chose
    };
    const std::vector<Entry>& entries() const { return entries_; }

private:
    GgmlType choose(const gguf::TensorInfo& t, bool& fallback);
    GgmlType mixture(const gguf::TensorInfo& t, GgmlType type);

    const QuantPreset& preset_;
    QuantRecipeOptions options_;
    std::string arch_;
    int n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, n_expert_ = 0;
    int n_attention_wv_ = 0, i_attention_wv_ = 0, i_ffn_down_ = 0, i_ffn_gate_ = 0, i_ffn_up_ = 0;
    bool tied_embeddings_ = true;
    std::vector<Entry> entries_;
};

}  // namespace kiln::cli
