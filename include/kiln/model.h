// Loading a model: the file mapped, its tokenizer, its weights bound and
// repacked for the kernels. Evaluating tokens is kiln/context.h.
//
//   auto model = kiln::Model::load("model.gguf");
//
// A Model is immutable and can be shared by several Contexts and threads. All
// failures throw kiln::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/gguf/file.h"
#include "kiln/tokenizer.h"

namespace kiln {

struct ModelInternals;

struct ModelFootprint {
    // Bytes of weights a decode step reads (every matrix once, of an expert
    // layer the router and n_expert_used experts; the embedding lookup reads one
    // row, so it counts only when it is also the output head).
    uint64_t decode_bytes = 0;
    // Weights that take part in a prompt token's matrix products (the layers,
    // a token's selected experts; the output head runs for the last prompt row only).
    uint64_t layer_params = 0;
    // Whether the layers' matrices are float (F32 / F16 / BF16: prefill is bound
    // by f32 multiply-adds) rather than quantized (bound by int8 dot products),
    // and whether they are BF16 (bound by the BF16 dot product where it runs).
    bool float_weights = false;
    bool bf16_weights = false;
    uint64_t repacked_bytes = 0;  // weights repacked at load for the SIMD kernels
    // The weight matrices' bytes in the file and in memory after load (repacked
    // in their own type, used in place, or converted where no kernel takes the
    // type); the load notes break them down by type.
    uint64_t matrix_file_bytes = 0, matrix_resident_bytes = 0;
};

// How an embedding model turns its per-token outputs into one vector per input
// (the values of llama.cpp's `{arch}.pooling_type`): none keeps every token's
// vector; rank runs the classification head on the first token (a reranker's score).
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

struct LoadOptions {
    bool prefault = false;  // touch every weight page at load (flat first-token latency)
    // Bytes of mixture-of-experts expert weights repacked into memory at load.
    // Expert layers past it (in layer order) keep their experts in the file's
    // read-only mapping and are read in place, a selected expert's rows as it runs:
    // a model larger than memory still runs, the page cache holding the experts
    // decode touches. Unset: what the memory available at load leaves after the
    // other weights and a reserve (all of them when the model fits). The load
    // notes say which layers and how many bytes stay in place.
    std::optional<uint64_t> expert_memory_budget;
};

// One architecture kiln knows (its registry), as `kiln archs` lists them.
struct ArchitectureInfo {
    std::string name;                  // canonical GGUF name ("llama")
    std::vector<std::string> aliases;  // other spellings that resolve to it ("mistral", ...)
    bool runnable = false;             // kiln loads and runs it
    std::string mixer;                 // "attention", "recurrent", "attention + recurrent"
    std::string ffn;                   // "gated", "plain", "experts", ...
    std::string memory;                // "kv", "recurrent", "hybrid"
    std::string rope;                  // "norm", "neox", "none"
    // A tiny model of it is compared with an oracle's logits in kiln's tests
    // (derived at build time from the fixtures present, tests/golden/tiny):
    // llama.cpp's, or for an architecture llama.cpp has no graph for (gptj) an
    // independent reference forward's (checked_against says which).
    bool checked = false;
    std::string checked_against;       // "llama.cpp", "reference" or "" (not checked)
};
std::vector<ArchitectureInfo> known_architectures();

class Model {
public:
    static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& options = {});
    ~Model();

    const std::string& path() const;
    const gguf::File& file() const;
    const Tokenizer& tokenizer() const;
    const std::string& architecture() const;
    int n_vocab() const;
    int n_ctx_train() const;
    int n_embd() const;
    int n_layer() const;
    double load_seconds() const;
    // The file's pooling type ({arch}.pooling_type), if it sets one.
    std::optional<Pooling> pooling() const;
    // An embedding model: an encoder (no output head) or a file that sets a
    // pooling type. Such a model is for kiln/embedding.h, not for generation.
    bool is_embedding_model() const;
    bool has_output_head() const;  // false: an encoder; Context::logits is unavailable
    int n_cls_out() const;         // rank pooling: scores per input (0: no classification head)
    // Notes from loading: tensors converted to another type, unused tensors.
    const std::vector<std::string>& load_notes() const;
    // What its products read and compute (kiln bench's bounds).
    ModelFootprint footprint() const;

private:
    friend struct ModelInternals;  // src/model/internals.h: the engine's access to spec and weights
    Model();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
