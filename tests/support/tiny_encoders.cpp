#include "support/tiny_encoders.h"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/quant.h"
#include "support/tiny_models.h"

namespace kiln::test {

namespace {

using gguf::Value;

// Values from mt19937_64's raw output (fixed by the standard, unlike its
// distributions), in exactly representable steps so every platform agrees.
class Values {
public:
    explicit Values(uint64_t seed) : gen_(seed) {}
    float uniform() { return static_cast<float>(static_cast<int64_t>(gen_() >> 40) - (1ll << 23)) / static_cast<float>(1 << 23); }

private:
    std::mt19937_64 gen_;
};

class EncoderWriter {
public:
    EncoderWriter(uint64_t seed) : v_(seed) {}
    gguf::Writer& writer() { return w_; }

    // [n_in, n_out] uniform values times gain / sqrt(n_in), stored as type (F16 or F32).
    void matrix(const std::string& name, int64_t n_in, int64_t n_out, GgmlType type, float gain = 1.0f) {
        std::vector<float> x(static_cast<size_t>(n_in * n_out));
        const float s = gain / std::sqrt(static_cast<float>(n_in));
        for (float& f : x) f = v_.uniform() * s;
        add(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, x, type);
    }
    // n_expert matrices [n_in, n_out] in one tensor [n_in, n_out, n_expert].
    void experts(const std::string& name, int64_t n_in, int64_t n_out, int64_t n_expert, GgmlType type, float gain = 1.0f) {
        std::vector<float> x(static_cast<size_t>(n_in * n_out * n_expert));
        const float s = gain / std::sqrt(static_cast<float>(n_in));
        for (float& f : x) f = v_.uniform() * s;
        add(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out), static_cast<uint64_t>(n_expert)}, x, type);
    }
    // A norm weight around 1 or a bias around 0, f32.
    void vector(const std::string& name, int64_t n, float center, float spread) {
        std::vector<float> x(static_cast<size_t>(n));
        for (float& f : x) f = center + spread * v_.uniform();
        add(name, {static_cast<uint64_t>(n)}, x, GgmlType::F32);
    }

private:
    void add(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& x, GgmlType type) {
        std::vector<uint8_t> bytes;
        if (type == GgmlType::F32) {
            bytes.resize(x.size() * 4);
            std::memcpy(bytes.data(), x.data(), bytes.size());
        } else if (type == GgmlType::F16) {
            bytes.resize(x.size() * 2);
            for (size_t i = 0; i < x.size(); ++i) {
                const uint16_t h = quant::fp32_to_fp16(x[i]);
                std::memcpy(bytes.data() + 2 * i, &h, 2);
            }
        } else {
            const uint64_t row = shape[0], rb = ggml_row_bytes(type, row);
            const uint64_t rows = x.size() / row;
            bytes.resize(static_cast<size_t>(rb * rows));
            for (uint64_t r = 0; r < rows; ++r)
                quant::quantize_row(type, x.data() + r * row, bytes.data() + r * rb, static_cast<int64_t>(row));
        }
        w_.add_tensor(name, type, std::move(shape), std::move(bytes));
    }

    Values v_;
    gguf::Writer w_;
};

// What a tiny encoder's layers hold, as each family's converter writes them.
enum class Positions { Learned, Rope, Alibi };
// modern-bert is a pre-norm encoder with its own layout (write_modern_bert).
enum class Ffn {
    PlainBiased,   // bert: up (+ bias) -> GELU -> down (+ bias)
    SwiGlu,        // nomic-bert: gate, up, down, no biases
    GeGluFused,    // jina-bert-v2 (base-en): ffn_up [n_embd, 2 n_ff] gate then up, no bias; down + bias
    GeluGatedSep,  // jina-bert-v2 as llama.cpp also reads it: ffn_gate, ffn_up + bias; down + bias
};

struct EncoderRecipe {
    std::string name, description;
    GgmlType matrix_type = GgmlType::F16;
    bool rank = false;  // a classification head and rank pooling
    std::string arch = "bert";
    Positions positions = Positions::Learned;
    bool fused_qkv = false;  // one attn_qkv without biases (else Q, K, V with biases)
    Ffn ffn = Ffn::PlainBiased;
    bool qk_norm = false;     // attn_q_norm / attn_k_norm LayerNorms with biases
    bool attn_norm_2 = false; // a second attention LayerNorm
    int n_embd = 64, n_head = 4;
    int n_types = 0;  // token types (0: the vocabulary file's count)
    std::string vocab = "bert-bge";
    int n_layer = 2, n_ff = 128;
    int n_expert = 0, n_expert_used = 0, moe_every = 0;  // nomic-bert-moe: experts on layers il % moe_every == 1
};

const std::vector<EncoderRecipe>& recipes() {
    static const std::vector<EncoderRecipe> r = {
        {"bert", "BERT encoder: learned positions, 2 token types, post-LayerNorm blocks with biases, GELU FFN, mean pooling; F16", GgmlType::F16, false},
        {"bert_q8_0", "the same shapes with Q8_0 matrices", GgmlType::Q8_0, false},
        {"bert_rank", "BERT cross-encoder: cls + cls.output classification head (1 label), rank pooling; F16", GgmlType::F16, true},
        {"bert_rank1", "the cross-encoder with one token type (as bge-reranker's type_vocab_size 1: a pair is all type 0)",
         GgmlType::F16, true, "bert", Positions::Learned, false, Ffn::PlainBiased, false, false, 64, 4, 1},
        {"bert_xlmr_rank", "an XLM-RoBERTa cross-encoder (bge-reranker-v2-m3's shape): bert with the XLM-R Unigram vocabulary "
         "(tokenizer.ggml.model t5, 250k tokens), one token type, cls + cls.output head, rank pooling; F16",
         GgmlType::F16, true, "bert", Positions::Learned, false, Ffn::PlainBiased, false, false, 64, 4, 0, "nomic-bert-moe"},
        {"nomic-bert", "nomic-embed-text: RoPE (NeoX, base 1000), fused attn_qkv without biases, SwiGLU FFN without biases, mean pooling; F16",
         GgmlType::F16, false, "nomic-bert", Positions::Rope, true, Ffn::SwiGlu},
        {"nomic-bert_q8_0", "the same shapes with Q8_0 matrices", GgmlType::Q8_0, false, "nomic-bert", Positions::Rope, true, Ffn::SwiGlu},
        {"jina-bert-v2", "jina-embeddings-v2: ALiBi (4 heads), Q/K/V and output with biases, GEGLU FFN in one ffn_up [64, 256], mean pooling; F16",
         GgmlType::F16, false, "jina-bert-v2", Positions::Alibi, false, Ffn::GeGluFused},
        {"jina-bert-v2_code", "jina-bert-v2 with 6 heads (both ALiBi slope series), Q/K LayerNorms, attn_norm_2, separate ffn_gate; Q8_0",
         GgmlType::Q8_0, false, "jina-bert-v2", Positions::Alibi, false, Ffn::GeluGatedSep, true, true, 96, 6},
        // Speed-table shapes (bench/embed_vs_llamacpp.py), not tests: bert-base
        // (bge-base, all-mpnet) and nomic-embed-text v1.5, F16 as they ship.
        {"bench_bert_base", "bert-base shape: 12 layers, width 768, 12 heads, FFN 3072; F16", GgmlType::F16, false, "bert",
         Positions::Learned, false, Ffn::PlainBiased, false, false, 768, 12, 0, "bert-bge", 12, 3072},
        {"bench_nomic_embed", "nomic-embed-text v1.5 shape: 12 layers, width 768, 12 heads, SwiGLU FFN 3072; F16", GgmlType::F16,
         false, "nomic-bert", Positions::Rope, true, Ffn::SwiGlu, false, false, 768, 12, 0, "bert-bge", 12, 3072},
        {"modern-bert", "ModernBERT: pre-LayerNorm without biases, 3 layers (global, then 2 sliding with a symmetric window of 8), "
         "RoPE bases 160000 / 10000, GeGLU in one ffn_up, final norm, mean pooling; F16", GgmlType::F16, false, "modern-bert", Positions::Rope, true},
        {"modern-bert_rank", "a ModernBERT cross-encoder (gte-reranker-modernbert's head): cls [64, 64], GELU, cls.norm, "
         "cls.output + bias, over the tokens' mean (the classifier pooling llama.cpp defaults to); F16",
         GgmlType::F16, true, "modern-bert", Positions::Rope, true},
        {"jina-bert-v2_rank", "jina-reranker-v1: the jina-bert-v2 encoder with a cls [64, 1] + bias head through tanh (no cls.output), "
         "rank pooling; F16", GgmlType::F16, true, "jina-bert-v2", Positions::Alibi, false, Ffn::GeGluFused},
        {"neo-bert", "NeoBERT: pre-RMS-norm, fused attn_qkv, RoPE (normal layout, base 10000), SwiGLU in one ffn_up [64, 256], "
         "enc.output_norm, 3 layers, CLS pooling; F16", GgmlType::F16, false, "neo-bert", Positions::Rope, true, Ffn::SwiGlu, false,
         false, 64, 4, 0, "bert-bge", 3, 128},
        {"neo-bert_rank", "a NeoBERT cross-encoder: cls [64, 64] + bias through tanh, cls.output + bias, rank pooling on the first "
         "token; F16", GgmlType::F16, true, "neo-bert", Positions::Rope, true, Ffn::SwiGlu, false, false, 64, 4, 0, "bert-bge", 3, 128},
        {"eurobert", "EuroBERT: pre-RMS-norm, separate Q / K / V with 2 KV heads of 4, RoPE (NeoX, base 250000), SwiGLU with "
         "ffn_gate, output_norm, the Llama 3 vocabulary (no BOS), 3 layers, mean pooling; F16", GgmlType::F16, false, "eurobert",
         Positions::Rope, false, Ffn::SwiGlu, false, false, 64, 4, 0, "llama-bpe", 3, 128},
        {"nomic-bert-moe", "nomic-embed-text v2 MoE: RoPE (NeoX, base 1000), fused attn_qkv, 4 layers, layers 1 and 3 "
         "(moe_every_n_layers 2) 8 ungated GELU experts top-2 (softmax, not renormalized), layers 0 and 2 bert's plain FFN "
         "with biases, mean pooling; F16", GgmlType::F16, false, "nomic-bert-moe", Positions::Rope, true, Ffn::PlainBiased,
         false, false, 64, 4, 0, "bert-bge", 4, 128, 8, 2, 2},
        {"nomic-bert-moe_q8_0", "the same shapes with Q8_0 matrices (the experts too)", GgmlType::Q8_0, false, "nomic-bert-moe",
         Positions::Rope, true, Ffn::PlainBiased, false, false, 64, 4, 0, "bert-bge", 4, 128, 8, 2, 2},
    };
    return r;
}

// Decoder-based embedders and rerankers: a tiny decoder of tests/support/
// tiny_models.cpp (its tensors byte for byte, with a real vocabulary) written
// again under the embedding file's architecture and keys, as the converters
// write Qwen3-Embedding, llama-embed-nemotron and Qwen3-Reranker files.
struct DecoderRecipe {
    std::string name, description;
    std::string family;  // the tiny decoder it starts from
    std::string arch;    // the architecture it is written as
    std::string vocab;   // a llama.cpp vocab-only file in $KILN_VOCABS
    uint32_t pooling = 1;
    bool causal = true;
    bool add_bos = false, add_eos = false;
    bool drop_output = false;  // no output.weight (llama-embed has no lm_head)
    int n_cls_out = 0;         // cls.output.weight rows (a Qwen3 reranker's yes / no)
    int n_dense = 0;           // dense_2 [n_embd, n_dense] and dense_3 [n_dense, n_embd] after pooling (EmbeddingGemma)
};

const std::vector<DecoderRecipe>& decoder_recipes() {
    static const std::vector<DecoderRecipe> r = {
        {"qwen3_embed", "Qwen3-Embedding: the tiny qwen3 (QK-norm, Q5_0 / Q8_0) with the Qwen2 vocabulary, causal, last-token "
                        "pooling, EOS (<|endoftext|>) appended (tokenizer.ggml.add_eos_token)",
         "qwen3", "qwen3", "qwen2", 3, true, false, true},
        {"llama-embed", "llama-embed (llama-embed-nemotron): the tiny llama's layers without lm_head, the Llama 3 vocabulary "
                        "(BOS added), non-causal attention, mean pooling",
         "llama", "llama-embed", "llama-bpe", 1, false, true, false, true},
        {"qwen3_rerank", "Qwen3-Reranker: the tiny qwen3 with cls.output [64, 2] (the yes / no rows), rank pooling: the last "
                         "token's two logits softmaxed",
         "qwen3", "qwen3", "qwen2", 4, true, false, false, false, 2},
        {"gemma-embedding", "EmbeddingGemma: the tiny gemma3's six layers (5 sliding, window 8, now symmetric: 4 each side; QK-norm, "
                            "post-norms, GELU; Q8_0) not causal, with its output.weight (loaded, unread), the SentencePiece "
                            "llama-spm vocabulary (BOS and EOS added), mean pooling, then dense_2 [256, 512] and dense_3 [512, 256] (F16)",
         "gemma3@q8_0", "gemma-embedding", "llama-spm", 1, false, true, true, false, 0, 512},
    };
    return r;
}

const DecoderRecipe* decoder_recipe(const std::string& name) {
    for (const auto& r : decoder_recipes())
        if (r.name == name) return &r;
    return nullptr;
}

std::string vocab_file(const std::string& vocab) {
    if (vocab == "bert-bge") return std::string(KILN_SOURCE_DIR) + "/../shared/testdata/tokenizer/ggml-vocab-bert-bge.gguf";
    const char* env = std::getenv("KILN_VOCABS");
    const char* home = std::getenv("HOME");
    const std::string dir = env && *env ? env : std::string(home && *home ? home : ".") + "/.cache/kiln/vocabs";
    return dir + "/ggml-vocab-" + vocab + ".gguf";
}

void write_decoder_embedder(const DecoderRecipe& r, const std::string& vocab_source, const std::string& path) {
    const std::string base_path = path + ".decoder";
    write_tiny_model(r.family, vocab_source, base_path);
    {
        gguf::File base = gguf::File::open(base_path);
        uint64_t seed = 27;
        for (char c : r.name) seed = seed * 131 + static_cast<unsigned char>(c);
        EncoderWriter t(seed);  // the head's random rows; the decoder's tensors as they are
        gguf::Writer& w = t.writer();
        gguf::Metadata& md = w.metadata();
        const std::string from = r.family.substr(0, r.family.find('@')) + ".", to = r.arch + ".";  // "gemma3@q8_0": gemma3.
        const gguf::Metadata from_md = gguf::materialize_metadata(base);
        for (const auto& [k, v] : from_md.entries()) {
            if (k == "general.architecture") md.add(k, Value::string(r.arch));
            else if (k == "general.name") md.add(k, Value::string("kiln tiny " + r.name));
            else if (k.rfind(from, 0) == 0) md.add(to + k.substr(from.size()), v);
            else md.add(k, v);
        }
        md.add(to + "pooling_type", Value::u32(r.pooling));
        md.add(to + "attention.causal", Value::boolean(r.causal));
        md.add("tokenizer.ggml.add_bos_token", Value::boolean(r.add_bos));
        md.add("tokenizer.ggml.add_eos_token", Value::boolean(r.add_eos));
        for (const gguf::TensorInfo& ti : base.tensors()) {
            if (r.drop_output && ti.name == "output.weight") continue;
            w.add_tensor_view(ti.name, ti.type, ti.shape, base.tensor_data(ti), ti.bytes);
        }
        if (r.n_cls_out > 0)  // the labels, as the Qwen3 converter writes them (llama.cpp sizes the head by them)
            md.add(to + "classifier.output_labels", Value::array(gguf::ValueType::String, {Value::string("yes"), Value::string("no")}));
        if (r.n_cls_out > 0)  // a rerank prompt of the Qwen3-Reranker shape (its instruction shortened)
            md.add("tokenizer.chat_template.rerank",
                   Value::string("<|im_start|>system\nJudge whether the Document meets the requirements of the Query. Answer only "
                                 "\"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Query>: {query}\n<Document>: {document}"
                                 "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        if (r.n_dense > 0) {  // as the converter writes sentence-transformers' Dense modules
            const int64_t e = static_cast<int64_t>(md.get_uint(to + "embedding_length"));
            md.add(to + "dense_2_feat_in", Value::u32(static_cast<uint32_t>(e)));
            md.add(to + "dense_2_feat_out", Value::u32(static_cast<uint32_t>(r.n_dense)));
            md.add(to + "dense_3_feat_in", Value::u32(static_cast<uint32_t>(r.n_dense)));
            md.add(to + "dense_3_feat_out", Value::u32(static_cast<uint32_t>(e)));
            t.matrix("dense_2.weight", e, r.n_dense, GgmlType::F16, 2.0f);
            t.matrix("dense_3.weight", r.n_dense, e, GgmlType::F16, 2.0f);
        }
        if (r.n_cls_out > 0)
            t.matrix("cls.output.weight", static_cast<int64_t>(md.get_uint(to + "embedding_length")), r.n_cls_out, GgmlType::F32, 4.0f);
        w.write(path);
    }
    std::remove(base_path.c_str());
}

}  // namespace

std::vector<TinyEncoderInfo> tiny_encoders() {
    std::vector<TinyEncoderInfo> out;
    for (const auto& r : recipes())
        if (r.name.rfind("bench_", 0) != 0) out.push_back({r.name, r.description, r.vocab});
    for (const auto& r : decoder_recipes()) out.push_back({r.name, r.description, r.vocab});
    return out;
}

std::string tiny_encoder_vocab(const std::string& name) {
    for (const auto& r : recipes())
        if (r.name == name) return vocab_file(r.vocab);
    if (const DecoderRecipe* d = decoder_recipe(name)) return vocab_file(d->vocab);
    throw std::runtime_error("no tiny encoder '" + name + "'");
}

std::vector<std::string> tiny_encoder_texts() {
    return {
        "Hello world",
        "The quick brown fox jumps over the lazy dog.",
        "Embeddings turn text into vectors; similar meanings land close together, so retrieval can rank documents by cosine.",
        "a",
        "Ünïcödé, numbers 12345 and punctuation!? all-in-one: tokenization edge cases (WordPiece ##subwords).",
    };
}

namespace {

// The tokenizer keys of a bert vocab-only file, copied into md; n_vocab and the
// token type count from them.
void copy_vocab(const std::string& vocab_source, gguf::Metadata& md, int64_t& n_vocab, uint64_t& n_types, int types_override = 0) {
    gguf::File src = gguf::File::open(vocab_source);
    gguf::Metadata tok = gguf::materialize_metadata(src);
    n_vocab = 0;
    n_types = 0;
    for (const auto& [k, v] : tok.entries()) {
        if (k.rfind("tokenizer.", 0) != 0) continue;
        if (k == "tokenizer.ggml.token_type_count" && types_override > 0) {
            md.add(k, Value::u32(static_cast<uint32_t>(types_override)));
            n_types = static_cast<uint64_t>(types_override);
            continue;
        }
        md.add(k, v);
        if (k == "tokenizer.ggml.tokens") n_vocab = static_cast<int64_t>(v.count());
        if (k == "tokenizer.ggml.token_type_count") n_types = v.raw_u64();
    }
    if (n_vocab == 0 || n_types == 0) throw Error(vocab_source + ": not an encoder's vocabulary (tokens, token_type_count)");
}

// neo-bert / eurobert: pre-RMS-norm encoders without biases (as llama.cpp's
// converters write NeoBERT and EuroBERT).
void write_prenorm_encoder(const EncoderRecipe& r, EncoderWriter& t, const std::string& vocab_source) {
    gguf::Metadata& md = t.writer().metadata();
    const bool neo = r.arch == "neo-bert";
    const int n_layer = r.n_layer, n_embd = r.n_embd, n_head = r.n_head, n_head_kv = neo ? n_head : 2, n_ff = r.n_ff, n_ctx = 512;
    const std::string a = r.arch + ".";
    md.add("general.architecture", Value::string(r.arch));
    md.add("general.name", Value::string("kiln tiny " + r.name));
    md.add(a + "context_length", Value::u32(n_ctx));
    md.add(a + "embedding_length", Value::u32(n_embd));
    md.add(a + "feed_forward_length", Value::u32(n_ff));
    md.add(a + "block_count", Value::u32(n_layer));
    md.add(a + "attention.head_count", Value::u32(n_head));
    md.add(a + "attention.head_count_kv", Value::u32(n_head_kv));
    md.add(a + "attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    md.add(a + "attention.causal", Value::boolean(false));
    md.add(a + "pooling_type", Value::u32(r.rank ? 4 : neo ? 2 : 1));
    md.add(a + "rope.freq_base", Value::f32(neo ? 10000.0f : 250000.0f));
    md.add(a + "rope.scaling.type", Value::string("none"));
    int64_t n_vocab = 0;
    {
        gguf::File src = gguf::File::open(vocab_source);
        const gguf::Metadata tok = gguf::materialize_metadata(src);
        for (const auto& [k, v] : tok.entries()) {
            if (k.rfind("tokenizer.", 0) != 0 || k == "tokenizer.ggml.add_bos_token") continue;
            md.add(k, v);
            if (k == "tokenizer.ggml.tokens") n_vocab = static_cast<int64_t>(v.count());
        }
        // NeoBERT's BERT vocabulary opens with [CLS]; EuroBERT's converter adds no BOS.
        md.add("tokenizer.ggml.add_bos_token", Value::boolean(neo));
    }
    const GgmlType mt = r.matrix_type;
    const int64_t e = n_embd, kv = static_cast<int64_t>(n_embd / n_head) * n_head_kv;
    t.matrix("token_embd.weight", e, n_vocab, GgmlType::F16, 8.0f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (r.fused_qkv) {
            t.matrix(p + "attn_qkv.weight", e, e + 2 * kv, mt, 2.0f);
        } else {
            t.matrix(p + "attn_q.weight", e, e, mt, 2.0f);
            t.matrix(p + "attn_k.weight", e, kv, mt, 2.0f);
            t.matrix(p + "attn_v.weight", e, kv, mt, 2.0f);
        }
        t.matrix(p + "attn_output.weight", e, e, mt);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        if (neo) {
            t.matrix(p + "ffn_up.weight", e, 2 * n_ff, mt, 2.0f);
        } else {
            t.matrix(p + "ffn_gate.weight", e, n_ff, mt, 2.0f);
            t.matrix(p + "ffn_up.weight", e, n_ff, mt, 2.0f);
        }
        t.matrix(p + "ffn_down.weight", n_ff, e, mt);
    }
    t.vector(neo ? "enc.output_norm.weight" : "output_norm.weight", e, 1.0f, 0.2f);
    if (r.rank) {
        t.matrix("cls.weight", e, e, GgmlType::F32, 2.0f);
        t.vector("cls.bias", e, 0.0f, 0.3f);
        t.matrix("cls.output.weight", e, 1, GgmlType::F32, 2.0f);
        t.vector("cls.output.bias", 1, 0.0f, 0.3f);
    }
}

void write_modern_bert(const EncoderRecipe& r, EncoderWriter& t, const std::string& vocab_source) {
    gguf::Metadata& md = t.writer().metadata();
    const int n_layer = 3, n_embd = r.n_embd, n_head = r.n_head, n_ff = 96, n_ctx = 512;
    const std::string a = "modern-bert.";
    md.add("general.architecture", Value::string("modern-bert"));
    md.add("general.name", Value::string("kiln tiny " + r.name));
    md.add(a + "context_length", Value::u32(n_ctx));
    md.add(a + "embedding_length", Value::u32(n_embd));
    md.add(a + "feed_forward_length", Value::u32(n_ff));
    md.add(a + "block_count", Value::u32(n_layer));
    md.add(a + "attention.head_count", Value::u32(n_head));
    md.add(a + "attention.layer_norm_epsilon", Value::f32(1e-5f));
    md.add(a + "attention.causal", Value::boolean(false));
    md.add(a + "pooling_type", Value::u32(r.rank ? 4 : 1));
    md.add(a + "rope.freq_base", Value::f32(160000.0f));
    md.add(a + "rope.freq_base_swa", Value::f32(10000.0f));
    md.add(a + "rope.scaling.type", Value::string("none"));
    md.add(a + "attention.sliding_window", Value::u32(8));  // the tests' longer texts exceed it
    md.add(a + "attention.sliding_window_pattern", Value::u32(3));
    md.add(a + "hidden_activation", Value::string("gelu"));
    int64_t n_vocab = 0;
    uint64_t n_types = 0;
    copy_vocab(vocab_source, md, n_vocab, n_types);
    const GgmlType mt = r.matrix_type;
    const int64_t e = n_embd;
    t.matrix("token_embd.weight", e, n_vocab, GgmlType::F16, 8.0f);
    t.vector("token_embd_norm.weight", e, 1.0f, 0.2f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (il > 0) t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);  // layer 0: identity
        t.matrix(p + "attn_qkv.weight", e, 3 * e, mt, 2.0f);
        t.matrix(p + "attn_output.weight", e, e, mt);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "ffn_up.weight", e, 2 * n_ff, mt, 2.0f);
        t.matrix(p + "ffn_down.weight", n_ff, e, mt);
    }
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    if (r.rank) {  // as llama.cpp's converter writes ModernBERT's head and classifier
        t.matrix("cls.weight", e, e, GgmlType::F32, 2.0f);
        t.vector("cls.norm.weight", e, 1.0f, 0.2f);
        t.matrix("cls.output.weight", e, 1, GgmlType::F32, 2.0f);
        t.vector("cls.output.bias", 1, 0.0f, 0.3f);
    }
}

}  // namespace

void write_tiny_encoder(const std::string& name, const std::string& vocab_source, const std::string& path) {
    const EncoderRecipe* r = nullptr;
    for (const auto& x : recipes())
        if (x.name == name) r = &x;
    if (const DecoderRecipe* d = decoder_recipe(name)) return write_decoder_embedder(*d, vocab_source, path);
    if (!r) throw std::runtime_error("no tiny encoder '" + name + "'");
    uint64_t seed = 27;
    for (char c : name) seed = seed * 131 + static_cast<unsigned char>(c);
    EncoderWriter t(seed);
    if (r->arch == "neo-bert" || r->arch == "eurobert") {
        write_prenorm_encoder(*r, t, vocab_source);
        t.writer().write(path);
        return;
    }
    if (r->arch == "modern-bert") {
        write_modern_bert(*r, t, vocab_source);
        t.writer().write(path);
        return;
    }
    gguf::Metadata& md = t.writer().metadata();
    const int n_layer = r->n_layer, n_embd = r->n_embd, n_head = r->n_head, n_ff = r->n_ff, n_ctx = 512;
    const std::string a = r->arch + ".";
    md.add("general.architecture", Value::string(r->arch));
    md.add("general.name", Value::string("kiln tiny " + name));
    md.add(a + "context_length", Value::u32(n_ctx));
    md.add(a + "embedding_length", Value::u32(n_embd));
    md.add(a + "feed_forward_length", Value::u32(n_ff));
    md.add(a + "block_count", Value::u32(n_layer));
    md.add(a + "attention.head_count", Value::u32(n_head));
    md.add(a + "attention.layer_norm_epsilon", Value::f32(1e-12f));
    md.add(a + "attention.causal", Value::boolean(false));
    if (r->positions == Positions::Rope) md.add(a + "rope.freq_base", Value::f32(1000.0f));  // nomic-embed-text v1.5's
    md.add(a + "pooling_type", Value::u32(r->rank ? 4 : 1));
    if (r->moe_every > 0) {
        md.add(a + "expert_count", Value::u32(static_cast<uint32_t>(r->n_expert)));
        md.add(a + "expert_used_count", Value::u32(static_cast<uint32_t>(r->n_expert_used)));
        md.add(a + "moe_every_n_layers", Value::u32(static_cast<uint32_t>(r->moe_every)));
    }

    int64_t n_vocab = 0;
    uint64_t n_types = 0;
    copy_vocab(vocab_source, md, n_vocab, n_types, r->n_types);

    const GgmlType mt = r->matrix_type;
    const int64_t e = n_embd;
    t.matrix("token_embd.weight", e, n_vocab, GgmlType::F16, 8.0f);
    t.matrix("token_types.weight", e, static_cast<int64_t>(n_types), GgmlType::F32, 8.0f);
    if (r->positions == Positions::Learned) t.matrix("position_embd.weight", e, n_ctx, GgmlType::F32, 8.0f);
    t.vector("token_embd_norm.weight", e, 1.0f, 0.2f);
    t.vector("token_embd_norm.bias", e, 0.0f, 0.2f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (r->fused_qkv) {
            t.matrix(p + "attn_qkv.weight", e, 3 * e, mt, 2.0f);
        } else {
            for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
                t.matrix(p + m + ".weight", e, e, mt, 2.0f);
                t.vector(p + m + ".bias", e, 0.0f, 0.3f);
            }
        }
        if (r->qk_norm)
            for (const char* m : {"attn_q_norm", "attn_k_norm"}) {
                t.vector(p + m + ".weight", e, 1.0f, 0.2f);
                t.vector(p + m + ".bias", e, 0.0f, 0.2f);
            }
        t.matrix(p + "attn_output.weight", e, e, mt);
        if (!r->fused_qkv) t.vector(p + "attn_output.bias", e, 0.0f, 0.3f);
        t.vector(p + "attn_output_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "attn_output_norm.bias", e, 0.0f, 0.2f);
        if (r->attn_norm_2) {
            t.vector(p + "attn_norm_2.weight", e, 1.0f, 0.2f);
            t.vector(p + "attn_norm_2.bias", e, 0.0f, 0.2f);
        }
        if (r->moe_every > 0 && il % r->moe_every == 1) {  // as the converter writes nomic-embed-text-v2-moe's experts
            t.matrix(p + "ffn_gate_inp.weight", e, r->n_expert, GgmlType::F32, 4.0f);
            t.experts(p + "ffn_up_exps.weight", e, n_ff, r->n_expert, mt, 2.0f);
            t.experts(p + "ffn_down_exps.weight", n_ff, e, r->n_expert, mt);
            t.vector(p + "layer_output_norm.weight", e, 1.0f, 0.2f);
            t.vector(p + "layer_output_norm.bias", e, 0.0f, 0.2f);
            continue;
        }
        switch (r->ffn) {
            case Ffn::PlainBiased:
                t.matrix(p + "ffn_up.weight", e, n_ff, mt, 2.0f);
                t.vector(p + "ffn_up.bias", n_ff, 0.0f, 0.3f);
                break;
            case Ffn::SwiGlu:
                t.matrix(p + "ffn_gate.weight", e, n_ff, mt, 2.0f);
                t.matrix(p + "ffn_up.weight", e, n_ff, mt, 2.0f);
                break;
            case Ffn::GeGluFused: t.matrix(p + "ffn_up.weight", e, 2 * n_ff, mt, 2.0f); break;
            case Ffn::GeluGatedSep:
                t.matrix(p + "ffn_gate.weight", e, n_ff, mt, 2.0f);
                t.matrix(p + "ffn_up.weight", e, n_ff, mt, 2.0f);
                t.vector(p + "ffn_up.bias", n_ff, 0.0f, 0.3f);
                break;
        }
        t.matrix(p + "ffn_down.weight", n_ff, e, mt);
        if (r->ffn != Ffn::SwiGlu) t.vector(p + "ffn_down.bias", e, 0.0f, 0.3f);
        t.vector(p + "layer_output_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "layer_output_norm.bias", e, 0.0f, 0.2f);
    }
    if (r->rank && r->arch == "jina-bert-v2") {  // jina-reranker-v1: one row through tanh
        t.matrix("cls.weight", e, 1, GgmlType::F32, 2.0f);
        t.vector("cls.bias", 1, 0.0f, 0.3f);
    } else if (r->rank) {
        t.matrix("cls.weight", e, e, GgmlType::F32, 2.0f);
        t.vector("cls.bias", e, 0.0f, 0.3f);
        t.matrix("cls.output.weight", e, 1, GgmlType::F32, 2.0f);
        t.vector("cls.output.bias", 1, 0.0f, 0.3f);
    }
    t.writer().write(path);
}

}  // namespace kiln::test
