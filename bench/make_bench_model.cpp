// make_bench_model: writes a synthetic llama-shaped model (random weights, fixed
// seed) with kiln's GGUF writer, for the speed table (bench/vs_llamacpp.py).
//
//   make_bench_model --type Q4_0 --tokenizer SmolLM2.gguf --out model.gguf
//                    [--layers 16] [--embd 2048] [--ff 8192] [--heads 32] [--kv-heads 8] [--ctx 4096]
//   make_bench_model --arch qwen35 --type Q8_0 --tokenizer SmolLM2.gguf --out model.gguf [--layers 24]
//
// --arch qwen35 writes a Qwen 3.5 0.8B-shaped hybrid instead (width 1024, FFN
// 3584, three gated delta-net layers of 16 key / 16 value heads of 128 to one
// gated attention layer of 8 heads / 2 KV heads of 256, 64 rotated dimensions).
//                    [--arch qwen3moe --experts 128 --experts-used 8 --head-dim 128]
//
// With --arch qwen3moe every layer's FFN is --experts experts of width --ff
// (merged ffn_*_exps tensors, an f32 router of random rows so tokens spread
// over the experts) and the attention has per-head QK-norm and --head-dim heads:
// Qwen3-30B-A3B's shape is --layers 48 --embd 2048 --ff 768 --heads 32
// --kv-heads 4 --head-dim 128 --experts 128 --experts-used 8.
//
// --arch deepseek2 writes DeepSeek-V2-Lite's shape (width 2048, 16 heads of
// latent attention: kv_lora 512 + 64 rotated, no q_lora, head 128 + 64 / 128;
// YaRN x40 over 4096 with mscale_all_dim 0.707; layer 0 dense with FFN 10944,
// then 64 experts of width 1408, 6 selected by softmax, and 2 shared experts)
// with --layers of its 27 layers; --nextn N adds N multi-token-prediction blocks
// after them (expert layers with nextn.eh_proj / enorm / hnorm / shared_head_norm). Matrices whose rows the type cannot hold
// (1408, 10944 for Q4_K) are written in Q5_0, and attn_k_b / attn_v_b in Q8_0,
// as llama-quantize falls back for them.
//
// --arch gpt-oss writes gpt-oss-20b's shape (write_gpt_oss) with --layers of its
// 24 layers, the experts in --type (MXFP4 as released) and the rest as the release.
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
    std::string type = "Q4_0", tokenizer, out, arch = "llama";
    int layers = 16, embd = 2048, ff = 8192, heads = 32, kv_heads = 8;
    int head_dim = 0;  // 0: embd / heads
    int experts = 128, experts_used = 8;
    int ctx = 4096;  // context_length of the llama / qwen3moe shapes (long-context benches need more)
    int nextn = 0;   // deepseek2: multi-token-prediction blocks after the layers (DeepSeek-V3's NextN form)
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

// DeepSeek-V2-Lite's shape (o.layers layers: the first dense, the rest experts).
void write_deepseek2(const Options& o, GgmlType type, gguf::Writer& w, int64_t n_vocab, Rng& rng) {
    using gguf::Value;
    gguf::Metadata& md = w.metadata();
    const std::string a = "deepseek2.";
    const int64_t e = 2048, n_head = 16, lora = 512, rot = 64, nope = 128, dv = 128, ff = 10944, ff_exp = 1408, n_exp = 64;
    const int64_t n_shared = 2;
    auto u32 = [](int64_t v) { return Value::u32(static_cast<uint32_t>(v)); };
    md.add(a + "context_length", u32(163840));
    md.add(a + "embedding_length", u32(e));
    md.add(a + "block_count", u32(o.layers + o.nextn));
    if (o.nextn > 0) md.add(a + "nextn_predict_layers", u32(o.nextn));
    md.add(a + "feed_forward_length", u32(ff));
    md.add(a + "attention.head_count", u32(n_head));
    md.add(a + "attention.head_count_kv", u32(1));
    md.add(a + "attention.key_length", u32(lora + rot));
    md.add(a + "attention.value_length", u32(lora));
    md.add(a + "attention.key_length_mla", u32(nope + rot));
    md.add(a + "attention.value_length_mla", u32(dv));
    md.add(a + "attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    md.add(a + "attention.kv_lora_rank", u32(lora));
    md.add(a + "attention.q_lora_rank", u32(0));
    md.add(a + "rope.freq_base", Value::f32(10000.0f));
    md.add(a + "rope.dimension_count", u32(rot));
    md.add(a + "rope.scaling.type", Value::string("yarn"));
    md.add(a + "rope.scaling.factor", Value::f32(40.0f));
    md.add(a + "rope.scaling.original_context_length", u32(4096));
    md.add(a + "rope.scaling.yarn_log_multiplier", Value::f32(0.0707f));
    md.add(a + "leading_dense_block_count", u32(1));
    md.add(a + "expert_count", u32(n_exp));
    md.add(a + "expert_used_count", u32(6));
    md.add(a + "expert_feed_forward_length", u32(ff_exp));
    md.add(a + "expert_shared_count", u32(n_shared));
    md.add(a + "expert_weights_scale", Value::f32(1.0f));
    md.add(a + "expert_gating_func", u32(1));
    using u64 = uint64_t;
    auto fit = [&](int64_t n_in) { return n_in % ggml_type_info(type).block_size == 0 ? type : GgmlType::Q5_0; };
    auto matrix = [&](const std::string& name, int64_t n_in, int64_t n_out, GgmlType t) {
        w.add_tensor(name, t, {u64(n_in), u64(n_out)}, make_matrix(t, n_in, n_out, rng));
    };
    auto stack = [&](const std::string& name, int64_t n_in, int64_t n_out, int64_t n, GgmlType t) {
        w.add_tensor(name, t, {u64(n_in), u64(n_out), u64(n)}, make_matrix(t, n_in, n_out * n, rng));
    };
    auto fill = [&](const std::string& name, std::vector<u64> shape, float center, float spread) {
        u64 n = 1;
        for (u64 d : shape) n *= d;
        std::vector<uint8_t> b(n * 4);
        for (u64 i = 0; i < n; ++i) {
            const float v = center + spread * rng.uniform();
            std::memcpy(b.data() + 4 * i, &v, 4);
        }
        w.add_tensor(name, GgmlType::F32, std::move(shape), std::move(b));
    };
    matrix("token_embd.weight", e, n_vocab, type);
    fill("output_norm.weight", {u64(e)}, 1.0f, 0.0f);
    matrix("output.weight", e, n_vocab, type);
    for (int il = 0; il < o.layers + o.nextn; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (il >= o.layers) {  // an MTP block: an expert layer with its NextN input (the trunk's embedding and head)
            matrix(p + "nextn.eh_proj.weight", 2 * e, e, type);
            fill(p + "nextn.enorm.weight", {u64(e)}, 1.0f, 0.0f);
            fill(p + "nextn.hnorm.weight", {u64(e)}, 1.0f, 0.0f);
            fill(p + "nextn.shared_head_norm.weight", {u64(e)}, 1.0f, 0.0f);
        }
        fill(p + "attn_norm.weight", {u64(e)}, 1.0f, 0.0f);
        matrix(p + "attn_q.weight", e, n_head * (nope + rot), type);
        matrix(p + "attn_kv_a_mqa.weight", e, lora + rot, type);
        fill(p + "attn_kv_a_norm.weight", {u64(lora)}, 1.0f, 0.0f);
        stack(p + "attn_k_b.weight", nope, lora, n_head, GgmlType::Q8_0);
        stack(p + "attn_v_b.weight", lora, dv, n_head, GgmlType::Q8_0);
        matrix(p + "attn_output.weight", n_head * dv, e, type);
        fill(p + "ffn_norm.weight", {u64(e)}, 1.0f, 0.0f);
        if (il == 0) {
            matrix(p + "ffn_gate.weight", e, ff, type);
            matrix(p + "ffn_up.weight", e, ff, type);
            matrix(p + "ffn_down.weight", ff, e, fit(ff));
            continue;
        }
        fill(p + "ffn_gate_inp.weight", {u64(e), u64(n_exp)}, 0.0f, std::sqrt(3.0f / static_cast<float>(e)));
        stack(p + "ffn_gate_exps.weight", e, ff_exp, n_exp, type);
        stack(p + "ffn_up_exps.weight", e, ff_exp, n_exp, type);
        stack(p + "ffn_down_exps.weight", ff_exp, e, n_exp, fit(ff_exp));
        matrix(p + "ffn_gate_shexp.weight", e, ff_exp * n_shared, type);
        matrix(p + "ffn_up_shexp.weight", e, ff_exp * n_shared, type);
        matrix(p + "ffn_down_shexp.weight", ff_exp * n_shared, e, fit(ff_exp * n_shared));
    }
}

// gpt-oss-20b's shape (o.layers of its 24 layers): width 2880, 64 query / 8 KV
// heads of 64 with Q/K/V/O biases and learned attention sinks, even layers
// sliding (window 128) and odd ones full, YaRN x32 over 4096; every FFN 32
// experts of width 2880, 4 selected by a softmax over the selected, with router
// and expert biases. Types as the MXFP4 release ships them (289 f32, 98 Q8_0 and
// 72 MXFP4 tensors at 24 layers): the experts in `type` (MXFP4), every other
// matrix Q8_0, the router, biases, sinks and norms f32.
void write_gpt_oss(const Options& o, GgmlType type, gguf::Writer& w, int64_t n_vocab, Rng& rng) {
    using gguf::Value;
    gguf::Metadata& md = w.metadata();
    const std::string a = "gpt-oss.";
    const int64_t e = 2880, n_head = 64, n_kv = 8, hd = 64, ff = 2880, n_exp = 32;
    auto u32 = [](int64_t v) { return Value::u32(static_cast<uint32_t>(v)); };
    md.add(a + "block_count", u32(o.layers));
    md.add(a + "context_length", u32(131072));
    md.add(a + "embedding_length", u32(e));
    md.add(a + "feed_forward_length", u32(ff));
    md.add(a + "attention.head_count", u32(n_head));
    md.add(a + "attention.head_count_kv", u32(n_kv));
    md.add(a + "rope.freq_base", Value::f32(150000.0f));
    md.add(a + "attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    md.add(a + "expert_count", u32(n_exp));
    md.add(a + "expert_used_count", u32(4));
    md.add(a + "attention.key_length", u32(hd));
    md.add(a + "attention.value_length", u32(hd));
    md.add(a + "attention.sliding_window", u32(128));
    md.add(a + "expert_feed_forward_length", u32(ff));
    md.add(a + "rope.scaling.type", Value::string("yarn"));
    md.add(a + "rope.scaling.factor", Value::f32(32.0f));
    md.add(a + "rope.scaling.original_context_length", u32(4096));
    using u64 = uint64_t;
    const GgmlType dense = GgmlType::Q8_0;
    auto matrix = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        w.add_tensor(name, dense, {u64(n_in), u64(n_out)}, make_matrix(dense, n_in, n_out, rng));
    };
    auto stack = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        w.add_tensor(name, type, {u64(n_in), u64(n_out), u64(n_exp)}, make_matrix(type, n_in, n_out * n_exp, rng));
    };
    auto fill = [&](const std::string& name, std::vector<u64> shape, float center, float spread) {
        u64 n = 1;
        for (u64 d : shape) n *= d;
        std::vector<uint8_t> b(n * 4);
        for (u64 i = 0; i < n; ++i) {
            const float v = center + spread * rng.uniform();
            std::memcpy(b.data() + 4 * i, &v, 4);
        }
        w.add_tensor(name, GgmlType::F32, std::move(shape), std::move(b));
    };
    matrix("token_embd.weight", e, n_vocab);
    fill("output_norm.weight", {u64(e)}, 1.0f, 0.0f);
    matrix("output.weight", e, n_vocab);
    for (int il = 0; il < o.layers; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        fill(p + "attn_norm.weight", {u64(e)}, 1.0f, 0.0f);
        matrix(p + "attn_q.weight", e, n_head * hd);
        fill(p + "attn_q.bias", {u64(n_head * hd)}, 0.0f, 0.1f);
        matrix(p + "attn_k.weight", e, n_kv * hd);
        fill(p + "attn_k.bias", {u64(n_kv * hd)}, 0.0f, 0.1f);
        matrix(p + "attn_v.weight", e, n_kv * hd);
        fill(p + "attn_v.bias", {u64(n_kv * hd)}, 0.0f, 0.1f);
        matrix(p + "attn_output.weight", n_head * hd, e);
        fill(p + "attn_output.bias", {u64(e)}, 0.0f, 0.1f);
        fill(p + "attn_sinks.weight", {u64(n_head)}, 0.0f, 1.0f);
        fill(p + "post_attention_norm.weight", {u64(e)}, 1.0f, 0.0f);  // the pre-FFN norm, under this name
        fill(p + "ffn_gate_inp.weight", {u64(e), u64(n_exp)}, 0.0f, std::sqrt(3.0f / static_cast<float>(e)));
        fill(p + "ffn_gate_inp.bias", {u64(n_exp)}, 0.0f, 0.1f);
        stack(p + "ffn_gate_exps.weight", e, ff);
        fill(p + "ffn_gate_exps.bias", {u64(ff), u64(n_exp)}, 0.0f, 0.1f);
        stack(p + "ffn_up_exps.weight", e, ff);
        fill(p + "ffn_up_exps.bias", {u64(ff), u64(n_exp)}, 0.0f, 0.1f);
        stack(p + "ffn_down_exps.weight", ff, e);
        fill(p + "ffn_down_exps.bias", {u64(e), u64(n_exp)}, 0.0f, 0.1f);
    }
}

// Qwen 3.5 0.8B's shape (o.layers layers, every fourth full attention).
void write_qwen35(const Options& o, GgmlType type, gguf::Writer& w, int64_t n_vocab, Rng& rng) {
    using gguf::Value;
    gguf::Metadata& md = w.metadata();
    const std::string a = "qwen35.";
    const int64_t e = 1024, ff = 3584, n_head = 8, n_kv = 2, hd = 256, d = 128, nk = 16, nv = 16, d_conv = 4;
    const int64_t d_inner = nv * d, n_conv = d_inner + 2 * nk * d;
    md.add(a + "context_length", Value::u32(32768));
    md.add(a + "embedding_length", Value::u32(e));
    md.add(a + "block_count", Value::u32(static_cast<uint32_t>(o.layers)));
    md.add(a + "feed_forward_length", Value::u32(ff));
    md.add(a + "attention.head_count", Value::u32(n_head));
    md.add(a + "attention.head_count_kv", Value::u32(n_kv));
    md.add(a + "attention.key_length", Value::u32(hd));
    md.add(a + "attention.value_length", Value::u32(hd));
    md.add(a + "attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    md.add(a + "rope.freq_base", Value::f32(10000000.0f));
    md.add(a + "rope.dimension_count", Value::u32(64));
    md.add(a + "rope.dimension_sections", Value::array(gguf::ValueType::I32, {Value::i32(11), Value::i32(11), Value::i32(10), Value::i32(0)}));
    md.add(a + "full_attention_interval", Value::u32(4));
    md.add(a + "ssm.conv_kernel", Value::u32(d_conv));
    md.add(a + "ssm.inner_size", Value::u32(d_inner));
    md.add(a + "ssm.state_size", Value::u32(d));
    md.add(a + "ssm.time_step_rank", Value::u32(nv));
    md.add(a + "ssm.group_count", Value::u32(nk));
    auto matrix = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        w.add_tensor(name, type, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}, make_matrix(type, n_in, n_out, rng));
    };
    auto fill = [&](const std::string& name, std::vector<uint64_t> shape, float base, float spread) {
        uint64_t n = 1;
        for (uint64_t x : shape) n *= x;
        std::vector<uint8_t> b(n * 4);
        for (uint64_t i = 0; i < n; ++i) {
            const float v = base + spread * rng.uniform();
            std::memcpy(b.data() + 4 * i, &v, 4);
        }
        w.add_tensor(name, GgmlType::F32, std::move(shape), std::move(b));
    };
    using u64 = uint64_t;
    matrix("token_embd.weight", e, n_vocab);
    fill("output_norm.weight", {u64(e)}, 1.0f, 0.0f);
    for (int il = 0; il < o.layers; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        fill(p + "attn_norm.weight", {u64(e)}, 1.0f, 0.0f);
        if ((il + 1) % 4 == 0) {
            matrix(p + "attn_q.weight", e, 2 * n_head * hd);
            matrix(p + "attn_k.weight", e, n_kv * hd);
            matrix(p + "attn_v.weight", e, n_kv * hd);
            fill(p + "attn_q_norm.weight", {u64(hd)}, 1.0f, 0.0f);
            fill(p + "attn_k_norm.weight", {u64(hd)}, 1.0f, 0.0f);
            matrix(p + "attn_output.weight", n_head * hd, e);
        } else {
            matrix(p + "attn_qkv.weight", e, n_conv);
            matrix(p + "attn_gate.weight", e, d_inner);
            fill(p + "ssm_conv1d.weight", {u64(d_conv), u64(n_conv)}, 0.0f, 0.5f);
            fill(p + "ssm_dt.bias", {u64(nv)}, 0.0f, 0.5f);
            fill(p + "ssm_a", {u64(nv)}, -1.0f, 0.5f);
            matrix(p + "ssm_beta.weight", e, nv);
            matrix(p + "ssm_alpha.weight", e, nv);
            fill(p + "ssm_norm.weight", {u64(d)}, 1.0f, 0.0f);
            matrix(p + "ssm_out.weight", d_inner, e);
        }
        fill(p + "post_attention_norm.weight", {u64(e)}, 1.0f, 0.0f);
        matrix(p + "ffn_gate.weight", e, ff);
        matrix(p + "ffn_up.weight", e, ff);
        matrix(p + "ffn_down.weight", ff, e);
    }
}

int run(const Options& o) {
    const GgmlTypeInfo* info = find_ggml_type(o.type);
    const bool float16 = info && (info->type == GgmlType::F16 || info->type == GgmlType::BF16);
    if (!info || (!info->quantized && !float16) || !quant::can_dequantize(info->type)) throw Error("cannot write type '" + o.type + "'");
    const GgmlType type = info->type;
    const bool moe = o.arch == "qwen3moe";
    const bool own_writer = o.arch == "qwen35" || o.arch == "deepseek2" || o.arch == "gpt-oss";  // write_<arch> below
    if (!moe && o.arch != "llama" && !own_writer) throw Error("--arch: llama, qwen3moe, qwen35, deepseek2 or gpt-oss");
    if ((o.head_dim == 0 && o.embd % o.heads != 0) || o.heads % o.kv_heads != 0)
        throw Error("heads must divide the width and kv-heads the heads");
    gguf::Writer w;
    gguf::Metadata& md = w.metadata();
    using gguf::Value;
    const std::string a = o.arch + ".";
    const int hd = o.head_dim > 0 ? o.head_dim : o.embd / o.heads;
    md.add("general.architecture", Value::string(o.arch));
    md.add("general.name", Value::string("kiln bench " + o.arch + " " + o.type));
    if (!own_writer) {
        md.add(a + "context_length", Value::u32(static_cast<uint32_t>(o.ctx)));
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
    if (own_writer) {
        (o.arch == "qwen35" ? write_qwen35 : o.arch == "deepseek2" ? write_deepseek2 : write_gpt_oss)(o, type, w, n_vocab, rng);
        w.write(o.out);
        return 0;
    }
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
            else if (a == "--arch") o.arch = value();
            else if (a == "--layers") o.layers = std::stoi(value());
            else if (a == "--embd") o.embd = std::stoi(value());
            else if (a == "--ff") o.ff = std::stoi(value());
            else if (a == "--heads") o.heads = std::stoi(value());
            else if (a == "--kv-heads") o.kv_heads = std::stoi(value());
            else if (a == "--head-dim") o.head_dim = std::stoi(value());
            else if (a == "--experts") o.experts = std::stoi(value());
            else if (a == "--experts-used") o.experts_used = std::stoi(value());
            else if (a == "--ctx") o.ctx = std::stoi(value());
            else if (a == "--nextn") o.nextn = std::stoi(value());
            else throw Error("unknown option " + a);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "make_bench_model: %s\n", e.what());
            return 2;
        }
    }
    if (o.tokenizer.empty() || o.out.empty()) {
        std::fprintf(stderr, "usage: make_bench_model --type TYPE --tokenizer GGUF --out FILE [--layers N --embd N --ff N --heads N --kv-heads N --ctx N]\n"
                             "       [--arch qwen3moe --experts N --experts-used N --head-dim N]\n"
                             "       [--arch qwen35 | deepseek2 | gpt-oss --layers N]\n");
        return 2;
    }
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_bench_model: %s\n", e.what());
        return 1;
    }
}
