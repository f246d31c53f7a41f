#include "model/nextn.h"

#include "kiln/error.h"
#include "model/forward.h"

namespace kiln {

std::unique_ptr<NextnHead> make_nextn_head(const ModelSpec& trunk, const ModelWeights& w) {
    if (w.nextn.empty() || trunk.nextn_layers.empty()) return nullptr;
    const NextnWeights& nw = w.nextn.front();
    auto head = std::make_unique<NextnHead>();
    ModelSpec& s = head->spec;
    s = trunk;
    s.n_layer = 1;
    s.layers = {trunk.nextn_layers.front()};
    s.n_layer_nextn = 0;
    s.nextn_layers.clear();
    s.memory = MemoryKind::Kv;  // the block is an attention layer (bind_weights checks)
    s.output_head = true;
    s.pooling.reset();
    ModelWeights& hw = head->weights;
    hw.tok_embd = nw.embed_tokens.empty() ? w.tok_embd : nw.embed_tokens;
    hw.output_norm = nw.head_norm ? nw.head_norm : w.output_norm;
    hw.output_norm_b = nw.head_norm ? nullptr : w.output_norm_b;
    hw.output = nw.head.empty() ? w.output : nw.head;
    hw.output_b = nw.head.empty() ? w.output_b : nullptr;
    hw.rope_freqs = w.rope_freqs;
    hw.rope_long = w.rope_long;
    hw.rope_short = w.rope_short;
    hw.layers = {nw.layer};
    hw.nextn_input = &nw;
    return head;
}

// inp_embd of a NextN head: x = eh_proj · [enorm(embedding(token)) | hnorm(state)]
// per row (ggml_concat of e_norm then h_norm, as llama.cpp's graph).
void Forward::nextn_inputs(const BatchRows& b) {
    const NextnWeights& nw = *w_.nextn_input;
    const int n = b.n;
    const int64_t e = spec_.n_embd;
    if (!b.state) throw Error("forward: a multi-token-prediction head's rows need the trunk's hidden states", ErrorKind::Internal);
    for (int r = 0; r < n; ++r) {
        if (b.tokens[r] < 0 || b.tokens[r] >= spec_.n_vocab)
            throw Error("token id " + std::to_string(b.tokens[r]) + " is outside the vocabulary (" + std::to_string(spec_.n_vocab) + ")");
        matrix_row_f32(w_.tok_embd, b.tokens[r], x_.data() + r * e);
    }
    dump("mtp_tok_embd", 0, x_.data(), e, n);
    norm_rows(spec_, x_.data(), nw.enorm, nullptr, h_.data(), n, e, pool_);
    norm_rows(spec_, b.state, nw.hnorm, nullptr, o_.data(), n, e, pool_);
    dump("mtp_enorm", 0, h_.data(), e, n);
    dump("mtp_hnorm", 0, o_.data(), e, n);
    float* cat = nextn_cat_.data();  // f32 [2 n_embd, n]
    for (int r = 0; r < n; ++r) {
        std::copy(h_.data() + r * e, h_.data() + (r + 1) * e, cat + 2 * r * e);
        std::copy(o_.data() + r * e, o_.data() + (r + 1) * e, cat + (2 * r + 1) * e);
    }
    matmul(nw.eh_proj, cat, n, x_.data(), pool_, mm_);
    dump("mtp_eh_proj", 0, x_.data(), e, n);
}

}  // namespace kiln
