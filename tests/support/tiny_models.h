// Tiny random models of every runnable family, written by kiln's GGUF writer
// with a fixed seed and SmolLM2's tokenizer copied in. The same bytes come out on
// every machine (kiln's own RNG and quantizers), so llama.cpp's logits for them
// can be committed (tools/tiny_model_fixtures.py) and compared in tests/model.
#pragma once

#include <string>
#include <vector>

namespace kiln::test {

struct TinyModelInfo {
    std::string family;       // "llama", "qwen2", ... or a variant of one: "llama@fused", "qwen2@q4_k"
    std::string arch;         // the GGUF architecture it is written as ("llama")
    std::string description;  // what it exercises
    std::string kv_type = "f16";  // the KV cache type its fixture was made with (llama.cpp's and kiln's)
};

std::vector<TinyModelInfo> tiny_model_families();

// Writes the tiny model of `family` to `path`, taking the tokenizer metadata from
// the GGUF at `tokenizer_source`.
void write_tiny_model(const std::string& family, const std::string& tokenizer_source, const std::string& path);

// A tiny gemma4-assistant drafting for the tiny gemma4 target `target_family`
// ("gemma4", "gemma4@e2b", ...: its widths, head sizes and window). Not a family
// of its own (it runs only beside its target); make_tiny_model writes it as
// "assistant:TARGET".
void write_tiny_gemma4_assistant(const std::string& target_family, const std::string& tokenizer_source, const std::string& path);

// The prompt every tiny model is evaluated on (token ids valid in SmolLM2's vocabulary).
std::vector<int32_t> tiny_model_prompt();

}  // namespace kiln::test
