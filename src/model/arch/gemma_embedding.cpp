// gemma-embedding: EmbeddingGemma. Gemma 3's layers (sqrt(width) embedding
// scale, per-head QK-norm, post-attention and post-FFN norms, GELU-gated FFN,
// five sliding layers to one full one) with attention that is not causal: a
// sliding layer sees sliding_window / 2 positions on each side (llama.cpp's
// symmetric window); queries scaled by 1/sqrt(head size); the final norm's rows
// are the hidden states (no output head; an output.weight is loaded and never
// read, as llama.cpp's loader does). Pooling from the file (mean for
// EmbeddingGemma), then the sentence-transformers Dense projections dense_2 /
// dense_3 where the file has them (converted with
// --sentence-transformers-dense-modules), applied by the Embedder.
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gemma_embedding(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.sliding_window <= 0)  // llama.cpp requires the key for this family
        throw Error("GGUF metadata key '" + c.key("attention.sliding_window") + "' not found (gemma-embedding needs its window)");
    configure_gemma3(c);
    if (c.metadata.find_bool(c.key("attention.causal")).value_or(false))
        throw Error("GGUF metadata '" + c.key("attention.causal") + "': gemma-embedding attention is not causal", ErrorKind::Unsupported);
    s.causal = false;
    s.swa_symmetric = true;
    s.attention_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
    s.final_softcap = 0.0f;  // no logits
    s.output_head = false;
    s.tensors.output = TensorUse::No;
    s.tensors.output_unread = true;
    s.tensors.dense_out = TensorUse::Optional;
    // The feature keys shape the projections; their n_embd ends must be n_embd,
    // as llama.cpp asserts.
    const int in2 = c.count("dense_2_feat_in", false), out3 = c.count("dense_3_feat_out", false);
    if (in2 != 0 && in2 != s.n_embd)
        throw Error("GGUF metadata '" + c.key("dense_2_feat_in") + "': " + std::to_string(in2) + ", expected the embedding width " +
                    std::to_string(s.n_embd));
    if (out3 != 0 && out3 != s.n_embd)
        throw Error("GGUF metadata '" + c.key("dense_3_feat_out") + "': " + std::to_string(out3) + ", expected the embedding width " +
                    std::to_string(s.n_embd));
    s.dense_2_out = c.count("dense_2_feat_out", false);
    s.dense_3_in = c.count("dense_3_feat_in", false);
}

}  // namespace kiln
