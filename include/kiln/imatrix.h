// Importance matrices (imatrix): how strongly each input column of each weight
// matrix is driven, measured over a text. llama.cpp's llama-imatrix writes them
// and llama-quantize weights its quantizers' searches by them; kiln reads and
// writes the same files, so either tool's imatrix works with either quantizer.
//
//   auto model = kiln::Model::load("model-f16.gguf");
//   kiln::Imatrix im = kiln::compute_imatrix(model, tokens, {.n_ctx = 512});
//   im.save("model.imatrix.gguf");
//
// Per weight tensor an entry holds, for each of its matrices (one, or one per
// expert of a 3-D expert tensor), the sum over every evaluated token of the
// squared input of each column (`in_sum2`) and the number of tokens (`counts`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/tokenizer.h"

namespace kiln {

class Model;

struct ImatrixEntry {
    std::vector<float> sums;     // [n_in * n_mat]: matrix m's column j at m * n_in + j
    std::vector<int64_t> counts;  // [n_mat]: tokens seen by each matrix
};

struct Imatrix {
    std::vector<std::string> datasets;  // the texts it was computed on
    uint32_t chunk_count = 0;
    uint32_t chunk_size = 0;
    bool legacy = false;  // read from llama.cpp's older .dat format (sums are already means x calls)
    std::map<std::string, ImatrixEntry> entries;  // by weight tensor name ("blk.0.attn_q.weight")

    // Reads the GGUF format (general.type "imatrix": NAME.in_sum2 and NAME.counts
    // tensors, imatrix.* keys) or the legacy binary format. Throws kiln::Error
    // naming what is wrong.
    static Imatrix load(const std::string& path);
    // Writes the GGUF format, entries in name order (as llama-imatrix does).
    void save(const std::string& path) const;

    // What llama-quantize weights a tensor's rows by: each matrix's sums divided
    // by its count (1 for a matrix no token reached), [n_in * n_mat]. Empty if the
    // tensor has no entry.
    std::vector<float> importance(const std::string& tensor) const;
};

struct ImatrixOptions {
    int n_ctx = 512;              // tokens per chunk, each evaluated from an empty memory
    int n_chunks = -1;            // at most this many chunks (-1: all the text holds)
    int n_threads = 0;            // 0: every thread of the executor
    bool process_output = false;  // also collect output.weight (llama-imatrix --process-output)
    std::string dataset;          // recorded in imatrix.datasets (the text's file name)
};

// Evaluates the tokens chunk by chunk, as llama-imatrix does: n_ctx tokens per
// chunk, the first replaced by BOS where the vocabulary adds one, and sums the
// squared inputs of every product with a blk.* weight (2-D products of fewer than
// 16 rows are skipped, as llama.cpp skips them). Needs at least 2 n_ctx tokens.
// progress(chunk done, chunks) after each chunk.
Imatrix compute_imatrix(std::shared_ptr<const Model> model, std::span<const TokenId> tokens, const ImatrixOptions& options,
                        const std::function<void(int, int)>& progress = {});

}  // namespace kiln
