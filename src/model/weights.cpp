#include "model/weights.h"

#include <map>
#include <set>

#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

namespace {

std::string shape_text(const std::vector<uint64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

class Binder {
public:
    Binder(const gguf::File& file, ModelWeights& w) : file_(file), w_(w) {}

    const gguf::TensorInfo* find(const std::string& name) {
        const gguf::TensorInfo* t = file_.find_tensor(name);
        if (t) used_.insert(name);
        return t;
    }

    void check_shape(const gguf::TensorInfo& t, const std::vector<uint64_t>& shape) {
        std::vector<uint64_t> got = t.shape;
        while (got.size() > shape.size() && got.back() == 1) got.pop_back();
        if (got != shape)
            throw Error("tensor '" + t.name + "': expected shape " + shape_text(shape) + ", found " + t.shape_string());
    }

    // An f32 vector (norm weights, biases), converted at load if stored otherwise.
    const float* vector(const std::string& name, int64_t n, bool required) {
        const gguf::TensorInfo* t = find(name);
        if (!t) {
            if (required) throw Error("tensor '" + name + "' not found");
            return nullptr;
        }
        check_shape(*t, {static_cast<uint64_t>(n)});
        if (t->type == GgmlType::F32) return reinterpret_cast<const float*>(file_.tensor_data(*t));
        if (!quant::can_dequantize(t->type))
            throw Error("tensor '" + name + "': type " + std::string(ggml_type_name(t->type)) + " cannot be read",
                        ErrorKind::Unsupported);
        auto v = std::make_unique<std::vector<float>>(static_cast<size_t>(n));
        quant::dequantize_row(t->type, file_.tensor_data(*t), v->data(), n);
        const float* p = v->data();
        w_.converted_vectors.push_back(std::move(v));
        return p;
    }

    Matrix matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required) {
        const gguf::TensorInfo* t = find(name);
        if (!t) {
            if (required) throw Error("tensor '" + name + "' not found");
            return {};
        }
        check_shape(*t, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)});
        Matrix m;
        m.n_in = n_in;
        m.n_out = n_out;
        if (matmul_supports(t->type)) {
            m.type = t->type;
            m.data = file_.tensor_data(*t);
            m.row_bytes = ggml_row_bytes(t->type, static_cast<uint64_t>(n_in));
            return m;
        }
        // No dot product for this type: convert once at load, to Q8_0 (8.5 bits per
        // weight, close to every source format's precision) or f32 for odd row sizes.
        if (!quant::can_dequantize(t->type))
            throw Error("tensor '" + name + "': type " + std::string(ggml_type_name(t->type)) + " cannot be read",
                        ErrorKind::Unsupported);
        const GgmlType target = n_in % 32 == 0 ? GgmlType::Q8_0 : GgmlType::F32;
        const uint64_t src_row = ggml_row_bytes(t->type, static_cast<uint64_t>(n_in));
        m.type = target;
        m.row_bytes = ggml_row_bytes(target, static_cast<uint64_t>(n_in));
        auto bytes = std::make_unique<std::vector<uint8_t>>(static_cast<size_t>(m.row_bytes * static_cast<uint64_t>(n_out)));
        std::vector<float> row(static_cast<size_t>(n_in));
        const uint8_t* src = file_.tensor_data(*t);
        for (int64_t r = 0; r < n_out; ++r) {
            quant::dequantize_row(t->type, src + static_cast<uint64_t>(r) * src_row, row.data(), n_in);
            quant::quantize_row(target, row.data(), bytes->data() + static_cast<uint64_t>(r) * m.row_bytes, n_in);
        }
        m.data = bytes->data();
        w_.converted_matrices.push_back(std::move(bytes));
        converted_[std::string(ggml_type_name(t->type)) + " -> " + std::string(ggml_type_name(target))]++;
        return m;
    }

    // "3 tensors converted at load: IQ2_XXS -> Q8_0 (no dot product for IQ2_XXS)"
    std::vector<std::string> conversion_notes() const {
        std::vector<std::string> notes;
        for (const auto& [what, count] : converted_)
            notes.push_back(std::to_string(count) + " tensor" + (count > 1 ? "s" : "") + " converted at load: " + what +
                            " (kiln has no dot product for " + what.substr(0, what.find(' ')) + ")");
        return notes;
    }

    // The first tensor of the file that nothing bound, named, with how many more.
    void check_all_used(const std::string& arch) const {
        if (used_.size() == file_.tensors().size()) return;
        std::string first;
        size_t n = 0;
        for (const gguf::TensorInfo& t : file_.tensors())
            if (!used_.count(t.name) && n++ == 0) first = t.name;
        throw Error("tensor '" + first + "' is not used by architecture '" + arch + "'" +
                        (n > 1 ? " (nor are " + std::to_string(n - 1) + " more)" : "") +
                        " (llama.cpp's loader refuses such a file too)",
                    ErrorKind::Unsupported);
    }

private:
    const gguf::File& file_;
    ModelWeights& w_;
    std::set<std::string> used_;
    std::map<std::string, int> converted_;
};

}  // namespace

namespace {

bool allowed(TensorUse u) { return u != TensorUse::No; }
bool required(TensorUse u) { return u == TensorUse::Required; }

}  // namespace

ModelWeights bind_weights(const gguf::File& file, ModelSpec& s) {
    ModelWeights w;
    Binder b(file, w);
    const TensorRules& tr = s.tensors;
    const gguf::TensorInfo* embd = b.find("token_embd.weight");
    if (!embd) throw Error("tensor 'token_embd.weight' not found");
    if (s.n_vocab == 0) s.n_vocab = static_cast<int>(embd->ne(1));
    w.tok_embd = b.matrix("token_embd.weight", s.n_embd, s.n_vocab, true);
    w.output_norm = b.vector("output_norm.weight", s.n_embd, true);
    if (s.norm == NormKind::Layer) w.output_norm_b = b.vector("output_norm.bias", s.n_embd, false);
    if (allowed(tr.output)) w.output = b.matrix("output.weight", s.n_embd, s.n_vocab, required(tr.output));
    if (w.output.empty()) w.output = w.tok_embd;  // tied output head
    if (allowed(tr.output_bias)) w.output_b = b.vector("output.bias", s.n_vocab, required(tr.output_bias));
    if (s.rope.n_dims > 0 && allowed(tr.rope_freqs))
        w.rope_freqs = b.vector("rope_freqs.weight", s.rope.n_dims / 2, required(tr.rope_freqs));
    if (s.rope.n_dims > 0 && allowed(tr.rope_long_short)) {
        w.rope_long = b.vector("rope_factors_long.weight", s.rope.n_dims / 2, required(tr.rope_long_short));
        w.rope_short = b.vector("rope_factors_short.weight", s.rope.n_dims / 2, required(tr.rope_long_short));
    }

    const int64_t e = s.n_embd, dk = s.head_dim_k, dv = s.head_dim_v;
    bool any_q_norm = false, any_post_attn = false, any_post_ffn = false;
    // A matrix's optional `.scale` (a weight scale, applied to its output) and
    // `.input_scale`: llama.cpp 0.3.36 loads input scales for every matrix but no
    // graph of a dense family multiplies by them, so they are bound and not read.
    auto scales = [&](const std::string& base, const Matrix& m, float& scale, bool applied = true) {
        if (m.empty()) return;
        if (!applied && file.find_tensor(base + ".scale"))
            throw Error("tensor '" + base + ".scale': llama.cpp's " + s.arch +
                            " graph loads this weight scale but never applies it; kiln refuses the file rather than ignore it",
                        ErrorKind::Unsupported);
        if (const float* v = b.vector(base + ".scale", 1, false)) scale = v[0];
        b.vector(base + ".input_scale", 1, false);
    };
    for (int il = 0; il < s.n_layer; ++il) {
        LayerSpec& l = s.layers[static_cast<size_t>(il)];
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights lw;
        if (b.find(p + "ffn_gate_inp.weight"))
            throw Error("tensor '" + p + "ffn_gate_inp.weight': mixture-of-experts layers are not supported yet",
                        ErrorKind::Unsupported);
        if (tr.pre_norms) lw.attn_norm = b.vector(p + "attn_norm.weight", e, true);
        if (s.norm == NormKind::Layer) lw.attn_norm_b = b.vector(p + "attn_norm.bias", e, false);
        const int64_t nq = l.n_head * dk, nk = l.n_head_kv * dk, nv = l.n_head_kv * dv;
        // Q, K and V fused in one matrix where the file has it (every family, as
        // llama.cpp's loader), with a fused bias or separate ones.
        lw.wqkv = b.matrix(p + "attn_qkv.weight", e, nq + nk + nv, false);
        if (!lw.wqkv.empty()) {
            lw.bqkv = b.vector(p + "attn_qkv.bias", nq + nk + nv, false);
            scales(p + "attn_qkv", lw.wqkv, lw.wqkv_s);
        } else {
            lw.wq = b.matrix(p + "attn_q.weight", e, nq, true);
            lw.wk = b.matrix(p + "attn_k.weight", e, nk, true);
            lw.wv = b.matrix(p + "attn_v.weight", e, nv, true);
            scales(p + "attn_q", lw.wq, lw.wq_s);
            scales(p + "attn_k", lw.wk, lw.wk_s);
            scales(p + "attn_v", lw.wv, lw.wv_s);
        }
        if (!lw.bqkv) {
            // llama.cpp adds separate biases to a fused product only when all three exist.
            lw.bq = b.vector(p + "attn_q.bias", nq, false);
            lw.bk = b.vector(p + "attn_k.bias", nk, false);
            lw.bv = b.vector(p + "attn_v.bias", nv, false);
            const int n_separate = (lw.bq != nullptr) + (lw.bk != nullptr) + (lw.bv != nullptr);
            if (!lw.wqkv.empty() && n_separate > 0 && n_separate < 3) {
                for (const char* t : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
                    if (!file.find_tensor(p + t))
                        throw Error("tensor '" + p + t + "' not found (a fused attn_qkv takes all three separate biases or none)");
            }
        }
        lw.wo = b.matrix(p + "attn_output.weight", l.n_head * dv, e, true);
        scales(p + "attn_output", lw.wo, lw.wo_s);
        if (allowed(tr.attn_out_bias)) lw.bo = b.vector(p + "attn_output.bias", e, required(tr.attn_out_bias));
        if (allowed(tr.qk_norm)) {
            lw.q_norm = b.vector(p + "attn_q_norm.weight", tr.qk_norm_full ? nq : dk, required(tr.qk_norm));
            lw.k_norm = b.vector(p + "attn_k_norm.weight", tr.qk_norm_full ? nk : dk, required(tr.qk_norm) || lw.q_norm);
        }
        any_q_norm |= lw.q_norm != nullptr;
        if (allowed(tr.post_norms)) lw.attn_post_norm = b.vector(p + "post_attention_norm.weight", e, required(tr.post_norms));
        any_post_attn |= lw.attn_post_norm != nullptr;
        if (tr.pre_norms) lw.ffn_norm = b.vector(p + "ffn_norm.weight", e, true);
        if (s.norm == NormKind::Layer) lw.ffn_norm_b = b.vector(p + "ffn_norm.bias", e, false);
        // The FFN's kind from the file: gated when it has a gate projection.
        if (tr.ffn_gate_up_fused) {
            lw.ffn_up = b.matrix(p + "ffn_up.weight", e, 2 * static_cast<int64_t>(l.n_ff), true);
            lw.ffn_gate_up_fused = true;
            l.ffn = FfnKind::Gated;
        } else {
            lw.ffn_gate = b.matrix(p + "ffn_gate.weight", e, l.n_ff, false);
            l.ffn = lw.ffn_gate.empty() ? FfnKind::Plain : FfnKind::Gated;
            lw.ffn_up = b.matrix(p + "ffn_up.weight", e, l.n_ff, true);
        }
        lw.ffn_down = b.matrix(p + "ffn_down.weight", l.n_ff, e, true);
        const bool ffn_scaled = allowed(tr.ffn_scales);
        scales(p + "ffn_gate", lw.ffn_gate, lw.ffn_gate_s, ffn_scaled);
        scales(p + "ffn_up", lw.ffn_up, lw.ffn_up_s, ffn_scaled);
        scales(p + "ffn_down", lw.ffn_down, lw.ffn_down_s, ffn_scaled);
        if (allowed(tr.ffn_bias)) {
            if (!lw.ffn_gate.empty()) lw.ffn_gate_b = b.vector(p + "ffn_gate.bias", l.n_ff, required(tr.ffn_bias));
            lw.ffn_up_b = b.vector(p + "ffn_up.bias", l.n_ff, required(tr.ffn_bias));
            lw.ffn_down_b = b.vector(p + "ffn_down.bias", e, required(tr.ffn_bias));
        }
        if (allowed(tr.post_norms)) lw.ffn_post_norm = b.vector(p + "post_ffw_norm.weight", e, required(tr.post_norms));
        any_post_ffn |= lw.ffn_post_norm != nullptr;
        w.layers.push_back(lw);
    }
    // Optional tensors must be present in every layer or none.
    for (int il = 0; il < s.n_layer; ++il) {
        const LayerWeights& lw = w.layers[static_cast<size_t>(il)];
        const std::string p = "blk." + std::to_string(il) + ".";
        if (any_q_norm && !lw.q_norm) throw Error("tensor '" + p + "attn_q_norm.weight' not found (other layers have it)");
        if (any_post_attn && !lw.attn_post_norm)
            throw Error("tensor '" + p + "post_attention_norm.weight' not found (other layers have it)");
        if (any_post_ffn && !lw.ffn_post_norm) throw Error("tensor '" + p + "post_ffw_norm.weight' not found (other layers have it)");
    }
    b.check_all_used(s.arch);
    w.conversion_notes = b.conversion_notes();
    // Matrices the kernels take in a repacked layout are repacked now, once
    // (compute/matmul.h); the embedding stays as it is for row lookups (the tied
    // output head gets its own packed copy).
    std::vector<Matrix*> products = {&w.output};
    for (LayerWeights& lw : w.layers)
        for (Matrix* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wqkv, &lw.wo, &lw.ffn_gate, &lw.ffn_up, &lw.ffn_down})
            if (!m->empty()) products.push_back(m);
    // Every matrix here is bound in place from the file's read-only mapping.
    w.packed_bytes = prepare_matrices(products, /*release_file_pages=*/true);
    return w;
}

}  // namespace kiln
