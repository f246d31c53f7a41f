// The writer of the tiny random models (tiny_models.cpp, tiny_moe_models.cpp):
// kiln's GGUF writer with a fixed-seed RNG whose values are exact on every
// platform, so the same bytes come out everywhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/quant.h"

namespace kiln::test {

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

class TinyWriter {
public:
    TinyWriter(const std::string& family, uint64_t seed) : family_(family), rng_{seed} {}

    gguf::Writer& writer() { return w_; }
    void key(const std::string& name, gguf::Value v) { w_.metadata().add(family_ + "." + name, std::move(v)); }

    // A matrix [n_in, n_out] of uniform values scaled by 1/sqrt(n_in), stored as `type`.
    void matrix(const std::string& name, int64_t n_in, int64_t n_out, GgmlType type, float gain = 1.0f) {
        std::vector<float> v(static_cast<size_t>(n_in * n_out));
        const float s = gain / std::sqrt(static_cast<float>(n_in));
        for (float& x : v) x = rng_.uniform() * s;
        add(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, v, type);
    }
    // A merged expert tensor [n_in, n_out, n_expert], each expert as `matrix`.
    void experts(const std::string& name, int64_t n_in, int64_t n_out, int64_t n_expert, GgmlType type, float gain = 1.0f) {
        std::vector<float> v(static_cast<size_t>(n_in * n_out * n_expert));
        const float s = gain / std::sqrt(static_cast<float>(n_in));
        for (float& x : v) x = rng_.uniform() * s;
        add(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out), static_cast<uint64_t>(n_expert)}, v, type);
    }
    // A router [n_in, n_expert] in f32 (llama.cpp's quantizer keeps routers f32)
    // whose row `tie + 1` repeats row `tie` (tie >= 0): those two experts' logits
    // are equal for every token, so the top-k selection has to break ties.
    void router(const std::string& name, int64_t n_in, int64_t n_expert, int tie, float gain) {
        std::vector<float> v(static_cast<size_t>(n_in * n_expert));
        const float s = gain / std::sqrt(static_cast<float>(n_in));
        for (float& x : v) x = rng_.uniform() * s;
        if (tie >= 0) std::copy_n(v.begin() + tie * n_in, n_in, v.begin() + (tie + 1) * n_in);
        add(name, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_expert)}, v, GgmlType::F32);
    }
    // Values center + spread * uniform, and an f32 tensor of them.
    void fill(std::vector<float>& v, float center, float spread) {
        for (float& x : v) x = center + spread * rng_.uniform();
    }
    void raw(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& v) { add(name, std::move(shape), v, GgmlType::F32); }
    // A norm weight around 1 (or a bias around 0).
    void vector(const std::string& name, int64_t n, float center, float spread) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = center + spread * rng_.uniform();
        add(name, {static_cast<uint64_t>(n)}, v, GgmlType::F32);
    }
    // An f32 tensor of any shape, f(u) of uniform u in [-1, 1) per element.
    void tensor(const std::string& name, std::vector<uint64_t> shape, const std::function<float(float)>& f) {
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = f(rng_.uniform());
        add(name, std::move(shape), v, GgmlType::F32);
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

// The tokenizer.* keys of the GGUF at tokenizer_source (its chat template left
// out); n_vocab its token count.
inline void copy_tokenizer(gguf::Metadata& md, const std::string& tokenizer_source, int64_t& n_vocab) {
    gguf::File src = gguf::File::open(tokenizer_source);
    gguf::Metadata tok = gguf::materialize_metadata(src);
    n_vocab = 0;
    for (const auto& [k, v] : tok.entries()) {
        if (k.rfind("tokenizer.", 0) != 0 || k == "tokenizer.chat_template") continue;
        md.add(k, v);
        if (k == "tokenizer.ggml.tokens") n_vocab = static_cast<int64_t>(v.count());
    }
    if (n_vocab == 0) throw Error(tokenizer_source + ": no tokenizer.ggml.tokens");
}

}  // namespace kiln::test
