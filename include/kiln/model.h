// Loading a model and evaluating tokens: the core of kiln's C++ API.
//
//   auto model = kiln::Model::load("model.gguf");
//   kiln::Context ctx(model, {.n_ctx = 4096});
//   ctx.decode(tokens);                 // appends and evaluates
//   auto logits = ctx.last_logits();    // f32 [n_vocab]
//
// A Model is immutable and can be shared by several Contexts (each with its own
// KV cache). All failures throw kiln::Error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/gguf/file.h"
#include "kiln/tokenizer.h"

namespace kiln {

struct ModelSpec;
struct ModelWeights;

struct LoadOptions {
    bool prefault = false;  // touch every weight page at load (flat first-token latency)
};

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
    // Notes from loading: tensors converted to another type, unused tensors.
    const std::vector<std::string>& load_notes() const;

    // Internal access for the engine (src/).
    const ModelSpec& spec() const;
    const ModelWeights& weights() const;

private:
    Model();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct ContextOptions {
    int n_ctx = 0;                // 0: the model's trained context, capped at 4096
    int n_batch = 256;            // prefill chunk size
    std::string kv_type = "f16";  // f16 | f32 | q8_0
    int n_threads = 0;            // 0: physical cores
};

// name, layer (-1 if none), data f32 [n_per_row, n_rows]
using TensorHook = std::function<void(const char* name, int layer, const float* data, int64_t n_per_row, int64_t n_rows)>;

class Context {
public:
    Context(std::shared_ptr<const Model> model, const ContextOptions& options = {});
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const Model& model() const;
    int n_ctx() const;
    int n_batch() const;
    int n_threads() const;
    int64_t n_past() const;                      // positions in the cache
    const std::vector<int32_t>& history() const;  // the tokens at those positions

    // Appends tokens and evaluates them in chunks of n_batch. The last token's
    // logits are kept (last_logits). If all_logits is given, it receives every
    // row's logits, f32 [n_vocab, tokens.size()].
    void decode(std::span<const int32_t> tokens, std::vector<float>* all_logits = nullptr);
    std::span<const float> last_logits() const;

    // Keeps positions [0, n_keep). Returns false (and clears everything) when a
    // sliding-window layer no longer holds what the kept prefix needs.
    bool keep_prefix(int64_t n_keep);
    void clear();

    uint64_t kv_bytes_per_position() const;
    uint64_t kv_bytes() const;

    void set_tensor_hook(TensorHook hook);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
