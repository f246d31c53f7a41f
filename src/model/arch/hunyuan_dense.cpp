// hunyuan-dense (Hunyuan 0.5B-7B dense): llama's block with NEOX RoPE and
// per-head Q/K RMS norms (required) applied after RoPE, not before; Q/K/V
// biases by presence, output head separate or tied. rope.scaling.alpha (XDRoPE's
// NTK-aware scaling) raises the base to base * alpha^(d / (d - 2)), d the head
// size, as llama.cpp computes it. Multimodal RoPE sections (Hunyuan-VL) are
// refused with a named error.
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_hunyuan_dense(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.tensors.qk_norm = TensorUse::Required;
    s.tensors.qk_norm_after_rope = true;
    const std::string sections = c.key("rope.dimension_sections");
    if (const gguf::Value* v = c.metadata.find(sections); v && v->type() == gguf::ValueType::Array && v->count() >= 2 &&
                                                          !v->lazy() && v->items()[0].raw_u64() > 0 && v->items()[1].raw_u64() > 0)
        throw Error("GGUF metadata '" + sections + "': multimodal RoPE sections are not supported", ErrorKind::Unsupported);
    const float alpha = static_cast<float>(c.metadata.find_float(c.key("rope.scaling.alpha")).value_or(0.0));
    if (alpha > 0.0f) {
        if (s.head_dim_k <= 2) throw Error("GGUF metadata '" + c.key("rope.scaling.alpha") + "': head size too small");
        const float d = static_cast<float>(s.head_dim_k);
        s.rope.freq_base = s.rope.freq_base * std::pow(alpha, d / (d - 2.0f));
    }
}

}  // namespace kiln
