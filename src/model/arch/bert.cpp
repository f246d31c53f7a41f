// bert: the encoder of BERT, MiniLM, BGE and the sentence-transformers models.
// Learned absolute positions and token types are added to the token's row and
// LayerNormed; each block is attention (with biases) and a plain GELU FFN (with
// biases), each followed by the residual add and a LayerNorm (post-norm);
// attention sees the whole sequence; there is no output head: the model's
// outputs are hidden states, pooled by `bert.pooling_type` (kiln/embedding.h).
// The optional classification head (cls, cls.output) scores rank pooling.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_encoder(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (" + s.arch + " uses LayerNorm)");
    if (c.metadata.find_bool(c.key("attention.causal")).value_or(false))
        throw Error("GGUF metadata '" + c.key("attention.causal") + "': " + s.arch + " attention is not causal", ErrorKind::Unsupported);
    s.causal = false;
    s.post_norm = true;
    s.output_head = false;
    // llama.cpp refuses a file of these families without a token type count;
    // its graph adds type 0's row to every token.
    const uint64_t types = c.metadata.find_uint("tokenizer.ggml.token_type_count").value_or(0);
    if (types == 0 || types > (1u << 16))
        throw Error("GGUF metadata 'tokenizer.ggml.token_type_count': " + s.arch + " needs a token type count (found " +
                    std::to_string(types) + ")");
    s.n_token_types = static_cast<int>(types);
    s.tensors.output = TensorUse::No;
}

void configure_bert(ArchConfig& c) {
    configure_encoder(c);
    ModelSpec& s = c.spec;
    s.activation = FfnActivation::Gelu;
    // Projection biases as llama.cpp's bert loader takes them: each optional.
    s.tensors.position_embd = TensorUse::Required;
    s.tensors.attn_out_bias = TensorUse::Optional;
    s.tensors.ffn_bias = TensorUse::Optional;
}

}  // namespace kiln
