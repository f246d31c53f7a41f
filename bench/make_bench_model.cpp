// make_bench_model: writes a synthetic llama-shaped model (random weights, fixed
// seed) with kiln's GGUF writer, for the speed table (bench/vs_llamacpp.py).
//
//   make_bench_model --type Q4_0 --tokenizer SmolLM2.gguf --out model.gguf
//                    [--layers 16] [--embd 2048] [--ff 8192] [--heads 32] [--kv-heads 8]
//                    [--arch qwen3moe --experts 128 --experts-used 8 --head-dim 128]
//
// With --arch qwen3moe every layer's FFN is --experts experts of width --ff
// (merged ffn_*_exps tensors, an f32 router of random rows so tokens spread
// over the experts) and the attention has per-head QK-norm and --head-dim heads:
// Qwen3-30B-A3B's shape is --layers 48 --embd 2048 --ff 768 --heads 32
// --kv-heads 4 --head-dim 128 --experts 128 --experts-used 8.
//
// The defaults give Llama 3.2 1B's shape with SmolLM2's 49152-token vocabulary
// (copied from --tokenizer, like the tiny test models): ~1.07 B parameters, the
// output head tied to the embedding. Every matrix has the one given type. Speed
// does not depend on the values, so each matrix is filled with rows drawn from a
// pool of 64 quantized random rows (quantizing a billion values with the
// reference k-quant search would take minutes).
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
    std::string type = "Q4_0", tokenizer, out, arch = "llama";
    int layers = 16, embd = 2048, ff = 8192, heads = 32, kv_heads = 8;
    int head_dim = 0;  // 0: embd / heads
    int experts = 128, experts_used = 8;
};

std::vector<uint8_t> make_matrix(GgmlType type, int64_t n_in, int64_t n_out, Rng& rng) {
    constexpr int k_pool = 64;
    const uint64_t rb = ggml_row_bytes(type, static_cast<uint64_t>(n_in));
    std::vector<uint8_t> pool(rb * k_pool);
    std::vector<float> row(static_cast<size_t>(n_in));
    const float s = std::sqrt(3.0f / static_cast<float>(n_in));  // unit variance outputs for unit inputs
    for (int r = 0; r < k_pool; ++r) {
        for (float& v : row) v = rng.uniform() * s;
        quant::quantize_row(type, row.data(), pool.data() + r * rb, n_in);
    }
    std::vector<uint8_t> m(rb * static_cast<uint64_t>(n_out));
    for (int64_t r = 0; r < n_out; ++r) std::memcpy(m.data() + r * rb, pool.data() + (rng.next() % k_pool) * rb, rb);
    return m;
}

int run(const Options& o) {
    const GgmlTypeInfo* info = find_ggml_type(o.type);
    if (!info || !quant::can_quantize(info->type)) throw Error("no quantizer for type '" + o.type + "'");
    const GgmlType type = info->type;
    const bool moe = o.arch == "qwen3moe";
    if (!moe && o.arch != "llama") throw Error("--arch: llama or qwen3moe");
    if ((o.head_dim == 0 && o.embd % o.heads != 0) || o.heads % o.kv_heads != 0)
        throw Error("heads must divide the width and kv-heads the heads");
    gguf::Writer w;
    gguf::Metadata& md = w.metadata();
    using gguf::Value;
    const std::string a = o.arch + ".";
    const int hd = o.head_dim > 0 ? o.head_dim : o.embd / o.heads;
    md.add("general.architecture", Value::string(o.arch));
    md.add("general.name", Value::string("kiln bench " + o.arch + " " + o.type));
    md.add(a + "context_length", Value::u32(4096));
    md.add(a + "embedding_length", Value::u32(static_cast<uint32_t>(o.embd)));
    md.add(a + "block_count", Value::u32(static_cast<uint32_t>(o.layers)));
    md.add(a + "feed_forward_length", Value::u32(static_cast<uint32_t>(moe ? o.ff * o.experts_used : o.ff)));
    md.add(a + "attention.head_count", Value::u32(static_cast<uint32_t>(o.heads)));
    md.add(a + "attention.head_count_kv", Value::u32(static_cast<uint32_t>(o.kv_heads)));
    md.add(a + "attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    md.add(a + "rope.freq_base", Value::f32(moe ? 1000000.0f : 500000.0f));
    if (hd * o.heads != o.embd) {
        md.add(a + "attention.key_length", Value::u32(static_cast<uint32_t>(hd)));
        md.add(a + "attention.value_length", Value::u32(static_cast<uint32_t>(hd)));
    }
    if (moe) {
        md.add(a + "expert_count", Value::u32(static_cast<uint32_t>(o.experts)));
        md.add(a + "expert_used_count", Value::u32(static_cast<uint32_t>(o.experts_used)));
        md.add(a + "expert_feed_forward_length", Value::u32(static_cast<uint32_t>(o.ff)));
    }
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
    const int64_t e = o.embd, q = static_cast<int64_t>(hd) * o.heads, kv = static_cast<int64_t>(hd) * o.kv_heads;
    auto matrix = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        w.add_tensor(name, type, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, make_matrix(type, n_in, n_out, rng));
    };
    // [n_in, n_out, n_expert]: the rows of all experts from the pool.
    auto experts = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        w.add_tensor(name, type, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out), static_cast<uint64_t>(o.experts)},
                     make_matrix(type, n_in, n_out * o.experts, rng));
    };
    auto router = [&](const std::string& name) {
        std::vector<uint8_t> b(static_cast<size_t>(e * o.experts) * 4);
        const float s = std::sqrt(3.0f / static_cast<float>(e));
        for (size_t i = 0; i < b.size(); i += 4) {
            const float v = rng.uniform() * s;
            std::memcpy(b.data() + i, &v, 4);
        }
        w.add_tensor(name, GgmlType::F32, {static_cast<uint64_t>(e), static_cast<uint64_t>(o.experts)}, std::move(b));
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
        matrix(p + "attn_q.weight", e, q);
        matrix(p + "attn_k.weight", e, kv);
        matrix(p + "attn_v.weight", e, kv);
        matrix(p + "attn_output.weight", q, e);
        ones(p + "ffn_norm.weight", e);
        if (moe) {
            ones(p + "attn_q_norm.weight", hd);
            ones(p + "attn_k_norm.weight", hd);
            router(p + "ffn_gate_inp.weight");
            experts(p + "ffn_gate_exps.weight", e, o.ff);
            experts(p + "ffn_up_exps.weight", e, o.ff);
            experts(p + "ffn_down_exps.weight", o.ff, e);
        } else {
            matrix(p + "ffn_gate.weight", e, o.ff);
            matrix(p + "ffn_up.weight", e, o.ff);
            matrix(p + "ffn_down.weight", o.ff, e);
        }
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
            else if (a == "--arch") o.arch = value();
            else if (a == "--head-dim") o.head_dim = std::stoi(value());
            else if (a == "--experts") o.experts = std::stoi(value());
            else if (a == "--experts-used") o.experts_used = std::stoi(value());
            else throw Error("unknown option " + a);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "make_bench_model: %s\n", e.what());
            return 2;
        }
    }
    if (o.tokenizer.empty() || o.out.empty()) {
        std::fprintf(stderr, "usage: make_bench_model --type TYPE --tokenizer GGUF --out FILE [--layers N --embd N --ff N --heads N --kv-heads N]\n"
                             "       [--arch qwen3moe --experts N --experts-used N --head-dim N]\n");
        return 2;
    }
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_bench_model: %s\n", e.what());
        return 1;
    }
}
