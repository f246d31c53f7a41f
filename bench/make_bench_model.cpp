// make_bench_model: writes a synthetic llama-shaped model (random weights, fixed
// seed) with kiln's GGUF writer, for the speed table (bench/vs_llamacpp.py).
//
//   make_bench_model --type Q4_0 --tokenizer SmolLM2.gguf --out model.gguf
//                    [--layers 16] [--embd 2048] [--ff 8192] [--heads 32] [--kv-heads 8]
//
// The defaults give Llama 3.2 1B's shape with SmolLM2's 49152-token vocabulary
// (copied from --tokenizer, like the tiny test models): ~1.07 B parameters, the
// output head tied to the embedding. Every matrix has the one given type. Speed
// does not depend on the values, so each matrix is filled with rows drawn from a
// pool of 64 quantized random rows (quantizing a billion values with the
// reference k-quant search would take minutes); types kiln cannot quantize (the
// grid i-quants, IQ4_XS) get random blocks with small scales.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/quant.h"

namespace {

using namespace kiln;

struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    float uniform() { return static_cast<float>(static_cast<int64_t>(next() >> 40) - (1ll << 23)) / static_cast<float>(1 << 23); }
};

struct Options {
    std::string type = "Q4_0", tokenizer, out;
    int layers = 16, embd = 2048, ff = 8192, heads = 32, kv_heads = 8;
};

std::vector<uint8_t> make_matrix(GgmlType type, int64_t n_in, int64_t n_out, Rng& rng) {
    constexpr int k_pool = 64;
    const uint64_t rb = ggml_row_bytes(type, static_cast<uint64_t>(n_in));
    std::vector<uint8_t> pool(rb * k_pool);
    std::vector<float> row(static_cast<size_t>(n_in));
    const float s = std::sqrt(3.0f / static_cast<float>(n_in));  // unit variance outputs for unit inputs
    for (int r = 0; r < k_pool; ++r) {
        for (float& v : row) v = rng.uniform() * s;
        if (quant::can_quantize(type)) {
            quant::quantize_row(type, row.data(), pool.data() + r * rb, n_in);
            continue;
        }
        // No kiln quantizer (the grid i-quants, IQ4_XS): random blocks with a small
        // f16 scale at byte 0 (IQ1_M: spread over its scale words' top nibbles).
        uint8_t* p = pool.data() + r * rb;
        for (uint64_t i = 0; i < rb; ++i) p[i] = static_cast<uint8_t>(rng.next());
        const uint16_t d = quant::fp32_to_fp16(s / 64);
        const uint64_t bb = ggml_type_info(type).block_bytes;
        for (uint64_t off = 0; off < rb; off += bb) {
            if (type == GgmlType::IQ1_M) {
                for (int k = 0; k < 4; ++k) p[off + 49 + 2 * k] = static_cast<uint8_t>((p[off + 49 + 2 * k] & 0x0F) | (((d >> (4 * k)) & 0xF) << 4));
            } else {
                std::memcpy(p + off, &d, 2);
            }
        }
    }
    std::vector<uint8_t> m(rb * static_cast<uint64_t>(n_out));
    for (int64_t r = 0; r < n_out; ++r) std::memcpy(m.data() + r * rb, pool.data() + (rng.next() % k_pool) * rb, rb);
    return m;
}

int run(const Options& o) {
    const GgmlTypeInfo* info = find_ggml_type(o.type);
    if (!info || !info->quantized || !quant::can_dequantize(info->type)) throw Error("cannot write type '" + o.type + "'");
    const GgmlType type = info->type;
    if (o.embd % o.heads != 0 || o.heads % o.kv_heads != 0) throw Error("heads must divide the width and kv-heads the heads");
    gguf::Writer w;
    gguf::Metadata& md = w.metadata();
    using gguf::Value;
    md.add("general.architecture", Value::string("llama"));
    md.add("general.name", Value::string("kiln bench llama " + o.type));
    md.add("llama.context_length", Value::u32(4096));
    md.add("llama.embedding_length", Value::u32(static_cast<uint32_t>(o.embd)));
    md.add("llama.block_count", Value::u32(static_cast<uint32_t>(o.layers)));
    md.add("llama.feed_forward_length", Value::u32(static_cast<uint32_t>(o.ff)));
    md.add("llama.attention.head_count", Value::u32(static_cast<uint32_t>(o.heads)));
    md.add("llama.attention.head_count_kv", Value::u32(static_cast<uint32_t>(o.kv_heads)));
    md.add("llama.attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    md.add("llama.rope.freq_base", Value::f32(500000.0f));
    gguf::File src = gguf::File::open(o.tokenizer);
    gguf::Metadata tok = gguf::materialize_metadata(src);
    int64_t n_vocab = 0;
    for (const auto& [k, v] : tok.entries()) {
        if (k.rfind("tokenizer.", 0) != 0 || k == "tokenizer.chat_template") continue;
        md.add(k, v);
        if (k == "tokenizer.ggml.tokens") n_vocab = static_cast<int64_t>(v.count());
    }
    if (n_vocab == 0) throw Error(o.tokenizer + ": no tokenizer.ggml.tokens");

    Rng rng{20240601};
    const int64_t e = o.embd, hd = o.embd / o.heads, kv = hd * o.kv_heads;
    auto matrix = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        w.add_tensor(name, type, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, make_matrix(type, n_in, n_out, rng));
    };
    auto ones = [&](const std::string& name, int64_t n) {
        std::vector<uint8_t> b(static_cast<size_t>(n) * 4);
        const float one = 1.0f;
        for (int64_t i = 0; i < n; ++i) std::memcpy(b.data() + 4 * i, &one, 4);
        w.add_tensor(name, GgmlType::F32, {static_cast<uint64_t>(n)}, std::move(b));
    };
    matrix("token_embd.weight", e, n_vocab);
    ones("output_norm.weight", e);
    for (int il = 0; il < o.layers; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        ones(p + "attn_norm.weight", e);
        matrix(p + "attn_q.weight", e, e);
        matrix(p + "attn_k.weight", e, kv);
        matrix(p + "attn_v.weight", e, kv);
        matrix(p + "attn_output.weight", e, e);
        ones(p + "ffn_norm.weight", e);
        matrix(p + "ffn_gate.weight", e, o.ff);
        matrix(p + "ffn_up.weight", e, o.ff);
        matrix(p + "ffn_down.weight", o.ff, e);
    }
    w.write(o.out);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw Error("missing value after " + a);
            return argv[++i];
        };
        try {
            if (a == "--type") o.type = value();
            else if (a == "--tokenizer") o.tokenizer = value();
            else if (a == "--out") o.out = value();
            else if (a == "--layers") o.layers = std::stoi(value());
            else if (a == "--embd") o.embd = std::stoi(value());
            else if (a == "--ff") o.ff = std::stoi(value());
            else if (a == "--heads") o.heads = std::stoi(value());
            else if (a == "--kv-heads") o.kv_heads = std::stoi(value());
            else throw Error("unknown option " + a);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "make_bench_model: %s\n", e.what());
            return 2;
        }
    }
    if (o.tokenizer.empty() || o.out.empty()) {
        std::fprintf(stderr, "usage: make_bench_model --type TYPE --tokenizer GGUF --out FILE [--layers N --embd N --ff N --heads N --kv-heads N]\n");
        return 2;
    }
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_bench_model: %s\n", e.what());
        return 1;
    }
}
