// libFuzzer target for the tokenizer: tokenize and detokenize arbitrary bytes
// with real vocabularies of every scheme, and load (then use) vocabularies built
// from the input itself. Nothing may crash, hang or read out of bounds; the only
// allowed failure is kiln::Error.
//
// Input layout: byte 0 picks the mode and options, the rest is the payload.
//   mode 0-3  encode the payload with vocabulary N, decode the ids, stream them
//   mode 4    decode the payload read as 16-bit token ids (some out of range)
//   mode 5    a vocabulary from the payload (tokens / merges separated by \n),
//             then encode and decode its own lines
//
// Vocabularies: tests/data/shared/tokenizer (gpt-2, llama-spm, bert-bge) and,
// when present, nomic-bert-moe (Unigram) from $KILN_VOCABS or ~/.cache/kiln/vocabs.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/gguf/writer.h"
#include "kiln/tokenizer.h"

namespace {

using kiln::Tokenizer;
using kiln::TokenId;

std::vector<std::unique_ptr<Tokenizer>> load_vocabs() {
    std::vector<std::unique_ptr<Tokenizer>> v;
    const std::string shared = std::string(KILN_SOURCE_DIR) + "/tests/data/shared/tokenizer/ggml-vocab-";
    const char* env = std::getenv("KILN_VOCABS");
    const char* home = std::getenv("HOME");
    const std::string cached = env && *env ? env : std::string(home ? home : ".") + "/.cache/kiln/vocabs";
    const std::string paths[] = {shared + "gpt-2.gguf", shared + "llama-spm.gguf", shared + "bert-bge.gguf",
                                 cached + "/ggml-vocab-nomic-bert-moe.gguf"};
    for (const std::string& p : paths) {
        if (!std::filesystem::exists(p)) continue;
        v.push_back(std::make_unique<Tokenizer>(
            Tokenizer::load(p, kiln::TokenizerLoadOptions{.require_end_of_generation = false})));
    }
    if (v.empty()) {
        std::fprintf(stderr, "fuzz_tokenizer: no vocabularies found under %s\n", shared.c_str());
        std::abort();
    }
    return v;
}

void exercise(const Tokenizer& tok, std::string_view text, uint8_t flags) {
    kiln::EncodeOptions eo{.add_special = (flags & 0x10) != 0, .parse_special = (flags & 0x20) != 0};
    std::vector<TokenId> ids = tok.encode(text, eo);
    for (TokenId id : ids)
        if (id < 0 || static_cast<size_t>(id) >= tok.n_vocab()) std::abort();  // encode must give valid ids
    kiln::DecodeOptions dopt{.show_special = (flags & 0x40) != 0, .remove_special = (flags & 0x80) != 0};
    (void)tok.decode(ids, dopt);
    kiln::StreamDecoder stream(tok, dopt);
    for (TokenId id : ids) (void)stream.push(id);
    (void)stream.flush();
}

// A GGUF vocabulary from the payload: lines before the first empty line are
// tokens, the rest merges; the first payload byte picks model, pre-tokenizer and
// how token types are assigned.
void synthetic_vocab(const uint8_t* data, size_t size) {
    if (size < 2) return;
    static const char* models[] = {"llama", "gpt2", "bert", "t5", "gemma4"};
    static const char* pres[] = {"default", "llama3", "qwen2", "gpt-4o", "deepseek-llm", "tekken", "bloom", "kimi-k2"};
    const uint8_t sel = data[0];
    std::string payload(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<kiln::gguf::Value> tokens, merges, types, scores;
    size_t pos = 0;
    bool in_merges = false;
    uint32_t k = 0;
    while (pos <= payload.size()) {
        size_t nl = payload.find('\n', pos);
        if (nl == std::string::npos) nl = payload.size();
        std::string line = payload.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.empty() && !in_merges) {
            in_merges = true;
            continue;
        }
        if (in_merges) {
            merges.push_back(kiln::gguf::Value::string(line));
        } else {
            tokens.push_back(kiln::gguf::Value::string(line));
            types.push_back(kiln::gguf::Value::i32(static_cast<int32_t>((line.size() + k) % 7)));
            scores.push_back(kiln::gguf::Value::f32(-static_cast<float>(k)));
            ++k;
        }
    }
    if (tokens.empty()) return;
    kiln::gguf::Writer w;
    auto& md = w.metadata();
    md.add("tokenizer.ggml.model", kiln::gguf::Value::string(models[sel % 5]));
    md.add("tokenizer.ggml.pre", kiln::gguf::Value::string(pres[(sel >> 3) % 8]));
    md.add("tokenizer.ggml.tokens", kiln::gguf::Value::array(kiln::gguf::ValueType::String, tokens));
    md.add("tokenizer.ggml.token_type", kiln::gguf::Value::array(kiln::gguf::ValueType::I32, types));
    md.add("tokenizer.ggml.scores", kiln::gguf::Value::array(kiln::gguf::ValueType::F32, scores));
    md.add("tokenizer.ggml.merges", kiln::gguf::Value::array(kiln::gguf::ValueType::String, merges));
    md.add("tokenizer.ggml.bos_token_id", kiln::gguf::Value::u32(sel % 3));
    md.add("tokenizer.ggml.eos_token_id", kiln::gguf::Value::u32(sel % 5));
    if (sel & 0x40) {
        std::vector<kiln::gguf::Value> charsmap;
        for (char c : payload.substr(0, 64)) charsmap.push_back(kiln::gguf::Value::u8(static_cast<uint8_t>(c)));
        md.add("tokenizer.ggml.precompiled_charsmap", kiln::gguf::Value::array(kiln::gguf::ValueType::U8, charsmap));
    }
    static const std::string path = "/tmp/kiln-fuzz-tokenizer-" + std::to_string(::getpid()) + ".gguf";
    w.write(path);
    Tokenizer tok = Tokenizer::load(path, kiln::TokenizerLoadOptions{.require_end_of_generation = false});
    exercise(tok, payload, sel);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<std::unique_ptr<Tokenizer>> vocabs = load_vocabs();
    if (size == 0) return 0;
    const uint8_t head = data[0];
    const uint8_t mode = head % 6;
    std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        if (mode < 4) {
            exercise(*vocabs[mode % vocabs.size()], payload, head);
        } else if (mode == 4) {
            const Tokenizer& tok = *vocabs[(head >> 3) % vocabs.size()];
            std::vector<TokenId> ids;
            for (size_t i = 0; i + 1 < payload.size(); i += 2)
                ids.push_back(static_cast<TokenId>(static_cast<uint8_t>(payload[i]) |
                                                   (static_cast<uint8_t>(payload[i + 1]) << 8)) %
                              static_cast<TokenId>(tok.n_vocab() + 16));
            try {
                (void)tok.decode(ids, kiln::DecodeOptions{.show_special = (head & 0x40) != 0});
            } catch (const kiln::Error&) {
                // ids past the vocabulary are refused
            }
            kiln::StreamDecoder stream(tok);
            for (TokenId id : ids)
                if (static_cast<size_t>(id) < tok.n_vocab()) (void)stream.push(id);
            (void)stream.flush();
        } else {
            synthetic_vocab(data + 1, size - 1);
        }
    } catch (const kiln::Error&) {
    }
    return 0;
}
