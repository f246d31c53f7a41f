// apertus (Swiss AI Apertus 8B / 70B): llama's attention with NEOX RoPE
// (rope_freqs, or the LongRoPE factors with type longrope, by presence),
// per-head Q/K RMS norms before RoPE (required; their biases, which llama.cpp
// loads but never adds, are refused), an optional attention-output bias, and a
// plain FFN with the xIELU activation: down(xielu(up(x))), its four constants
// per layer from the keys xielu.alpha_n / alpha_p / beta / eps (scalars or
// per-layer arrays, required; written without the architecture prefix, as
// llama.cpp names them). Separate output head (required).
#include <cmath>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

// A float key as one value or one per layer.
std::vector<float> per_layer_floats(const gguf::Metadata& md, const std::string& key, size_t n_layer) {
    const gguf::Value* v = md.find(key);
    if (!v) throw Error("GGUF metadata key '" + key + "' not found");
    if (v->type() != gguf::ValueType::Array) return std::vector<float>(n_layer, static_cast<float>(md.get_float(key)));
    if (v->lazy() || v->count() != n_layer)
        throw Error("GGUF metadata '" + key + "': " + std::to_string(v->count()) + " values for " + std::to_string(n_layer) +
                    " layers");
    std::vector<float> out;
    for (const gguf::Value& x : v->items()) {
        if (!x.is_float()) gguf::Metadata::type_error(key, "array of floats", *v);
        out.push_back(static_cast<float>(x.raw_f64()));
    }
    return out;
}

float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // ggml's, in float

}  // namespace

void configure_apertus(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.qk_norm = TensorUse::Required;
    t.attn_out_bias = TensorUse::Optional;
    t.output = TensorUse::Required;
    (s.rope.scaling == "longrope" ? t.rope_long_short : t.rope_freqs) = TensorUse::Optional;
    s.activation = FfnActivation::Xielu;
    const size_t n = s.layers.size();
    const std::vector<float> alpha_n = per_layer_floats(c.metadata, "xielu.alpha_n", n);
    const std::vector<float> alpha_p = per_layer_floats(c.metadata, "xielu.alpha_p", n);
    const std::vector<float> beta = per_layer_floats(c.metadata, "xielu.beta", n);
    const std::vector<float> eps = per_layer_floats(c.metadata, "xielu.eps", n);
    for (size_t il = 0; il < n; ++il)
        s.layers[il].xielu = {.alpha_n = beta[il] + softplus(alpha_n[il]), .alpha_p = softplus(alpha_p[il]), .beta = beta[il],
                              .eps = eps[il]};
}

}  // namespace kiln
