// jina-bert-v2: the jina-embeddings-v2 encoders (base-en, small-en, base-code,
// ...). bert's post-norm encoder without position embeddings: ALiBi biases the
// attention scores by distance instead (slopes from a max bias of 8, which
// llama.cpp fixes for this family rather than reading a key). The FFN is GEGLU
// with gate and up stacked in one ffn_up of twice the width (gate first), or a
// separate ffn_gate, or plain GELU, as llama.cpp's graph reads the file; optional
// LayerNorms of Q and K over the whole projection and a second attention norm
// (attn_norm_2, the layer input added again: base-code).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_jina_bert_v2(ArchConfig& c) {
    configure_encoder(c);
    ModelSpec& s = c.spec;
    s.activation = FfnActivation::Gelu;
    s.alibi_max_bias = 8.0f;
    TensorRules& t = s.tensors;
    t.encoder_ffn_gate = TensorUse::Optional;
    t.encoder_ffn_up_gate = true;
    t.attn_norm_2 = TensorUse::Optional;
    t.qk_norm = TensorUse::Optional;
    t.qk_norm_full = true;
    t.attn_out_bias = TensorUse::Required;
    t.ffn_bias = TensorUse::Optional;
}

}  // namespace kiln
