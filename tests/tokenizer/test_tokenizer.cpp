// Behaviour of the tokenizer beyond the reference comparisons: decode round
// trips, the streaming decoder, linear cost on long inputs, invalid input,
// load errors, special-token priority, thread safety.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace kiln::test {
namespace {

std::vector<std::string> corpus_texts() {
    std::vector<std::string> texts;
    const nlohmann::json corpus = nlohmann::json::parse(read_file(golden_path("tokenizer/corpus.json")));
    for (const auto& e : corpus) texts.push_back(corpus_text(e["id"].get<std::string>()));
    return texts;
}

// Vocabularies of each scheme that are always present (committed or a model).
struct Named {
    std::string name;
    std::string path;
};
std::vector<Named> lossless_vocabs() {
    std::vector<Named> v;
    for (const char* n : {"gpt-2", "starcoder", "deepseek-coder", "llama-spm", "phi-3", "baichuan", "llama-bpe", "qwen2"}) {
        std::string p = vocab_path(n);
        if (!p.empty()) v.push_back({n, p});
    }
    if (missing_reason(smollm2_path()).empty()) v.push_back({"smollm2", smollm2_path()});
    if (missing_reason(gemma3_path()).empty()) v.push_back({"gemma3", gemma3_path()});
    return v;
}

TEST(TokenizerDecode, RoundTripsWhereLossless) {
    const auto texts = corpus_texts();
    for (const Named& nv : lossless_vocabs()) {
        const Tokenizer& tok = cached_tokenizer(nv.path);
        const bool spm = tok.scheme() == TokenizerScheme::SentencePiece;
        size_t checked = 0;
        for (const std::string& t : texts) {
            // Lossy by design: byte-level BPE replaces invalid UTF-8 with U+FFFD;
            // SentencePiece spells spaces as U+2581 (a literal U+2581 comes back as a
            // space) and cuts text by lead bytes (an invalid sequence can swallow the
            // first byte of the next character).
            if (!tok::is_valid_utf8(t)) continue;
            if (spm && t.find("\xE2\x96\x81") != std::string::npos) continue;
            auto ids = tok.encode(t, EncodeOptions{.add_special = false, .parse_special = false});
            std::string back = tok.decode(ids, DecodeOptions{.clean_up_spaces = false});
            EXPECT_EQ(back, t) << nv.name << ": '" << escape_text(t) << "' -> " << format_ids(ids);
            ++checked;
        }
        EXPECT_GT(checked, 90u) << nv.name;
    }
}

TEST(TokenizerDecode, SpecialTokensShownOrHidden) {
    const std::string path = vocab_path("gpt-2");
    const Tokenizer& tok = cached_tokenizer(path);
    auto ids = tok.encode("Hi<|endoftext|>there");
    EXPECT_EQ(tok.decode(ids), "Hithere");
    EXPECT_EQ(tok.decode(ids, DecodeOptions{.show_special = true}), "Hi<|endoftext|>there");
    std::vector<TokenId> bad = {0, static_cast<TokenId>(tok.n_vocab())};
    EXPECT_THROW(tok.decode(bad), Error);
    EXPECT_THROW(tok.decode(std::vector<TokenId>{-1}), Error);
}

TEST(TokenizerStream, NeverEmitsHalfASequence) {
    const auto texts = corpus_texts();
    for (const Named& nv : lossless_vocabs()) {
        const Tokenizer& tok = cached_tokenizer(nv.path);
        for (const std::string& t : texts) {
            auto ids = tok.encode(t);
            StreamDecoder dec(tok);
            std::string streamed;
            for (TokenId id : ids) {
                std::string part = dec.push(id);
                ASSERT_TRUE(tok::is_valid_utf8(part)) << nv.name << ": '" << escape_text(part) << "'";
                streamed += part;
            }
            streamed += dec.flush();
            EXPECT_TRUE(tok::is_valid_utf8(streamed));
            std::string whole = tok.decode(ids, DecodeOptions{.clean_up_spaces = false});
            if (tok::is_valid_utf8(whole)) {
                EXPECT_EQ(streamed, whole) << nv.name << ": '" << escape_text(t) << "'";
            }
        }
    }
}

TEST(TokenizerStream, HoldsBytesUntilComplete) {
    const Tokenizer& tok = cached_tokenizer(vocab_path("llama-spm"));
    // An emoji the vocabulary spells with four byte tokens.
    auto ids = tok.encode("\xF0\x9F\xA6\x99", EncodeOptions{.add_special = false});
    ASSERT_GE(ids.size(), 4u);
    StreamDecoder dec(tok);
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string part = dec.push(ids[i]);
        if (i + 1 < ids.size()) {
            EXPECT_TRUE(part.empty() || tok::is_valid_utf8(part));
        }
        out += part;
    }
    EXPECT_EQ(out + dec.flush(), "\xF0\x9F\xA6\x99");  // the prefix space of the first piece is dropped
    // A truncated sequence at the end becomes U+FFFD, never raw bytes.
    StreamDecoder cut(tok);
    std::string partial;
    for (size_t i = 0; i + 1 < ids.size(); ++i) partial += cut.push(ids[i]);
    partial += cut.flush();
    EXPECT_EQ(partial, "\xEF\xBF\xBD");
}

// Long inputs finish in time linear in their length. The bound is generous (a
// quadratic path would take minutes on these sizes); it is not a benchmark.
TEST(TokenizerCost, LongInputsAreLinear) {
    const size_t mb = 1 << 20;
    std::string mixed;
    while (mixed.size() < mb) mixed += "abc123!?\xC3\xA9\xE4\xB8\xAD-_";  // one line, no spaces
    const std::vector<std::pair<std::string, std::string>> inputs = {
        {"1 MB of 'a'", std::string(mb, 'a')},
        {"1 MB of spaces", std::string(mb, ' ')},
        {"1 MB of newlines", std::string(mb, '\n')},
        {"1 MB of '1'", std::string(mb, '1')},
        {"1 MB line without spaces", mixed},
        {"1 MB of spaces then x", std::string(mb, ' ') + "x"},
    };
    // One vocabulary per scheme and family of splitter, and the two models.
    std::vector<Named> vocabs;
    for (const char* n : {"gpt-2", "llama-spm", "bert-bge", "deepseek-llm", "nomic-bert-moe", "llama-bpe", "gemma-4"}) {
        std::string p = vocab_path(n);
        if (!p.empty()) vocabs.push_back({n, p});
    }
    if (missing_reason(smollm2_path()).empty()) vocabs.push_back({"smollm2", smollm2_path()});
    if (missing_reason(gemma3_path()).empty()) vocabs.push_back({"gemma3", gemma3_path()});
    for (const Named& nv : vocabs) {
        const Tokenizer& tok = cached_tokenizer(nv.path);
        for (const auto& [what, text] : inputs) {
            auto t0 = std::chrono::steady_clock::now();
            auto ids = tok.encode(text);
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            EXPECT_LT(s, 20.0) << nv.name << ": " << what;
            EXPECT_FALSE(ids.empty()) << nv.name << ": " << what;
        }
    }
}

// Every pre-tokenizer row (PCRE2 expressions included) on 256 KB runs.
TEST(TokenizerCost, EveryPreTokenizerIsLinear) {
    const size_t n = 256 << 10;
    std::string digits(n, '7'), spaces_then(n, ' '), letters(n, 'x'), marks;
    spaces_then += "!";
    while (marks.size() < n) marks += "e\xCC\x81\xE0\xA4\x95\xE0\xA5\x8D";  // combining marks, Devanagari virama
    for (const auto& row : tok::pre_tokenizer_table()) {
        tok::PreTokenizer pre(row);
        for (const std::string* text : {&digits, &spaces_then, &letters, &marks}) {
            std::vector<uint32_t> cps, bounds;
            tok::decode_utf8(*text, cps);
            std::vector<uint16_t> flags(cps.size());
            for (size_t i = 0; i < cps.size(); ++i) flags[i] = tok::codepoint_flags(cps[i]);
            auto t0 = std::chrono::steady_clock::now();
            pre.split(cps, flags, bounds);
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            EXPECT_LT(s, 10.0) << row.family;
            ASSERT_FALSE(bounds.empty());
            EXPECT_EQ(bounds.back(), cps.size()) << row.family;
        }
    }
}

TEST(TokenizerInput, InvalidUtf8IsDefined) {
    std::mt19937 rng(1234);
    for (const Named& nv : lossless_vocabs()) {
        const Tokenizer& tok = cached_tokenizer(nv.path);
        for (int k = 0; k < 200; ++k) {
            std::string bytes(static_cast<size_t>(rng() % 64), '\0');
            for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
            auto a = tok.encode(bytes);
            auto b = tok.encode(bytes);
            EXPECT_EQ(a, b);
            for (TokenId id : a) ASSERT_TRUE(id >= 0 && static_cast<size_t>(id) < tok.n_vocab());
            (void)tok.decode(a, DecodeOptions{.show_special = true});
        }
    }
}

// A small byte-level BPE vocabulary written by kiln's own writer.
std::string tiny_bpe(const std::string& name, const std::vector<std::pair<std::string, int32_t>>& extra,
                     const std::string& model = "gpt2", const std::string& pre = "gpt-2", bool with_eos = true) {
    std::vector<gguf::Value> tokens, types;
    for (int b = 0; b < 256; ++b) {
        std::string s;
        tok::append_utf8(s, tok::byte_to_gpt2_codepoint(static_cast<uint8_t>(b)));
        tokens.push_back(gguf::Value::string(s));
        types.push_back(gguf::Value::i32(1));
    }
    for (const auto& [text, type] : extra) {
        tokens.push_back(gguf::Value::string(text));
        types.push_back(gguf::Value::i32(type));
    }
    gguf::Writer w;
    auto& md = w.metadata();
    md.add("general.architecture", gguf::Value::string("llama"));
    md.add("tokenizer.ggml.model", gguf::Value::string(model));
    md.add("tokenizer.ggml.pre", gguf::Value::string(pre));
    md.add("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::String, tokens));
    md.add("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::I32, types));
    md.add("tokenizer.ggml.merges", gguf::Value::array(gguf::ValueType::String, {gguf::Value::string("a b")}));
    if (with_eos) md.add("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(tokens.size() - 1)));
    const std::string path = temp_dir() + "/" + name + ".gguf";
    w.write(path);
    return path;
}

TEST(TokenizerSpecial, LongerTokensWinOverEarlierShorterOnes) {
    // "bcd" is longer, so it is cut out first even though "ab" starts earlier.
    const std::string path = tiny_bpe("priority", {{"ab", 4}, {"bcd", 4}, {"<end>", 3}});
    Tokenizer tok = Tokenizer::load(path);
    const TokenId ab = tok.find_token("ab"), bcd = tok.find_token("bcd");
    auto ids = tok.encode("abcd", EncodeOptions{.add_special = false});
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(ids[0], static_cast<TokenId>('a' - 0));  // 'a' is its own byte token
    EXPECT_EQ(ids[1], bcd);
    EXPECT_EQ(tok.encode("abx", EncodeOptions{.add_special = false}).front(), ab);
    // Control tokens are text when special parsing is off; user-defined ones are not.
    const TokenId end = tok.find_token("<end>");
    EXPECT_EQ(tok.encode("<end>", EncodeOptions{.add_special = false}), std::vector<TokenId>{end});
    EXPECT_NE(tok.encode("<end>", EncodeOptions{.add_special = false, .parse_special = false}),
              std::vector<TokenId>{end});
    EXPECT_EQ(tok.encode("ab", EncodeOptions{.add_special = false, .parse_special = false}),
              std::vector<TokenId>{ab});
}

TEST(TokenizerSpecial, BosAndEosNeverTwice) {
    const Tokenizer& spm = cached_tokenizer(vocab_path("llama-spm"));
    ASSERT_TRUE(spm.add_bos());
    auto ids = spm.encode("<s>Hello");
    ASSERT_GE(ids.size(), 2u);
    EXPECT_EQ(ids[0], spm.special().bos);
    EXPECT_NE(ids[1], spm.special().bos);
    EXPECT_EQ(spm.encode("Hello")[0], spm.special().bos);
    EXPECT_EQ(spm.encode("Hello", EncodeOptions{.add_special = false})[0], spm.find_token("\xE2\x96\x81Hello"));
}

TEST(TokenizerLoad, Errors) {
    auto message = [](const std::string& path, TokenizerLoadOptions o = {}) {
        try {
            Tokenizer::load(path, o);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(message(tiny_bpe("bad-model", {{"<eos>", 3}}, "klingon")).find("unsupported tokenizer model 'klingon'"),
              std::string::npos);
    EXPECT_NE(message(tiny_bpe("bad-pre", {{"<eos>", 3}}, "gpt2", "nope")).find("unsupported pre-tokenizer 'nope'"),
              std::string::npos);
    // No EOS / EOT / EOM and no known terminator: refused for generation, loadable
    // otherwise. (The gpt2 scheme's default EOS is id 11, so the vocabulary is
    // smaller than that.)
    {
        std::vector<gguf::Value> tokens = {gguf::Value::string("a"), gguf::Value::string("b")};
        gguf::Writer w;
        w.metadata().add("tokenizer.ggml.model", gguf::Value::string("gpt2"));
        w.metadata().add("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::String, tokens));
        w.metadata().add("tokenizer.ggml.merges", gguf::Value::array(gguf::ValueType::String, {}));
        const std::string p = temp_dir() + "/tiny-no-eog.gguf";
        w.write(p);
        EXPECT_NE(message(p).find("no end-of-generation token"), std::string::npos) << message(p);
        EXPECT_EQ(message(p, TokenizerLoadOptions{.require_end_of_generation = false}), "");
    }
    // Without eos_token_id the default EOS (11) counts when it is in the vocabulary.
    EXPECT_EQ(message(tiny_bpe("default-eos", {{"<x>", 3}}, "gpt2", "gpt-2", false)), "");
    {
        gguf::Writer w;
        w.metadata().add("tokenizer.ggml.model", gguf::Value::string("llama"));
        const std::string p = temp_dir() + "/no-tokens.gguf";
        w.write(p);
        EXPECT_NE(message(p).find("tokenizer.ggml.tokens"), std::string::npos);
    }
    {
        gguf::Writer w;
        w.metadata().add("tokenizer.ggml.model", gguf::Value::string("llama"));
        w.metadata().add("tokenizer.ggml.tokens",
                         gguf::Value::array(gguf::ValueType::String, {gguf::Value::string("<s>"), gguf::Value::string("</s>")}));
        w.metadata().add("tokenizer.ggml.scores", gguf::Value::array(gguf::ValueType::F32, {gguf::Value::f32(0)}));
        const std::string p = temp_dir() + "/short-scores.gguf";
        w.write(p);
        EXPECT_NE(message(p).find("tokenizer.ggml.scores"), std::string::npos) << message(p);
    }
    {
        gguf::Writer w;
        w.metadata().add("tokenizer.ggml.model", gguf::Value::string("llama"));
        w.metadata().add("tokenizer.ggml.tokens", gguf::Value::string("oops"));
        const std::string p = temp_dir() + "/tokens-not-array.gguf";
        w.write(p);
        EXPECT_NE(message(p).find("tokenizer.ggml.tokens"), std::string::npos) << message(p);
    }
}

TEST(TokenizerApi, EndOfGenerationAndAccessors) {
    KILN_REQUIRE_MODEL(smollm2_path());
    const Tokenizer& tok = cached_tokenizer(smollm2_path());
    EXPECT_EQ(tok.model_name(), "gpt2");
    EXPECT_EQ(tok.pre_name(), "smollm");
    EXPECT_EQ(tok.scheme(), TokenizerScheme::BytePairEncoding);
    const TokenId im_end = tok.find_token("<|im_end|>");
    ASSERT_GE(im_end, 0);
    EXPECT_TRUE(tok.is_end_of_generation(im_end));
    EXPECT_TRUE(tok.is_end_of_generation(tok.special().eos));
    EXPECT_FALSE(tok.is_end_of_generation(tok.find_token("Hello")));
    EXPECT_EQ(tok.token_type(im_end), TokenType::Control);
    EXPECT_EQ(tok.token_text(im_end), "<|im_end|>");
    EXPECT_EQ(tok.token_piece(im_end), "");
    EXPECT_EQ(tok.token_piece(im_end, true), "<|im_end|>");
    EXPECT_THROW(tok.token_text(static_cast<TokenId>(tok.n_vocab())), Error);
}

TEST(TokenizerApi, ConcurrentEncodeIsConsistent) {
    const Tokenizer& tok = cached_tokenizer(vocab_path("gpt-2"));
    const auto texts = corpus_texts();
    std::vector<std::vector<TokenId>> want;
    for (const auto& t : texts) want.push_back(tok.encode(t));
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&] {
            for (int rep = 0; rep < 5; ++rep)
                for (size_t i = 0; i < texts.size(); ++i)
                    if (tok.encode(texts[i]) != want[i]) ++bad;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace kiln::test
