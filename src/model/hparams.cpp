#include "model/hparams.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "kiln/error.h"

namespace kiln {

int ModelSpec::max_n_head() const {
    int m = 0;
    for (const auto& l : layers) m = std::max(m, l.n_head);
    return m;
}
int ModelSpec::max_n_head_kv() const {
    int m = 0;
    for (const auto& l : layers) m = std::max(m, l.n_head_kv);
    return m;
}
int ModelSpec::max_n_ff() const {
    int m = 0;
    for (const auto& l : layers) m = std::max({m, l.n_ff, l.n_ff_dense});
    return m;
}
int ModelSpec::max_head_dim_k() const {
    int m = head_dim_k;
    for (const auto& l : layers) m = std::max(m, l.head_dim_k);
    return m;
}
int ModelSpec::max_head_dim_v() const {
    int m = head_dim_v;
    for (const auto& l : layers) m = std::max(m, l.head_dim_v);
    return m;
}

namespace {

using gguf::Metadata;
using gguf::Value;
using gguf::ValueType;

// A value bounded to int: the file decides sizes, but they must be positive
// and fit the arithmetic that uses them.
int to_int(const std::string& key, uint64_t v) {
    if (v > (1u << 30)) throw Error("GGUF metadata '" + key + "': value " + std::to_string(v) + " is out of range");
    return static_cast<int>(v);
}

// Scalar or per-layer array of integers, expanded to n_layer values.
std::vector<int> per_layer(const Metadata& md, const std::string& key, int n_layer, std::optional<std::vector<int>> fallback) {
    const Value* v = md.find(key);
    if (!v) {
        if (fallback) return *fallback;
        md.at(key);  // throws "not found"
    }
    if (v->type() == ValueType::Array) {
        if (v->lazy() || v->count() != static_cast<uint64_t>(n_layer))
            throw Error("GGUF metadata '" + key + "': per-layer array has " + std::to_string(v->count()) +
                        " values for " + std::to_string(n_layer) + " layers");
        std::vector<int> out;
        for (const Value& x : v->items()) {
            if (!x.is_integer()) Metadata::type_error(key, "array of integers", *v);
            out.push_back(to_int(key, x.raw_u64()));
        }
        return out;
    }
    return std::vector<int>(static_cast<size_t>(n_layer), to_int(key, md.get_uint(key)));
}

// RoPE dimensions, base and scaling of a rotary family.
void read_rope(const Metadata& md, const std::function<std::string(const char*)>& k, ModelSpec& s) {
    s.rope.n_dims = md.has(k("rope.dimension_count")) ? to_int(k("rope.dimension_count"), md.get_uint(k("rope.dimension_count")))
                                                       : s.head_dim_k;
    if (s.rope.n_dims <= 0 || s.rope.n_dims % 2 != 0 || s.rope.n_dims > s.head_dim_k)
        throw Error("GGUF metadata '" + k("rope.dimension_count") + "': " + std::to_string(s.rope.n_dims) +
                    " must be even and at most the head size " + std::to_string(s.head_dim_k));
    s.rope.freq_base = static_cast<float>(md.find_float(k("rope.freq_base")).value_or(10000.0));
    if (!(s.rope.freq_base > 0.0f)) throw Error("GGUF metadata '" + k("rope.freq_base") + "' must be positive");
    // Scaling as llama.cpp reads it: the type defaults to linear, a factor of 0
    // (or none given) means no scaling, and type none ignores the factor.
    s.rope.scaling = md.find_string(k("rope.scaling.type")).value_or("linear");
    std::optional<double> factor = md.find_float(k("rope.scaling.factor"));
    if (!factor) factor = md.find_float(k("rope.scale_linear"));  // older key
    // longrope scales as linear does; its per-pair factors are tensors (weights.cpp).
    if (s.rope.scaling != "none" && s.rope.scaling != "linear" && s.rope.scaling != "yarn" && s.rope.scaling != "longrope")
        throw Error("GGUF metadata '" + k("rope.scaling.type") + "': unsupported RoPE scaling '" + s.rope.scaling +
                        "' (kiln reads none, linear, yarn and longrope)",
                    ErrorKind::Unsupported);
    const double f = factor.value_or(0.0);
    if (f < 0.0 || !std::isfinite(f)) throw Error("GGUF metadata '" + k("rope.scaling.factor") + "' must be 0 (none) or positive");
    s.rope.freq_scale = s.rope.scaling == "none" || f == 0.0 ? 1.0f : static_cast<float>(1.0 / f);
    s.rope.n_ctx_orig = md.has(k("rope.scaling.original_context_length"))
                            ? to_int(k("rope.scaling.original_context_length"), md.get_uint(k("rope.scaling.original_context_length")))
                            : s.n_ctx_train;
    // The rotation's magnitude (ggml's attn_factor): rope.scaling.attn_factor,
    // for every scaling type. With YaRN llama.cpp enables the ramp (ext_factor 1)
    // and divides out the 1 + 0.1 ln(factor) that the rotation multiplies in,
    // unless the factor is at most 1.
    const float attn = static_cast<float>(md.find_float(k("rope.scaling.attn_factor")).value_or(1.0));
    s.rope.yarn_attn_factor = attn;
    if (s.rope.scaling == "yarn") {
        s.rope.yarn_ext_factor = 1.0f;
        s.rope.yarn_attn_factor = yarn_attn_factor(1.0f / s.rope.freq_scale, 1.0f, 0.0f, attn);
    }
}

}  // namespace

ModelSpec read_model_spec(const gguf::File& file, const ArchRow& row, const std::string& prefix) {
    const Metadata& md = file.metadata();
    ModelSpec s;
    s.arch = std::string(row.name);
    const std::string& p = prefix;
    auto k = [&](const char* name) { return p + name; };

    s.n_layer = to_int(k("block_count"), md.get_uint(k("block_count")));
    s.n_embd = to_int(k("embedding_length"), md.get_uint(k("embedding_length")));
    s.n_ctx_train = to_int(k("context_length"), md.get_uint(k("context_length")));
    if (s.n_layer <= 0 || s.n_embd <= 0)
        throw Error("GGUF metadata: " + k("block_count") + " and " + k("embedding_length") + " must be positive");

    // Attention-free models (recurrent rows) may leave out heads and FFN widths
    // (or write 0, as llama.cpp's converter does); a layer without heads must
    // then be made recurrent by the family (checked after configure).
    const bool attention_free = row.memory == MemoryKind::Recurrent;
    // Hybrids mark their recurrent layers by 0 heads or KV heads (lfm2, nemotron_h).
    const bool layers_may_lack_heads = row.memory != MemoryKind::Kv;
    const std::optional<std::vector<int>> none =
        attention_free ? std::optional<std::vector<int>>(std::vector<int>(static_cast<size_t>(s.n_layer), 0)) : std::nullopt;
    std::vector<int> heads = per_layer(md, k("attention.head_count"), s.n_layer, none);
    std::vector<int> heads_kv = per_layer(md, k("attention.head_count_kv"), s.n_layer, heads);
    std::vector<int> ff = per_layer(md, k("feed_forward_length"), s.n_layer, none);
    s.layers.resize(static_cast<size_t>(s.n_layer));
    for (int il = 0; il < s.n_layer; ++il) {
        LayerSpec& l = s.layers[static_cast<size_t>(il)];
        l.n_head = heads[static_cast<size_t>(il)];
        l.n_head_kv = heads_kv[static_cast<size_t>(il)];
        l.n_ff = ff[static_cast<size_t>(il)];
        if (layers_may_lack_heads && (l.n_head == 0 || l.n_head_kv == 0)) continue;  // checked after configure
        if (l.n_head <= 0 || l.n_head_kv <= 0 || l.n_head % l.n_head_kv != 0)
            throw Error("layer " + std::to_string(il) + ": " + std::to_string(l.n_head) + " heads cannot be grouped over " +
                        std::to_string(l.n_head_kv) + " KV heads (" + k("attention.head_count_kv") + ")");
        if (l.n_ff <= 0 && !layers_may_lack_heads) throw Error("GGUF metadata '" + k("feed_forward_length") + "' must be positive");
    }
    int head0 = 0;  // the first layer with heads decides the head size
    for (const LayerSpec& l : s.layers)
        if (head0 == 0) head0 = l.n_head;
    s.head_dim_k = md.has(k("attention.key_length")) ? to_int(k("attention.key_length"), md.get_uint(k("attention.key_length")))
                                                      : (head0 > 0 ? s.n_embd / head0 : 0);
    s.head_dim_v = md.has(k("attention.value_length"))
                       ? to_int(k("attention.value_length"), md.get_uint(k("attention.value_length")))
                       : s.head_dim_k;
    if ((s.head_dim_k <= 0 || s.head_dim_v <= 0) && !attention_free) throw Error("GGUF metadata: head size must be positive");

    if (md.has(k("attention.layer_norm_rms_epsilon"))) {
        s.norm = NormKind::Rms;
        s.norm_eps = static_cast<float>(md.get_float(k("attention.layer_norm_rms_epsilon")));
    } else if (md.has(k("attention.layer_norm_epsilon"))) {
        s.norm = NormKind::Layer;
        s.norm_eps = static_cast<float>(md.get_float(k("attention.layer_norm_epsilon")));
    } else {
        throw Error("GGUF metadata key '" + k("attention.layer_norm_rms_epsilon") + "' not found");
    }

    s.memory = row.memory;
    s.causal = md.find_bool(k("attention.causal")).value_or(true);

    // RoPE (none: positions enter some other way, or not at all)
    switch (row.rope) {
        case RopeKind::Norm: s.rope.layout = ops::RopeLayout::Norm; break;
        case RopeKind::Neox: s.rope.layout = ops::RopeLayout::Neox; break;
        case RopeKind::None:
            s.rope.n_dims = 0;
            for (LayerSpec& l : s.layers) l.use_rope = false;
            break;
        default: throw Error("architecture '" + s.arch + "' has no supported RoPE layout", ErrorKind::Unsupported);
    }
    if (row.rope != RopeKind::None) read_rope(md, k, s);
    s.rope.freq_base_swa = static_cast<float>(md.find_float(k("rope.freq_base_swa")).value_or(0.0));

    if (auto w = md.find_uint(k("attention.sliding_window"))) s.sliding_window = to_int(k("attention.sliding_window"), *w);

    if (const Value* t = md.find("tokenizer.ggml.tokens"); t && t->type() == ValueType::Array)
        s.n_vocab = to_int("tokenizer.ggml.tokens", t->count());

    if (auto v = md.find_uint(k("pooling_type"))) {
        if (*v > static_cast<uint64_t>(Pooling::Rank))
            throw Error("GGUF metadata '" + k("pooling_type") + "': " + std::to_string(*v) +
                            " is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)",
                        ErrorKind::Unsupported);
        s.pooling = static_cast<Pooling>(*v);
    }

    if (auto v = md.find_uint(k("classifier.pooling_type"))) s.rank_mean = *v == static_cast<uint64_t>(Pooling::Mean);

    ArchConfig cfg{md, p, s};
    row.configure(cfg);
    // What configure made of an attention-free file: every layer has a mixer that
    // its numbers can run, and an FFN only with a width.
    for (int il = 0; il < s.n_layer; ++il) {
        LayerSpec& l = s.layers[static_cast<size_t>(il)];
        if (l.head_dim_k == 0) l.head_dim_k = s.head_dim_k;
        if (l.head_dim_v == 0) l.head_dim_v = s.head_dim_v;
        if (l.mixer == MixerKind::Attention &&
            (l.n_head <= 0 || l.n_head_kv <= 0 || l.n_head % l.n_head_kv != 0 || l.head_dim_k <= 0))
            throw Error("layer " + std::to_string(il) + ": an attention layer with " + std::to_string(l.n_head) + " heads over " +
                        std::to_string(l.n_head_kv) + " KV heads (" + k("attention.head_count") + ", " +
                        k("attention.head_count_kv") + ")");
        if (l.has_recurrent_state() && s.ssm.kind == SsmKind::None)
            throw Error("layer " + std::to_string(il) + ": a recurrent layer without a recurrence (architecture '" + s.arch + "')",
                        ErrorKind::Internal);
        if (l.ffn != FfnKind::None && l.n_ff <= 0)
            throw Error("GGUF metadata '" + k("feed_forward_length") + "' must be positive (layer " + std::to_string(il) + ")");
    }
    for (LayerSpec& l : s.nextn_layers) {  // decoder blocks of the trunk's attention kind
        if (l.head_dim_k == 0) l.head_dim_k = s.head_dim_k;
        if (l.head_dim_v == 0) l.head_dim_v = s.head_dim_v;
    }
    return s;
}

void read_swa_pattern(const ArchConfig& c, int default_period, bool dense_first) {
    const std::string key = c.key("attention.sliding_window_pattern");
    std::vector<LayerSpec>& layers = c.spec.layers;
    const Value* v = c.metadata.find(key);
    if (v && v->type() == ValueType::Array) {
        if (v->lazy() || v->count() != layers.size())
            throw Error("GGUF metadata '" + key + "': " + std::to_string(v->count()) + " values for " +
                        std::to_string(layers.size()) + " layers");
        size_t il = 0;
        for (const Value& x : v->items()) {
            if (x.type() != ValueType::Bool) Metadata::type_error(key, "array of bools", *v);
            layers[il++].sliding = x.raw_bool();
        }
        return;
    }
    const int n = v ? to_int(key, c.metadata.get_uint(key)) : default_period;
    for (size_t i = 0; i < layers.size(); ++i) {
        const int il = static_cast<int>(i);
        layers[i].sliding = n == 0 || (dense_first ? il % n != 0 : il % n < n - 1);
    }
}

void read_nextn_layers(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const int n = c.count("nextn_predict_layers", false);
    if (n == 0) return;
    if (n >= s.n_layer)
        throw Error("GGUF metadata '" + c.key("nextn_predict_layers") + "': " + std::to_string(n) + " of the " +
                    std::to_string(s.n_layer) + " layers (" + c.key("block_count") + ") leave no trunk");
    s.n_layer_nextn = n;
    s.n_layer -= n;
    s.nextn_layers.assign(s.layers.begin() + s.n_layer, s.layers.end());
    s.layers.resize(static_cast<size_t>(s.n_layer));
}

float yarn_attn_factor(float factor, float mscale, float log_mul, float rope_attn_factor) {
    const auto get_mscale = [](float scale, float m) { return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f; };
    float a = log_mul != 0.0f ? get_mscale(factor, mscale) / get_mscale(factor, log_mul) : get_mscale(factor, 1.0f);
    a *= 1.0f / (1.0f + 0.1f * std::log(factor));
    return a * rope_attn_factor;
}

void require_full_rotation(const ArchConfig& c) {
    const ModelSpec& s = c.spec;
    if (s.rope.n_dims != s.head_dim_k)
        throw Error("GGUF metadata '" + c.key("rope.dimension_count") + "': " + std::to_string(s.rope.n_dims) +
                    " rotated dimensions, but " + s.arch + " rotates the whole head (" + std::to_string(s.head_dim_k) + ")");
}

}  // namespace kiln
