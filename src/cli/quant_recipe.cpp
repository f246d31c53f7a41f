#include "quant_recipe.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <regex>

#include "kiln/error.h"

namespace kiln::cli {

namespace {

using T = GgmlType;

// llama_ftype values (general.file_type).
enum Ftype : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q8_0 = 7, Q5_0 = 8, Q5_1 = 9, Q2_K = 10, Q3_K_S = 11, Q3_K_M = 12, Q3_K_L = 13,
    Q4_K_S = 14, Q4_K_M = 15, Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, IQ2_XXS = 19, IQ2_XS = 20, Q2_K_S = 21, IQ3_XS = 22,
    IQ3_XXS = 23, IQ1_S = 24, IQ4_NL = 25, IQ3_S = 26, IQ3_M = 27, IQ2_S = 28, IQ2_M = 29, IQ4_XS = 30, IQ1_M = 31, BF16 = 32,
    TQ1_0 = 36, TQ2_0 = 37, MXFP4_MOE = 38,
};

constexpr std::array<QuantPreset, 33> k_presets{{
    {"Q4_0", Q4_0, T::Q4_0, "4.34 bits per weight"},
    {"Q4_1", Q4_1, T::Q4_1, "4.78 bpw"},
    {"Q5_0", Q5_0, T::Q5_0, "5.21 bpw"},
    {"Q5_1", Q5_1, T::Q5_1, "5.65 bpw"},
    {"Q8_0", Q8_0, T::Q8_0, "8.50 bpw"},
    {"Q2_K", Q2_K, T::Q2_K, "Q2_K with Q3_K / Q4_K for attn_v, Q3_K for ffn_down and attn_output"},
    {"Q2_K_S", Q2_K_S, T::Q2_K, "Q2_K, Q4_K for the first eighth of ffn_down"},
    {"Q3_K_S", Q3_K_S, T::Q3_K, "Q3_K throughout"},
    {"Q3_K_M", Q3_K_M, T::Q3_K, "Q3_K with Q4_K / Q5_K for attn_v, ffn_down and attn_output"},
    {"Q3_K_L", Q3_K_L, T::Q3_K, "Q3_K with Q5_K for attn_v, ffn_down and attn_output"},
    {"Q4_K_S", Q4_K_S, T::Q4_K, "Q4_K, Q5_K for the first layers' attn_v and ffn_down"},
    {"Q4_K_M", Q4_K_M, T::Q4_K, "Q4_K with Q6_K for half of attn_v and ffn_down"},
    {"Q5_K_S", Q5_K_S, T::Q5_K, "Q5_K throughout"},
    {"Q5_K_M", Q5_K_M, T::Q5_K, "Q5_K with Q6_K for half of attn_v and ffn_down"},
    {"Q6_K", Q6_K, T::Q6_K, "6.56 bpw"},
    {"IQ4_NL", IQ4_NL, T::IQ4_NL, "4.50 bpw non-linear"},
    {"IQ4_XS", IQ4_XS, T::IQ4_XS, "4.25 bpw non-linear"},
    {"IQ3_XXS", IQ3_XXS, T::IQ3_XXS, "3.06 bpw grid (needs an imatrix)"},
    {"IQ3_XS", IQ3_XS, T::IQ3_S, "3.3 bpw grid: IQ3_S, IQ3_XXS for most ffn_gate / ffn_up (needs an imatrix)"},
    {"IQ3_S", IQ3_S, T::IQ3_S, "3.44 bpw grid"},
    {"IQ3_M", IQ3_M, T::IQ3_S, "3.66 bpw grid mix: IQ3_S with Q4_K for attn_v, attn_output and the first ffn_down"},
    {"IQ2_XXS", IQ2_XXS, T::IQ2_XXS, "2.06 bpw grid (needs an imatrix)"},
    {"IQ2_XS", IQ2_XS, T::IQ2_XS, "2.31 bpw grid (needs an imatrix)"},
    {"IQ2_S", IQ2_S, T::IQ2_XS, "2.5 bpw grid: IQ2_XS with IQ3_S for attn_v, attn_output, the first ffn_down (needs an imatrix)"},
    {"IQ1_S", IQ1_S, T::IQ1_S, "1.56 bpw grid: IQ1_S with IQ2_XXS for attn_output, Q2_K for attn_v (needs an imatrix)"},
    {"IQ1_M", IQ1_M, T::IQ1_M, "1.75 bpw grid: IQ1_M with IQ2_XXS for attn_output, Q2_K for attn_v (needs an imatrix)"},
    {"IQ2_M", IQ2_M, T::IQ2_S, "2.7 bpw grid: IQ2_S with IQ3_S for attn_v, attn_output, the first ffn_down (needs an imatrix)"},
    {"TQ1_0", TQ1_0, T::TQ1_0, "1.69 bpw ternary (for ternary-trained models)"},
    {"TQ2_0", TQ2_0, T::TQ2_0, "2.06 bpw ternary (for ternary-trained models)"},
    {"MXFP4_MOE", MXFP4_MOE, T::MXFP4, "MXFP4 experts, Q8_0 elsewhere"},
    {"F16", F16, T::F16, "half precision"},
    {"BF16", BF16, T::BF16, "bfloat16"},
    {"F32", F32, T::F32, "single precision"},
}};

enum class Category { Output, TokenEmbd, AttnQkv, AttnKvB, AttnV, AttnK, AttnQ, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

Category category_of(const std::string& name) {
    if (name == "output.weight") return Category::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
    if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
    if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
    if (contains(name, "attn_v.weight")) return Category::AttnV;
    if (contains(name, "attn_k.weight")) return Category::AttnK;
    if (contains(name, "attn_q.weight")) return Category::AttnQ;
    if (contains(name, "attn_output.weight")) return Category::AttnOutput;
    if (contains(name, "ffn_up")) return Category::FfnUp;
    if (contains(name, "ffn_gate")) return Category::FfnGate;
    if (contains(name, "ffn_down")) return Category::FfnDown;
    return Category::Other;
}

bool is_attn_v_like(Category c) { return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB; }

int n_dims(const gguf::TensorInfo& t) {
    int n = 1;
    for (size_t i = 0; i < t.shape.size(); ++i)
        if (t.shape[i] > 1) n = static_cast<int>(i) + 1;
    return n;
}

// llama-quantize quantizes 2D / 3D "...weight" tensors except these.
bool allows_quantization(const gguf::TensorInfo& t, bool leave_output) {
    if (n_dims(t) < 2) return false;
    const std::string& name = t.name;
    if (name.size() < 6 || name.compare(name.size() - 6, 6, "weight") != 0) return false;
    if (contains(name, "_norm.weight")) return false;
    if (leave_output && name == "output.weight") return false;
    if (name == "position_embd.weight" || name == "token_types.weight") return false;
    static constexpr std::string_view k_kept[] = {
        "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj", "ssm_conv1d",
        "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight",
        "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
        "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
        "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
        "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
        ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"};
    for (std::string_view k : k_kept)
        if (contains(name, k)) return false;
    return true;
}

int layer_of(const std::string& name) {
    int layer = -1;
    std::sscanf(name.c_str(), "blk.%d.", &layer);
    return layer;
}

uint32_t block_of(T type) { return ggml_type_info(type).block_size; }

int metadata_int(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.metadata().find(key);
    if (!v) return 0;
    if (v->type() == gguf::ValueType::Array) {  // per-layer head counts: the first layer's, as llama.cpp's n_gqa(0)
        const auto values = f.read_array(*v);
        return values.empty() || !values.front().is_integer() ? 0 : static_cast<int>(values.front().raw_i64());
    }
    if (!v->is_integer()) throw Error(f.path() + ": " + key + " is " + v->type_description() + ", expected an integer");
    return static_cast<int>(v->raw_i64());
}

}  // namespace

std::span<const QuantPreset> quant_presets() { return k_presets; }

const QuantPreset* find_quant_preset(std::string_view name) {
    for (const QuantPreset& p : k_presets) {
        if (p.name.size() != name.size()) continue;
        bool same = true;
        for (size_t i = 0; i < name.size() && same; ++i)
            same = std::toupper(static_cast<unsigned char>(name[i])) == static_cast<unsigned char>(p.name[i]);
        if (same) return &p;
    }
    return nullptr;
}

QuantRecipe::QuantRecipe(const gguf::File& file, const QuantPreset& preset, QuantRecipeOptions options)
    : preset_(preset), options_(std::move(options)) {
    arch_ = file.metadata().has("general.architecture") ? file.metadata().get_string("general.architecture") : "";
    n_layer_ = metadata_int(file, arch_ + ".block_count");
    n_head_ = metadata_int(file, arch_ + ".attention.head_count");
    n_head_kv_ = metadata_int(file, arch_ + ".attention.head_count_kv");
    if (n_head_kv_ == 0) n_head_kv_ = n_head_;
    n_expert_ = metadata_int(file, arch_ + ".expert_count");
    // llama-quantize's order: by layer (tensors outside the blocks first), then by name.
    std::vector<const gguf::TensorInfo*> order;
    for (const gguf::TensorInfo& t : file.tensors()) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [](const gguf::TensorInfo* a, const gguf::TensorInfo* b) {
        const int la = layer_of(a->name), lb = layer_of(b->name);
        return la != lb ? la < lb : a->name < b->name;
    });
    for (const gguf::TensorInfo* t : order) {
        const Category c = category_of(t->name);
        if (is_attn_v_like(c)) ++n_attention_wv_;
        if (c == Category::Output) tied_embeddings_ = false;
    }
    for (const gguf::TensorInfo* t : order) {
        bool fallback = false;
        const GgmlType type = choose(*t, fallback);
        entries_.push_back({t, type, fallback});
    }
}

GgmlType QuantRecipe::choose(const gguf::TensorInfo& t, bool& fallback) {
    if (!allows_quantization(t, options_.leave_output_tensor)) return t.type;
    const Category c = category_of(t.name);
    if (options_.token_embedding_type && c == Category::TokenEmbd) return *options_.token_embedding_type;
    if (options_.output_tensor_type && c == Category::Output) return *options_.output_tensor_type;
    GgmlType type = preset_.default_type;
    if (!ggml_type_info(type).quantized) return type;
    bool manual = false;
    for (const auto& [pattern, forced] : options_.tensor_types) {
        if (std::regex_search(t.name, std::regex(pattern))) {
            type = forced;
            manual = true;
            break;
        }
    }
    if (!manual && !options_.pure) type = mixture(t, type);
    // A row width that is not a whole number of blocks: the nearest type whose block fits.
    const uint64_t ncols = t.shape[0];
    if (ncols % block_of(type) != 0) {
        fallback = true;
        switch (type) {
            case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: case T::IQ3_XXS:
            case T::IQ3_S: case T::IQ4_XS: type = T::IQ4_NL; break;
            case T::Q2_K: case T::Q3_K: case T::TQ1_0: case T::TQ2_0: type = T::Q4_0; break;
            case T::Q4_K: type = T::Q5_0; break;
            case T::Q5_K: type = T::Q5_1; break;
            case T::Q6_K: type = T::Q8_0; break;
            default:
                if (block_of(type) > 32) throw Error("quantize: no fallback type for " + std::string(ggml_type_name(type)));
        }
        if (ncols % block_of(type) != 0) type = T::F16;
    }
    return type;
}

// llama-quantize's per-tensor mixture for the preset (llama_tensor_get_type_impl),
// for the presets kiln offers.
GgmlType QuantRecipe::mixture(const gguf::TensorInfo& t, GgmlType type) {
    const uint32_t ftype = preset_.ftype;
    const Category c = category_of(t.name);
    const bool falcon = arch_ == "falcon";
    const int n_gqa = n_head_kv_ > 0 ? n_head_ / n_head_kv_ : 0;
    // llama.cpp's 70B type: an 80-layer llama with grouped-query attention.
    const bool is_70b = arch_ == "llama" && n_layer_ == 80 && n_head_ != n_head_kv_;
    auto use_more_bits = [](int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; };
    // The presets whose output (and tied token embedding) is Q5_K rather than Q6_K.
    const bool lowest = ftype == IQ2_XXS || ftype == IQ2_XS || ftype == IQ3_XXS || ftype == IQ1_S || ftype == IQ2_S ||
                        ftype == IQ2_M || ftype == IQ1_M;

    if (c == Category::Output || (tied_embeddings_ && c == Category::TokenEmbd)) {
        if (ftype == MXFP4_MOE || falcon || t.shape[0] % block_of(type) != 0) return T::Q8_0;
        if (lowest) return T::Q5_K;
        return type != T::Q8_0 ? T::Q6_K : type;
    }
    if (ftype == MXFP4_MOE) return t.ne(2) > 1 ? T::MXFP4 : T::Q8_0;
    if (c == Category::TokenEmbd) {
        if (ftype == IQ2_XXS || ftype == IQ2_XS || ftype == IQ1_S || ftype == IQ1_M) return T::Q2_K;
        if (ftype == IQ2_S || ftype == IQ2_M || ftype == IQ3_XXS) return T::IQ3_S;
        return ftype == TQ1_0 || ftype == TQ2_0 ? T::Q4_K : type;
    }
    // The 1-2 bit presets: attn_v, the first eighth of ffn_down and attn_output get more bits.
    if (ftype == IQ2_XXS || ftype == IQ2_XS || ftype == IQ1_S || ftype == IQ2_S || ftype == IQ2_M || ftype == IQ1_M) {
        const bool s_or_m = ftype == IQ2_S || ftype == IQ2_M;
        if (is_attn_v_like(c)) {
            type = n_gqa >= 4 || n_expert_ >= 4 ? T::Q4_K : s_or_m ? T::IQ3_S : T::Q2_K;
            ++i_attention_wv_;
        } else if (n_expert_ == 8 && c == Category::AttnK) {
            type = T::Q4_K;
        } else if (c == Category::FfnDown) {
            if (i_ffn_down_ < n_layer_ / 8) type = s_or_m ? T::IQ3_S : T::Q2_K;
            ++i_ffn_down_;
        } else if (c == Category::AttnOutput) {
            if (n_expert_ == 8) type = T::Q5_K;
            else if (ftype == IQ1_S || ftype == IQ1_M) type = T::IQ2_XXS;
            else if (s_or_m) type = T::IQ3_S;
        }
        return type;
    }
    if (is_attn_v_like(c)) {
        if (ftype == Q2_K) type = n_gqa >= 4 ? T::Q4_K : T::Q3_K;
        else if (ftype == Q2_K_S && n_gqa >= 4) type = T::Q4_K;
        else if (ftype == IQ3_XXS) type = n_gqa >= 4 ? T::Q4_K : !options_.has_imatrix ? T::IQ3_S : T::IQ3_XXS;
        else if ((ftype == IQ3_XS || ftype == IQ3_S) && n_gqa >= 4) type = T::Q4_K;
        else if (ftype == IQ3_M) type = T::Q4_K;
        else if (ftype == Q3_K_M) type = i_attention_wv_ < 2 ? T::Q5_K : T::Q4_K;
        else if (ftype == Q3_K_L) type = T::Q5_K;
        else if ((ftype == IQ4_NL || ftype == IQ4_XS) && n_gqa >= 4) type = T::Q5_K;
        else if ((ftype == Q4_K_M || ftype == Q5_K_M) && use_more_bits(i_attention_wv_, n_attention_wv_)) type = T::Q6_K;
        else if (ftype == Q4_K_S && i_attention_wv_ < 4) type = T::Q5_K;
        if (is_70b && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
        if (n_expert_ == 8) type = T::Q8_0;
        ++i_attention_wv_;
        return type;
    }
    if (c == Category::AttnK) {
        if (n_expert_ == 8) return T::Q8_0;
        return ftype == IQ3_XS ? T::IQ3_XXS : ftype == IQ3_XXS ? T::IQ2_S : type;
    }
    if (c == Category::AttnQ) return ftype == IQ3_XS ? T::IQ3_XXS : ftype == IQ3_XXS ? T::IQ2_S : type;
    if (c == Category::FfnDown) {
        int i_layer = i_ffn_down_;
        const int n_layer = n_layer_;
        if (n_expert_ > 1) {  // experts need not be in layer order: the layer from the name
            i_layer = layer_of(t.name);
            if (i_layer < 0 || i_layer >= n_layer)
                throw Error("quantize: cannot tell the layer of " + t.name + " (block_count " + std::to_string(n_layer) + ")");
        }
        if (ftype == Q2_K) type = T::Q3_K;
        else if (ftype == Q2_K_S) { if (i_layer < n_layer / 8) type = T::Q4_K; }
        else if (ftype == IQ3_XXS && !options_.has_imatrix) type = i_layer < n_layer / 8 ? T::Q4_K : T::Q3_K;
        else if (ftype == Q3_K_M)
            type = i_layer < n_layer / 16 ? T::Q5_K : !falcon || use_more_bits(i_layer, n_layer) ? T::Q4_K : T::Q3_K;
        else if (ftype == IQ3_M && (i_layer < n_layer / 8 || (n_expert_ == 8 && use_more_bits(i_layer, n_layer)))) type = T::Q4_K;
        else if (ftype == Q3_K_L) type = falcon ? T::Q4_K : T::Q5_K;
        else if (ftype == Q4_K_M) {
            if (falcon) type = i_layer < n_layer / 16 ? T::Q6_K : use_more_bits(i_layer, n_layer) ? T::Q5_K : T::Q4_K;
            else if (use_more_bits(i_layer, n_layer)) type = T::Q6_K;
        }
        else if (i_layer < n_layer / 8 && (ftype == IQ4_NL || ftype == IQ4_XS) && !options_.has_imatrix) type = T::Q5_K;
        else if (ftype == Q5_K_M && use_more_bits(i_layer, n_layer)) type = T::Q6_K;
        else if (ftype == Q4_K_S && !falcon && i_layer < n_layer / 8) type = T::Q5_K;
        else if ((ftype == Q4_0 || ftype == Q5_0) && options_.has_imatrix && i_layer < n_layer / 8)
            type = ftype == Q4_0 ? T::Q4_1 : T::Q5_1;  // llama.cpp: guards the first ffn_down layers, with an imatrix only
        ++i_ffn_down_;
        return type;
    }
    if (c == Category::AttnOutput) {
        if (!falcon) {
            if (n_expert_ == 8) {
                if (ftype == Q2_K || ftype == IQ3_XS || ftype == IQ3_XXS || ftype == Q3_K_S || ftype == Q3_K_M ||
                    ftype == IQ4_NL || ftype == Q4_K_S || ftype == Q4_K_M || ftype == IQ3_S || ftype == IQ3_M || ftype == IQ4_XS)
                    type = T::Q5_K;
            } else {
                if (ftype == Q2_K) type = T::Q3_K;
                else if (ftype == IQ3_XXS) type = T::IQ3_S;
                else if (ftype == Q3_K_M) type = T::Q4_K;
                else if (ftype == Q3_K_L) type = T::Q5_K;
                else if (ftype == IQ3_M) type = T::Q4_K;
            }
        } else if (ftype == Q3_K_L) {
            type = T::Q4_K;
        }
        return type;
    }
    if (c == Category::AttnQkv) {
        if (ftype == Q3_K_M || ftype == Q3_K_L || ftype == IQ3_M) type = T::Q4_K;
        else if (ftype == Q4_K_M) type = T::Q5_K;
        else if (ftype == Q5_K_M) type = T::Q6_K;
    }
    // IQ3_XS: the middle three quarters of ffn_gate and ffn_up are IQ3_XXS (layer counted
    // per category, from the name when there are experts).
    if (c == Category::FfnGate || c == Category::FfnUp) {
        int& counter = c == Category::FfnGate ? i_ffn_gate_ : i_ffn_up_;
        int i_layer = counter++;
        if (n_expert_ > 1) {
            i_layer = layer_of(t.name);
            if (i_layer < 0 || i_layer >= n_layer_)
                throw Error("quantize: cannot tell the layer of " + t.name + " (block_count " + std::to_string(n_layer_) + ")");
        }
        if (ftype == IQ3_XS && i_layer >= n_layer_ / 8 && i_layer < 7 * n_layer_ / 8) type = T::IQ3_XXS;
    }
    return type;
}

}  // namespace kiln::cli
