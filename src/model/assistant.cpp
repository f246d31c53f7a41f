// The input step of a Gemma 4 assistant (ModelSpec::n_embd_target; the drafter:
// src/engine/assistant_draft.h): per row, the target's token embedding scaled by
// sqrt(target width), then the row's state (the target's final normed hidden
// state, or the assistant's own projected one when chaining), concatenated as
// llama.cpp's graph (ggml_concat of the embedding then the state) and projected
// by nextn.pre_projection to the assistant's width.
#include <algorithm>

#include "compute/ops.h"
#include "kiln/error.h"
#include "model/forward.h"

namespace kiln {

void Forward::assistant_inputs(const BatchRows& b) {
    const AssistantInput& in = *w_.assistant_input;
    const int n = b.n;
    const int64_t et = spec_.n_embd_target;
    if (!b.state) throw Error("forward: a Gemma 4 assistant's rows need a state of the target's width", ErrorKind::Internal);
    float* cat = nextn_cat_.data();  // f32 [2 n_embd_target, n]
    for (int r = 0; r < n; ++r) {
        if (b.tokens[r] < 0 || b.tokens[r] >= in.target_embd.n_out)
            throw Error("token id " + std::to_string(b.tokens[r]) + " is outside the vocabulary (" +
                        std::to_string(in.target_embd.n_out) + ")");
        float* row = cat + 2 * r * et;
        matrix_row_f32(in.target_embd, b.tokens[r], row);
        ops::scale(row, et, in.scale);
        std::copy(b.state + r * et, b.state + (r + 1) * et, row + et);
    }
    dump("inp_xh", -1, cat, 2 * et, n);
    matmul(in.pre, cat, n, x_.data(), pool_, mm_);
    dump("pre_proj", -1, x_.data(), spec_.n_embd, n);
}

}  // namespace kiln
