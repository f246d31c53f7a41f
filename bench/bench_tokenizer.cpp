// Tokenizer microbenchmarks (Google Benchmark): encode throughput on a multi-MB
// mixed text, a short chat prompt, decoding, loading, and the pre-tokenizer's
// hand-written splitters against PCRE2 on the same expressions.
//
//   bench_tokenizer [--benchmark_filter=...]
//   KILN_BENCH_VOCAB=FILE.gguf   vocabulary (default: the SmolLM2 model, else the GPT-2 vocab)
//   KILN_BENCH_TEXT=FILE         text to encode (default: the corpus built as below)
//
// The default text is tests/golden/tokenizer/corpus.json's valid UTF-8 entries
// joined by "\n", repeated until it reaches 4 MiB; bench/tokenizer_vs_llamacpp.py
// builds the same text for llama.cpp.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/gguf/file.h"
#include "kiln/tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string source_dir() { return KILN_SOURCE_DIR; }

std::string vocab_path() {
    if (const char* v = std::getenv("KILN_BENCH_VOCAB"); v && *v) return v;
    const char* home = std::getenv("HOME");
    std::string models = std::getenv("KILN_MODELS") ? std::getenv("KILN_MODELS")
                                                    : std::string(home ? home : ".") + "/.cache/kiln/models";
    std::string smollm = models + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (std::filesystem::exists(smollm)) return smollm;
    return source_dir() + "/tests/data/shared/tokenizer/ggml-vocab-gpt-2.gguf";
}

const std::string& bench_text() {
    static const std::string text = [] {
        if (const char* t = std::getenv("KILN_BENCH_TEXT"); t && *t) return read_all(t);
        nlohmann::json corpus = nlohmann::json::parse(read_all(source_dir() + "/tests/golden/tokenizer/corpus.json"));
        std::string one;
        for (const auto& e : corpus)
            if (e.contains("text")) one += e["text"].get<std::string>() + "\n";
        std::string all;
        while (all.size() < (4u << 20)) all += one;
        return all;
    }();
    return text;
}

const kiln::Tokenizer& tokenizer() {
    static const kiln::Tokenizer tok =
        kiln::Tokenizer::load(vocab_path(), kiln::TokenizerLoadOptions{.require_end_of_generation = false});
    return tok;
}

// A 48-bit digest of the ids (exact in a double counter), for comparing with llama.cpp.
double ids_digest(const std::vector<kiln::TokenId>& ids) {
    uint64_t h = 0;
    for (kiln::TokenId id : ids) h = (h * 1000003u + static_cast<uint32_t>(id)) & ((1ull << 48) - 1);
    return static_cast<double>(h);
}

// special: add_special and parse_special on (as a prompt is encoded); plain: both off.
void BM_EncodeText(benchmark::State& state, bool special) {
    const auto& tok = tokenizer();
    const std::string& text = bench_text();
    const kiln::EncodeOptions opt{.add_special = special, .parse_special = special};
    std::vector<kiln::TokenId> ids;
    for (auto _ : state) {
        ids.clear();
        tok.encode(text, ids, opt);
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
    state.counters["tokens"] = static_cast<double>(ids.size());
    state.counters["digest"] = ids_digest(ids);
    state.SetLabel(std::filesystem::path(vocab_path()).filename().string());
}
BENCHMARK_CAPTURE(BM_EncodeText, special, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodeText, plain, false)->Unit(benchmark::kMillisecond);

void BM_EncodeChatPrompt(benchmark::State& state) {
    const auto& tok = tokenizer();
    const std::string prompt =
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of "
        "France, and why is it famous? Answer in two sentences.<|im_end|>\n<|im_start|>assistant\n";
    std::vector<kiln::TokenId> ids;
    for (auto _ : state) {
        ids.clear();
        tok.encode(prompt, ids);
        benchmark::DoNotOptimize(ids.data());
    }
    state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_EncodeChatPrompt)->Unit(benchmark::kMicrosecond);

void BM_Decode(benchmark::State& state) {
    const auto& tok = tokenizer();
    const auto ids = tok.encode(bench_text());
    for (auto _ : state) benchmark::DoNotOptimize(tok.decode(ids));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bench_text().size()));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

void BM_Load(benchmark::State& state) {
    for (auto _ : state) {
        auto tok = kiln::Tokenizer::load(vocab_path(), kiln::TokenizerLoadOptions{.require_end_of_generation = false});
        benchmark::DoNotOptimize(tok.n_vocab());
    }
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond);

// Pre-tokenizer alone: hand-written splitter vs the same expression through
// PCRE2 (JIT, on the collapsed text as llama.cpp runs its regex fallback).
void BM_PreTokenize(benchmark::State& state, const char* pre, bool regex) {
    const kiln::tok::PreTokenizerSpec* spec = kiln::tok::find_pre_tokenizer(pre);
    kiln::tok::PreTokenizer p(*spec, regex);
    std::vector<uint32_t> cps, bounds;
    kiln::tok::decode_utf8(bench_text(), cps);
    std::vector<uint16_t> flags(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) flags[i] = kiln::tok::codepoint_flags(cps[i]);
    for (auto _ : state) {
        p.split(cps, flags, bounds);
        benchmark::DoNotOptimize(bounds.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bench_text().size()));
    state.counters["pieces"] = static_cast<double>(bounds.size());
}
BENCHMARK_CAPTURE(BM_PreTokenize, gpt2_hand, "gpt-2", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, gpt2_pcre2, "gpt-2", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, llama3_hand, "llama3", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, llama3_pcre2, "llama3", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, qwen2_hand, "qwen2", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, qwen2_pcre2, "qwen2", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, starcoder_hand, "starcoder", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, starcoder_pcre2, "starcoder", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, default_hand, "default", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, default_pcre2, "default", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenize, gpt4o_pcre2, "gpt-4o", false)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
