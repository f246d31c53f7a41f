#include "support/tiny_models.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/quant.h"

namespace kiln::test {

namespace {

using gguf::Value;

struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [-1, 1), exactly representable steps so every platform agrees.
    float uniform() { return static_cast<float>(static_cast<int64_t>(next() >> 40) - (1ll << 23)) / static_cast<float>(1 << 23); }
};

struct Shape {
    int n_layer = 2, n_embd = 64, n_head = 4, n_head_kv = 2, n_ff = 128, head_dim = 16;
    int window = 0;
};

class TinyWriter {
public:
    TinyWriter(const std::string& family, uint64_t seed) : family_(family), rng_{seed} {}

    gguf::Writer& writer() { return w_; }
    void key(const std::string& name, Value v) { w_.metadata().add(family_ + "." + name, std::move(v)); }

    // A matrix [n_in, n_out] of uniform values scaled by 1/sqrt(n_in), stored as `type`.
    void matrix(const std::string& name, int64_t n_in, int64_t n_out, GgmlType type, float gain = 1.0f) {
        std::vector<float> v(static_cast<size_t>(n_in * n_out));
        const float s = gain / std::sqrt(static_cast<float>(n_in));
        for (float& x : v) x = rng_.uniform() * s;
        add(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, v, type);
    }
    // A norm weight around 1 (or a bias around 0).
    void vector(const std::string& name, int64_t n, float center, float spread) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = center + spread * rng_.uniform();
        add(name, {static_cast<uint64_t>(n)}, v, GgmlType::F32);
    }

private:
    void add(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& v, GgmlType type) {
        const int64_t row = static_cast<int64_t>(shape[0]);
        const int64_t rows = static_cast<int64_t>(v.size()) / row;
        const uint64_t rb = ggml_row_bytes(type, static_cast<uint64_t>(row));
        std::vector<uint8_t> bytes(static_cast<size_t>(rb * static_cast<uint64_t>(rows)));
        for (int64_t r = 0; r < rows; ++r) {
            if (type == GgmlType::F32)
                std::memcpy(bytes.data() + r * rb, v.data() + r * row, static_cast<size_t>(rb));
            else if (type == GgmlType::F16)
                for (int64_t i = 0; i < row; ++i) {
                    uint16_t h = quant::fp32_to_fp16(v[static_cast<size_t>(r * row + i)]);
                    std::memcpy(bytes.data() + r * rb + i * 2, &h, 2);
                }
            else if (quant::can_quantize(type))
                quant::quantize_row(type, v.data() + r * row, bytes.data() + r * rb, row);
        }
        if (!quant::can_quantize(type) && type != GgmlType::F32 && type != GgmlType::F16) random_blocks(type, v, row, bytes);
        w_.add_tensor(name, type, std::move(shape), std::move(bytes));
    }

    // Types kiln cannot quantize (the grid i-quants, IQ4_XS): random block bytes,
    // each block's f16 scale set so that its values are about the size of v's (the
    // divisor: a typical |level x sub-block scale| of the format).
    void random_blocks(GgmlType type, const std::vector<float>& v, int64_t row, std::vector<uint8_t>& bytes) {
        float typical = 0;
        switch (type) {
            case GgmlType::IQ2_XXS:
            case GgmlType::IQ2_XS:
            case GgmlType::IQ2_S: typical = 50; break;
            case GgmlType::IQ3_XXS: typical = 120; break;
            case GgmlType::IQ3_S: typical = 128; break;
            case GgmlType::IQ1_S:
            case GgmlType::IQ1_M: typical = 8; break;
            case GgmlType::IQ4_XS: typical = 1000; break;
            default: throw Error(std::string("tiny model: no way to write ") + std::string(ggml_type_name(type)));
        }
        float amax = 0;
        for (int64_t i = 0; i < row; ++i) amax = std::max(amax, std::fabs(v[static_cast<size_t>(i)]));
        // Half the size: uniform random levels are all near the block's extremes, so
        // at full size these models' activations (and the 8-bit rounding flips that
        // amplify the last-bit differences of llama.cpp's own float order) grow.
        const uint16_t d = quant::fp32_to_fp16(amax / (2 * typical));
        const uint64_t block = ggml_type_info(type).block_bytes;
        for (auto& b : bytes) b = static_cast<uint8_t>(rng_.next());
        for (uint64_t off = 0; off < bytes.size(); off += block) {
            if (type == GgmlType::IQ1_M) {  // the f16 is the top nibbles of the four scale words (bytes 48..55)
                for (int k = 0; k < 4; ++k) {
                    uint8_t& top = bytes[off + 48 + 2 * k + 1];
                    top = static_cast<uint8_t>((top & 0x0F) | (((d >> (4 * k)) & 0xF) << 4));
                }
            } else {
                std::memcpy(bytes.data() + off, &d, 2);
            }
        }
    }

    std::string family_;
    Rng rng_;
    gguf::Writer w_;
};

struct FamilyRecipe {
    std::string family;
    std::string description;
    Shape shape;
    GgmlType attn_type, ffn_type, embd_type;
    bool tied_output;
    bool qkv_bias = false;
    bool qk_norm = false;
    bool post_norms = false;
    bool rope_freqs = false;
    bool rope_neox_keys = false;
    float softcap_attn = 0, softcap_final = 0;
    std::string arch;  // the GGUF architecture where it is not `family`
};

const std::vector<FamilyRecipe>& recipes() {
    static const std::vector<FamilyRecipe> r = {
        {"llama", "GQA 4/2, separate output head, Llama 3 rope_freqs factors; Q8_0 / Q4_0 / F16",
         {2, 64, 4, 2, 128, 16, 0}, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::F16, false, false, false, false, true},
        {"qwen2", "Q/K/V biases, NEOX RoPE, tied output; Q4_K / Q6_K",
         {2, 256, 4, 2, 256, 64, 0}, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, true, true},
        {"qwen3", "QK-norm, head size 32 with width 64 (key_length != width / heads); Q5_0 / Q8_0",
         {2, 64, 4, 2, 128, 32, 0}, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q8_0, true, false, true},
        {"smollm3", "four layers: NoPE on the fourth; Q4_1 / Q5_1",
         {4, 64, 4, 1, 128, 16, 0}, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::Q8_0, true},
        {"gemma2", "sliding window 8 on even layers, attention and final soft-caps, post-norms, GELU; Q8_0 / Q5_K",
         {3, 256, 4, 2, 256, 64, 8}, GgmlType::Q8_0, GgmlType::Q5_K, GgmlType::Q8_0, true, false, false, true, false,
         false, 50.0f, 30.0f},
        {"gemma3", "six layers (5 sliding, window 8, + 1 full), QK-norm, post-norms, GELU, 1 KV head of 128; Q4_K / Q3_K",
         {6, 256, 2, 1, 512, 128, 8}, GgmlType::Q4_K, GgmlType::Q3_K, GgmlType::Q8_0, true, false, true, true},
        {"llama_float", "llama with float weights (the BF16 pair kernels, F32 panels); BF16 / F32 / BF16",
         {2, 64, 4, 2, 128, 16, 0}, GgmlType::BF16, GgmlType::F32, GgmlType::BF16, false, false, false, false, true, false, 0.0f,
         0.0f, "llama"},
        // The low-bit types with kernels (src/compute/kernels/*_lowbit.cpp, MXFP4 in
        // *_quant.cpp): llama with every layer matrix in one type, 256-wide rows.
        {"llama_q2_k", "llama with every layer matrix Q2_K; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0}, GgmlType::Q2_K,
         GgmlType::Q2_K, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_q3_k", "llama with every layer matrix Q3_K; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0}, GgmlType::Q3_K,
         GgmlType::Q3_K, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_tq1_0", "llama with every layer matrix TQ1_0 (ternary); Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0},
         GgmlType::TQ1_0, GgmlType::TQ1_0, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_tq2_0", "llama with every layer matrix TQ2_0 (ternary); Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0},
         GgmlType::TQ2_0, GgmlType::TQ2_0, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_mxfp4", "llama with every layer matrix MXFP4; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0}, GgmlType::MXFP4,
         GgmlType::MXFP4, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        // Types kiln cannot quantize: random blocks (TinyWriter::random_blocks), attention in one, the FFN in another.
        {"llama_iq2", "llama with random IQ2_XXS attention and IQ2_XS FFN blocks; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0},
         GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_iq3", "llama with random IQ3_XXS attention and IQ2_S FFN blocks; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0},
         GgmlType::IQ3_XXS, GgmlType::IQ2_S, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_iq1", "llama with random IQ1_S attention and IQ1_M FFN blocks; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0},
         GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
        {"llama_iq4_xs", "llama with random IQ3_S attention and IQ4_XS FFN blocks; Q8_0 embedding", {2, 256, 4, 2, 512, 64, 0},
         GgmlType::IQ3_S, GgmlType::IQ4_XS, GgmlType::Q8_0, true, false, false, false, false, false, 0.0f, 0.0f, "llama"},
    };
    return r;
}

const FamilyRecipe& recipe(const std::string& family) {
    for (const auto& r : recipes())
        if (r.family == family) return r;
    throw std::runtime_error("no tiny model recipe for '" + family + "'");
}

}  // namespace

std::vector<TinyModelInfo> tiny_model_families() {
    std::vector<TinyModelInfo> out;
    for (const auto& r : recipes()) out.push_back({r.family, r.description});
    return out;
}

std::vector<int32_t> tiny_model_prompt() {
    // "The quick brown fox ..." style ids mixed with rare ones; 40 positions so the
    // window-8 sliding layers mask most of the prompt.
    std::vector<int32_t> p = {1};
    Rng rng{42};
    for (int i = 0; i < 39; ++i) p.push_back(static_cast<int32_t>(100 + rng.next() % 49000));
    return p;
}

void write_tiny_model(const std::string& family, const std::string& tokenizer_source, const std::string& path) {
    const FamilyRecipe& r = recipe(family);
    uint64_t seed = 1000;
    for (char c : family) seed = seed * 131 + static_cast<unsigned char>(c);
    const std::string arch = r.arch.empty() ? family : r.arch;
    TinyWriter t(arch, seed);
    gguf::Metadata& md = t.writer().metadata();
    const Shape& s = r.shape;
    md.add("general.architecture", Value::string(arch));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(static_cast<uint32_t>(s.n_embd)));
    t.key("block_count", Value::u32(static_cast<uint32_t>(s.n_layer)));
    t.key("feed_forward_length", Value::u32(static_cast<uint32_t>(s.n_ff)));
    t.key("attention.head_count", Value::u32(static_cast<uint32_t>(s.n_head)));
    t.key("attention.head_count_kv", Value::u32(static_cast<uint32_t>(s.n_head_kv)));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("rope.freq_base", Value::f32(10000.0f));
    if (s.head_dim * s.n_head != s.n_embd) {
        t.key("attention.key_length", Value::u32(static_cast<uint32_t>(s.head_dim)));
        t.key("attention.value_length", Value::u32(static_cast<uint32_t>(s.head_dim)));
    }
    if (s.window > 0) t.key("attention.sliding_window", Value::u32(static_cast<uint32_t>(s.window)));
    if (r.softcap_attn > 0) t.key("attn_logit_softcapping", Value::f32(r.softcap_attn));
    if (r.softcap_final > 0) t.key("final_logit_softcapping", Value::f32(r.softcap_final));

    gguf::File src = gguf::File::open(tokenizer_source);
    gguf::Metadata tok = gguf::materialize_metadata(src);
    int64_t n_vocab = 0;
    for (const auto& [k, v] : tok.entries()) {
        if (k.rfind("tokenizer.", 0) != 0 || k == "tokenizer.chat_template") continue;
        md.add(k, v);
        if (k == "tokenizer.ggml.tokens") n_vocab = static_cast<int64_t>(v.count());
    }
    if (n_vocab == 0) throw Error(tokenizer_source + ": no tokenizer.ggml.tokens");

    const int64_t e = s.n_embd, dq = static_cast<int64_t>(s.n_head) * s.head_dim, dkv = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
    t.matrix("token_embd.weight", e, n_vocab, r.embd_type, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    if (!r.tied_output) t.matrix("output.weight", e, n_vocab, r.attn_type, 2.0f);
    if (r.rope_freqs) t.vector("rope_freqs.weight", s.head_dim / 2, 2.0f, 1.0f);
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "attn_q.weight", e, dq, r.attn_type, 2.0f);
        t.matrix(p + "attn_k.weight", e, dkv, r.attn_type, 2.0f);
        t.matrix(p + "attn_v.weight", e, dkv, r.attn_type);
        if (r.qkv_bias) {
            t.vector(p + "attn_q.bias", dq, 0.0f, 0.5f);
            t.vector(p + "attn_k.bias", dkv, 0.0f, 0.5f);
            t.vector(p + "attn_v.bias", dkv, 0.0f, 0.5f);
        }
        if (r.qk_norm) {
            t.vector(p + "attn_q_norm.weight", s.head_dim, 1.0f, 0.2f);
            t.vector(p + "attn_k_norm.weight", s.head_dim, 1.0f, 0.2f);
        }
        t.matrix(p + "attn_output.weight", dq, e, r.attn_type);
        if (r.post_norms) t.vector(p + "post_attention_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "ffn_gate.weight", e, s.n_ff, r.ffn_type);
        t.matrix(p + "ffn_up.weight", e, s.n_ff, r.ffn_type);
        t.matrix(p + "ffn_down.weight", s.n_ff, e, r.ffn_type);
        if (r.post_norms) t.vector(p + "post_ffw_norm.weight", e, 1.0f, 0.2f);
    }
    t.writer().write(path);
}

}  // namespace kiln::test
