#include "model/weights.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "compute/kernels/packing.h"
#include "kiln/error.h"
#include "kiln/quant.h"
#include "model/tensor_source.h"

namespace kiln {

namespace {

std::string shape_text(const std::vector<uint64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

class Binder : public TensorSource {
public:
    // plan_only: shapes and types are checked, nothing is converted (the memory plan).
    Binder(const gguf::File& file, ModelWeights& w, bool plan_only) : file_(file), w_(w), plan_only_(plan_only) {}

    bool has(const std::string& name) const override { return file_.find_tensor(name) != nullptr; }

    const gguf::TensorInfo* find(const std::string& name) {
        const gguf::TensorInfo* t = file_.find_tensor(name);
        if (t) used_.insert(name);
        return t;
    }

    void check_shape(const gguf::TensorInfo& t, const std::vector<uint64_t>& shape) {
        std::vector<uint64_t> got = t.shape, want = shape;
        while (got.size() > 1 && got.back() == 1) got.pop_back();
        while (want.size() > 1 && want.back() == 1) want.pop_back();
        if (got != want)
            throw Error("tensor '" + t.name + "': expected shape " + shape_text(shape) + ", found " + t.shape_string());
    }

    // An f32 vector (norm weights, biases), converted at load if stored otherwise.
    const float* vector(const std::string& name, int64_t n, bool required) {
        return floats(name, {static_cast<uint64_t>(n)}, required);
    }
    // The same for an f32 table [n, m] (per-expert biases), rows contiguous.
    const float* vector(const std::string& name, int64_t n0, int64_t m, bool required) {
        return floats(name, {static_cast<uint64_t>(n0), static_cast<uint64_t>(m)}, required);
    }

    const float* floats(const std::string& name, const std::vector<uint64_t>& shape, bool required) override {
        const gguf::TensorInfo* t = find(name);
        if (!t) {
            if (required) throw Error("tensor '" + name + "' not found");
            return nullptr;
        }
        std::vector<uint64_t> want = shape;  // [n, 1] may be stored as [n]
        while (want.size() > 1 && want.back() == 1) want.pop_back();
        check_shape(*t, want);
        int64_t n = 1;
        for (uint64_t d : shape) n *= static_cast<int64_t>(d);
        // Copied out of the mapping even when stored as f32: a vector read in place
        // lies between matrices whose pages are released after repacking, and a
        // fault on its page maps the fault-around window or the whole large folio
        // of the page cache around it, re-mapping those neighbours for good.
        owned_names_.insert(name);
        if (t->type == GgmlType::F32) {
            w_.vector_bytes += static_cast<uint64_t>(n) * sizeof(float);
        } else {
            if (!quant::can_dequantize(t->type))
                throw Error("tensor '" + name + "': type " + std::string(ggml_type_name(t->type)) + " cannot be read",
                            ErrorKind::Unsupported);
            w_.converted_bytes += static_cast<uint64_t>(n) * sizeof(float);
        }
        if (plan_only_) return reinterpret_cast<const float*>(t);  // present; never read
        auto v = std::make_unique<std::vector<float>>(static_cast<size_t>(n));
        if (t->type == GgmlType::F32)
            std::memcpy(v->data(), file_.tensor_data(*t), static_cast<size_t>(n) * sizeof(float));
        else
            quant::dequantize_row(t->type, file_.tensor_data(*t), v->data(), n);
        const float* p = v->data();
        w_.converted_vectors.push_back(std::move(v));
        return p;
    }

    Matrix matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required) override {
        const gguf::TensorInfo* t = find(name);
        if (!t) {
            if (required) throw Error("tensor '" + name + "' not found");
            return {};
        }
        check_shape(*t, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)});
        return view(*t, file_.tensor_data(*t), n_in, n_out);
    }

    // A table read by row lookups (an embedding): a matrix whose rows, where they
    // are the file's own, are read with pread (Matrix::rows_fd), never mapped.
    Matrix lookup_table(const std::string& name, int64_t n_in, int64_t n_out, bool required) {
        Matrix m = matrix(name, n_in, n_out, required);
        if (m.empty() || converted(name)) return m;
        w_.lookup_table_bytes += m.row_bytes * static_cast<uint64_t>(m.n_out);
        if (plan_only_) return m;
        const gguf::File::FileLocation at = file_.tensor_location(*find(name));
        m.rows_fd = at.fd;
        m.rows_fd_offset = at.offset;
        return m;
    }

    // A merged expert tensor [n_in, n_out, n_expert] as one matrix per expert
    // (or per head: attn_k_b / attn_v_b); n_out 0: taken from the tensor (an
    // expert's hidden width).
    std::vector<Matrix> experts(const std::string& name, int64_t n_in, int64_t& n_out, int64_t n_expert) {
        const gguf::TensorInfo* t = find(name);
        if (!t) throw Error("tensor '" + name + "' not found");
        if (n_out == 0 && t->shape.size() >= 2) n_out = static_cast<int64_t>(t->shape[1]);
        check_shape(*t, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out), static_cast<uint64_t>(n_expert)});
        const uint64_t bytes = ggml_row_bytes(t->type, static_cast<uint64_t>(n_in)) * static_cast<uint64_t>(n_out);
        std::vector<Matrix> out;
        for (int64_t x = 0; x < n_expert; ++x) out.push_back(view(*t, file_.tensor_data(*t) + static_cast<uint64_t>(x) * bytes, n_in, n_out));
        return out;
    }

    // The rows at `data` (n_out rows of tensor t's type) as a Matrix the matmul takes.
    Matrix view(const gguf::TensorInfo& t0, const uint8_t* data, int64_t n_in, int64_t n_out) {
        const gguf::TensorInfo* t = &t0;
        const std::string& name = t->name;
        Matrix m;
        m.n_in = n_in;
        m.n_out = n_out;
        if (matmul_supports(t->type)) {
            m.type = t->type;
            m.data = data;
            m.row_bytes = ggml_row_bytes(t->type, static_cast<uint64_t>(n_in));
            sources_[m.data] = {t->type, m.row_bytes * static_cast<uint64_t>(n_out)};  // this view's rows (one expert of a 3-D tensor)
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
        converted_names_.insert(name);
        converted_[std::string(ggml_type_name(t->type)) + " -> " + std::string(ggml_type_name(target))]++;
        w_.converted_bytes += m.row_bytes * static_cast<uint64_t>(n_out);
        if (plan_only_) {
            m.data = reinterpret_cast<const uint8_t*>(t);  // an identity for the plan; never read
            return m;
        }
        auto bytes = std::make_unique<std::vector<uint8_t>>(static_cast<size_t>(m.row_bytes * static_cast<uint64_t>(n_out)));
        std::vector<float> row(static_cast<size_t>(n_in));
        const uint8_t* src = data;
        for (int64_t r = 0; r < n_out; ++r) {
            quant::dequantize_row(t->type, src + static_cast<uint64_t>(r) * src_row, row.data(), n_in);
            quant::quantize_row(target, row.data(), bytes->data() + static_cast<uint64_t>(r) * m.row_bytes, n_in);
        }
        m.data = bytes->data();
        sources_[m.data] = {t->type, ggml_row_bytes(t->type, static_cast<uint64_t>(n_in)) * static_cast<uint64_t>(n_out)};
        w_.converted_matrices.push_back(std::move(bytes));
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

    // Whether a tensor belongs to a multi-token-prediction layer after the first
    // (blk.N. with N past the trunk's first NextN block), which kiln leaves unread.
    static bool in_nextn_layer(const std::string& name, const ModelSpec& s, bool head_bound) {
        if (s.n_layer_nextn == 0 || name.rfind("blk.", 0) != 0) return false;
        const size_t dot = name.find('.', 4);
        if (dot == std::string::npos || dot == 4 || dot > 12) return false;
        int il = 0;
        for (size_t i = 4; i < dot; ++i) {
            if (name[i] < '0' || name[i] > '9') return false;
            il = il * 10 + (name[i] - '0');
        }
        return il >= s.n_layer + (head_bound ? 1 : 0) && il < s.n_layer + s.n_layer_nextn;
    }

    // The first tensor of the file that nothing bound, named, with how many more;
    // the further MTP layers' tensors are left out, counted in a note.
    void check_all_used(const ModelSpec& s, bool head_bound, std::vector<std::string>& notes) const {
        const std::string& arch = s.arch;
        std::string first;
        size_t n = 0, n_mtp = 0;
        uint64_t mtp_bytes = 0;
        for (const gguf::TensorInfo& t : file_.tensors()) {
            if (used_.count(t.name)) continue;
            if (in_nextn_layer(t.name, s, head_bound)) {
                ++n_mtp;
                mtp_bytes += t.bytes;
            } else if (n++ == 0) {
                first = t.name;
            }
        }
        if (n_mtp > 0) {
            char mib[32];
            std::snprintf(mib, sizeof mib, "%.2f MiB", static_cast<double>(mtp_bytes) / (1024.0 * 1024.0));
            // "1 multi-token-prediction layer from blk.46 (17 tensors, 5.4 MiB) left unread: ..."
            if (head_bound) {
                const int n_more = s.n_layer_nextn - 1;
                notes.push_back(std::to_string(n_more) + " more multi-token-prediction layer" + (n_more > 1 ? "s" : "") +
                                " from blk." + std::to_string(s.n_layer + 1) + " (" + std::to_string(n_mtp) + " tensors, " + mib +
                                ") left unread: kiln drafts with blk." + std::to_string(s.n_layer) + "'s alone");
            } else {
                notes.push_back(std::to_string(s.n_layer_nextn) + " multi-token-prediction layer" + (s.n_layer_nextn > 1 ? "s" : "") +
                                " from blk." + std::to_string(s.n_layer) + " (" + std::to_string(n_mtp) + " tensors, " + mib +
                                ") left unread: kiln runs the " + std::to_string(s.n_layer) + " trunk layers (" +
                                (s.tensors.nextn_head ? "no blk." + std::to_string(s.n_layer) + ".nextn.eh_proj: no MTP drafting"
                                                      : "no MTP drafting for " + s.arch) +
                                ")");
            }
        }
        if (n == 0) return;
        throw Error("tensor '" + first + "' is not used by architecture '" + arch + "'" +
                        (n > 1 ? " (nor are " + std::to_string(n - 1) + " more)" : "") +
                        " (llama.cpp's loader refuses such a file too)",
                    ErrorKind::Unsupported);
    }

    bool converted(const std::string& name) const { return converted_names_.count(name) > 0; }
    // Bytes of the tensors bound in place from the mapping (read where used;
    // vectors are copied out).
    uint64_t mapped_bytes() const {
        uint64_t n = 0;
        for (const std::string& name : used_)
            if (!converted(name) && !owned_names_.count(name)) n += file_.find_tensor(name)->bytes;
        return n;
    }

    // Where the matrices' bytes are after load, per type of the file (after
    // repacking): "matrices in memory: Q3_K 1.50 MiB in the file -> 1.55 MiB
    // repacked, Q8_0 3.00 MiB -> 3.00 MiB in place; 4.50 MiB -> 4.55 MiB". Sets
    // the totals in w.
    std::string residency_note(std::span<const Matrix* const> ms) {
        struct Use {
            uint64_t file = 0, resident = 0;
            std::set<std::string> how;
        };
        std::map<std::string, Use> by_type;
        std::map<const uint8_t*, const Matrix*> unique;  // a tied head shares the embedding's bytes: count them once, packed if so
        for (const Matrix* m : ms)
            if (!m->empty() && (!unique.contains(m->data) || m->packed)) unique[m->data] = m;
        for (const auto& [data, m] : unique) {
            const Source& src = sources_.at(data);
            Use& u = by_type[std::string(ggml_type_name(src.type))];
            u.file += src.bytes;
            const uint64_t in_place = m->row_bytes * static_cast<uint64_t>(m->n_out);
            u.resident += m->packed ? m->packed->bytes() : in_place;
            if (m->type != src.type) u.how.insert("converted to " + std::string(ggml_type_name(m->type)));
            u.how.insert(m->packed ? "repacked" : "in place");
            w_.matrix_file_bytes += src.bytes;
            w_.matrix_resident_bytes += m->packed ? m->packed->bytes() : in_place;
        }
        auto mib = [](uint64_t b) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
            return std::string(buf);
        };
        std::string out = "matrices in memory:";
        bool first = true;
        for (const auto& [type, u] : by_type) {
            out += std::string(first ? " " : ", ") + type + " " + mib(u.file) + (first ? " in the file" : "") + " -> " + mib(u.resident);
            for (const std::string& h : u.how) out += " " + h;
            first = false;
        }
        return out + "; " + mib(w_.matrix_file_bytes) + " -> " + mib(w_.matrix_resident_bytes);
    }

private:
    struct Source {
        GgmlType type;
        uint64_t bytes;  // in the file
    };
    std::map<const uint8_t*, Source> sources_;  // per bound matrix's data (the file's bytes or the converted copy)
    const gguf::File& file_;
    ModelWeights& w_;
    std::set<std::string> used_;
    std::map<std::string, int> converted_;
    std::set<std::string> converted_names_;
    std::set<std::string> owned_names_;  // vectors copied (or converted) out of the mapping
    bool plan_only_ = false;
};

bool allowed(TensorUse u) { return u != TensorUse::No; }
bool required(TensorUse u) { return u == TensorUse::Required; }

// An expert layer: the router, the merged expert tensors (their hidden width from
// the tensors), optional biases and the optional shared expert with its optional gate.
void bind_expert_layer(Binder& b, ModelSpec& s, const std::string& p, LayerSpec& l, ExpertWeights& x) {
    const MoeSpec& m = s.moe;
    if (m.n_expert <= 0)
        throw Error("tensor '" + p + "ffn_gate_inp.weight': an expert layer, but the file has no '" + s.arch + ".expert_count'");
    const TensorRules& tr = s.tensors;
    const int64_t e = s.n_embd, n = m.n_expert;
    l.ffn = FfnKind::Experts;
    x.router = b.matrix(p + "ffn_gate_inp.weight", e, n, true);
    const bool biased = allowed(tr.expert_bias), need_bias = required(tr.expert_bias);
    if (biased) x.router_b = b.vector(p + "ffn_gate_inp.bias", n, need_bias);
    if (allowed(tr.expert_probs_bias)) x.probs_bias = b.vector(p + "exp_probs_b.bias", n, required(tr.expert_probs_bias));
    if (b.find(p + "ffn_gate_up_exps.weight"))
        throw Error("tensor '" + p + "ffn_gate_up_exps.weight': merged gate / up experts are not supported yet (kiln reads "
                    "ffn_gate_exps and ffn_up_exps)",
                    ErrorKind::Unsupported);
    int64_t ff = 0;
    x.up = b.experts(p + "ffn_up_exps.weight", e, ff, n);
    if (!m.ungated) x.gate = b.experts(p + "ffn_gate_exps.weight", e, ff, n);
    int64_t out = e;
    x.down = b.experts(p + "ffn_down_exps.weight", ff, out, n);
    l.n_ff = static_cast<int>(ff);
    if (biased) {
        x.up_b = b.vector(p + "ffn_up_exps.bias", ff, n, need_bias);
        if (!m.ungated) x.gate_b = b.vector(p + "ffn_gate_exps.bias", ff, n, need_bias);
        x.down_b = b.vector(p + "ffn_down_exps.bias", e, n, need_bias);
    }
    if (!allowed(tr.shared_expert)) return;
    if (required(tr.shared_expert) && !b.find(p + "ffn_up_shexp.weight"))
        throw Error("tensor '" + p + "ffn_up_shexp.weight' not found (architecture '" + s.arch + "' has a shared expert)");
    if (const gguf::TensorInfo* t = b.find(p + "ffn_up_shexp.weight")) {
        const int64_t sff = t->shape.size() >= 2 ? static_cast<int64_t>(t->shape[1]) : 0;
        x.shexp_up = b.matrix(p + "ffn_up_shexp.weight", e, sff, true);
        if (!m.ungated) x.shexp_gate = b.matrix(p + "ffn_gate_shexp.weight", e, sff, true);
        x.shexp_down = b.matrix(p + "ffn_down_shexp.weight", sff, e, true);
        if (allowed(tr.shared_expert_gate))
            x.shexp_router = b.matrix(p + "ffn_gate_inp_shexp.weight", e, 1, required(tr.shared_expert_gate));
        l.n_ff_shexp = static_cast<int>(sff);
    }
}

// The optional classification head of rank pooling: cls (+ bias), then
// cls.output (+ bias) with one row per label (a Qwen3 reranker's are its
// lm_head rows of "yes" and "no"), each by presence as llama.cpp loads them.
void bind_classifier(Binder& b, ModelSpec& s, ModelWeights& w) {
    const int64_t e = s.n_embd;
    // jina-bert-v2 (jina-reranker-v1) scores with cls [n_embd, 1] (+ bias) through
    // tanh and nothing after it; llama.cpp reads no cls.output for that family.
    if (s.arch == "jina-bert-v2") {
        w.cls = b.matrix("cls.weight", e, 1, false);
        if (!w.cls.empty()) {
            w.cls_b = b.vector("cls.bias", 1, false);
            s.n_cls_out = 1;
        }
        return;
    }
    w.cls = b.matrix("cls.weight", e, e, false);
    // modern-bert's head has no cls bias and a LayerNorm weight after its GELU.
    if (!w.cls.empty() && s.arch != "modern-bert") w.cls_b = b.vector("cls.bias", e, false);
    if (!w.cls.empty() && s.arch == "modern-bert") w.cls_norm = b.vector("cls.norm.weight", e, false);
    if (const gguf::TensorInfo* t = b.find("cls.output.weight")) {
        s.n_cls_out = t->shape.size() >= 2 ? static_cast<int>(t->shape[1]) : 1;
        w.cls_out = b.matrix("cls.output.weight", e, s.n_cls_out, true);
        w.cls_out_b = b.vector("cls.output.bias", s.n_cls_out, false);
    }
}

// The Dense projections after pooling (gemma-embedding files converted with
// their sentence-transformers modules), shaped by the file's feature keys as
// llama.cpp creates them; the embedding that comes out is n_embd wide.
void bind_dense_out(Binder& b, const ModelSpec& s, ModelWeights& w) {
    const int64_t e = s.n_embd;
    const std::string k2 = s.arch + ".dense_2_feat_out", k3 = s.arch + ".dense_3_feat_in";
    if (b.find("dense_2.weight") && s.dense_2_out == 0)
        throw Error("tensor 'dense_2.weight': the file has no '" + k2 + "' to shape it");
    if (b.find("dense_3.weight") && s.dense_3_in == 0)
        throw Error("tensor 'dense_3.weight': the file has no '" + k3 + "' to shape it");
    if (s.dense_2_out > 0) w.dense_2 = b.matrix("dense_2.weight", e, s.dense_2_out, false);
    if (s.dense_3_in > 0) w.dense_3 = b.matrix("dense_3.weight", s.dense_3_in, e, false);
    const int64_t width = w.dense_2.empty() ? e : s.dense_2_out;
    if (!w.dense_3.empty() && width != s.dense_3_in)
        throw Error("tensor 'dense_3.weight': takes " + std::to_string(s.dense_3_in) + " features, dense_2 gives " +
                    std::to_string(width) + " ('" + k2 + "', '" + k3 + "')");
    if (w.dense_3.empty() && width != e)
        throw Error("tensor 'dense_2.weight': " + std::to_string(width) + " features out without a dense_3 back to the " +
                        std::to_string(e) + " of the embedding are not supported",
                    ErrorKind::Unsupported);
}

// An encoder's input rows (positions, token types) and their norm, and the
// optional classification head of rank pooling (ModelSpec::post_norm).
void bind_encoder_inputs(Binder& b, ModelSpec& s, ModelWeights& w) {
    const int64_t e = s.n_embd;
    if (allowed(s.tensors.position_embd))
        w.pos_embd = b.matrix("position_embd.weight", e, s.n_ctx_train, required(s.tensors.position_embd));
    if (s.n_token_types > 0) w.type_embd = b.matrix("token_types.weight", e, s.n_token_types, false);
    w.tok_embd_norm = b.vector("token_embd_norm.weight", e, true);
    w.tok_embd_norm_b = b.vector("token_embd_norm.bias", e, true);
    bind_classifier(b, s, w);
}

// A latent attention layer (ModelSpec::mla): Q (attn_q, or attn_q_a → norm →
// attn_q_b), the compressed KV with the shared rotated key part (attn_kv_a_mqa)
// and its norm, attn_k_b / attn_v_b viewed per head, the output projection.
void bind_mla_layer(Binder& b, const ModelSpec& s, const std::string& p, const LayerSpec& l, LayerWeights& lw) {
    const MlaSpec& m = s.mla;
    MlaWeights& w = lw.mla;
    const int64_t e = s.n_embd, nq = static_cast<int64_t>(l.n_head) * m.head_dim_qk;
    if (m.q_lora_rank > 0) {
        w.wq_a = b.matrix(p + "attn_q_a.weight", e, m.q_lora_rank, true);
        w.q_a_norm = b.vector(p + "attn_q_a_norm.weight", m.q_lora_rank, true);
        w.wq_b = b.matrix(p + "attn_q_b.weight", m.q_lora_rank, nq, true);
    } else {
        lw.wq = b.matrix(p + "attn_q.weight", e, nq, true);
    }
    w.wkv_a = b.matrix(p + "attn_kv_a_mqa.weight", e, m.kv_lora_rank + s.rope.n_dims, true);
    w.kv_a_norm = b.vector(p + "attn_kv_a_norm.weight", m.kv_lora_rank, true);
    int64_t lora = m.kv_lora_rank, dv = m.head_dim_v;
    w.k_b = b.experts(p + "attn_k_b.weight", m.head_dim_qk - s.rope.n_dims, lora, l.n_head);
    w.v_b = b.experts(p + "attn_v_b.weight", m.kv_lora_rank, dv, l.n_head);
    lw.wo = b.matrix(p + "attn_output.weight", static_cast<int64_t>(l.n_head) * m.head_dim_v, e, true);
}

// An encoder layer past its Q/K/V (bound as every family's): the output
// projection, then the FFN (plain, or gated where the family has ffn_gate),
// each followed by the residual add and a LayerNorm.
void bind_encoder_layer(Binder& b, ModelSpec& s, int il, const std::string& p, LayerSpec& l, LayerWeights& lw) {
    const TensorRules& tr = s.tensors;
    const int64_t e = s.n_embd;
    lw.wo = b.matrix(p + "attn_output.weight", l.n_head * s.head_dim_v, e, true);
    if (allowed(tr.attn_out_bias)) lw.bo = b.vector(p + "attn_output.bias", e, required(tr.attn_out_bias));
    lw.attn_out_norm = b.vector(p + "attn_output_norm.weight", e, true);
    lw.attn_out_norm_b = b.vector(p + "attn_output_norm.bias", e, true);
    if (allowed(tr.attn_norm_2)) {
        lw.attn_norm_2 = b.vector(p + "attn_norm_2.weight", e, required(tr.attn_norm_2));
        if (lw.attn_norm_2) lw.attn_norm_2_b = b.vector(p + "attn_norm_2.bias", e, true);
    }
    if (tr.qk_norm != TensorUse::No) {
        // LayerNorms over the whole Q / K projections, each with its bias.
        const int64_t nq = l.n_head * s.head_dim_k, nk = l.n_head_kv * s.head_dim_k;
        lw.q_norm = b.vector(p + "attn_q_norm.weight", nq, required(tr.qk_norm));
        if (lw.q_norm) {  // both or neither (a lone attn_k_norm is then an unused tensor)
            lw.q_norm_b = b.vector(p + "attn_q_norm.bias", nq, true);
            lw.k_norm = b.vector(p + "attn_k_norm.weight", nk, true);
            lw.k_norm_b = b.vector(p + "attn_k_norm.bias", nk, true);
        }
    }
    // nomic-bert-moe: an expert FFN on the layers its schedule names, no dense one there.
    if (allowed(tr.experts) && s.moe.every_n_layers > 0 && il % s.moe.every_n_layers == 1) {
        bind_expert_layer(b, s, p, l, lw.moe);
        lw.layer_out_norm = b.vector(p + "layer_output_norm.weight", e, true);
        lw.layer_out_norm_b = b.vector(p + "layer_output_norm.bias", e, true);
        return;
    }
    if (allowed(tr.encoder_ffn_gate)) lw.ffn_gate = b.matrix(p + "ffn_gate.weight", e, l.n_ff, required(tr.encoder_ffn_gate));
    l.ffn = lw.ffn_gate.empty() ? FfnKind::Plain : FfnKind::Gated;
    // Gate and up in one ffn_up of twice the width, where the family allows it (GEGLU).
    const gguf::TensorInfo* up = b.find(p + "ffn_up.weight");
    const int64_t n_up = tr.encoder_ffn_up_gate && lw.ffn_gate.empty() && up && up->shape.size() >= 2 &&
                                 static_cast<int64_t>(up->shape[1]) == 2 * static_cast<int64_t>(l.n_ff)
                             ? 2 * static_cast<int64_t>(l.n_ff)
                             : l.n_ff;
    if (n_up != l.n_ff) {
        lw.ffn_gate_up_fused = true;
        l.ffn = FfnKind::Gated;
        s.fused_gate_up = true;
    }
    lw.ffn_up = b.matrix(p + "ffn_up.weight", e, n_up, true);
    lw.ffn_down = b.matrix(p + "ffn_down.weight", l.n_ff, e, true);
    if (allowed(tr.ffn_bias)) {
        lw.ffn_up_b = b.vector(p + "ffn_up.bias", n_up, required(tr.ffn_bias));
        lw.ffn_down_b = b.vector(p + "ffn_down.bias", e, required(tr.ffn_bias));
    }
    lw.layer_out_norm = b.vector(p + "layer_output_norm.weight", e, true);
    lw.layer_out_norm_b = b.vector(p + "layer_output_norm.bias", e, true);
}

// The memory the system could give now without swapping (MemAvailable counts the
// page cache it can reclaim; engine/memory_plan.cpp reads the same for the plan);
// unset where unknown.
std::optional<uint64_t> memory_available_now() {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return std::nullopt;
    char line[256];
    std::optional<uint64_t> out;
    unsigned long long kib = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
            out = static_cast<uint64_t>(kib) * 1024;
            break;
        }
    std::fclose(f);
    return out;
}

}  // namespace

ModelWeights bind_weights(const gguf::File& file, ModelSpec& s, bool plan_only, std::optional<uint64_t> expert_budget) {
    ModelWeights w;
    Binder b(file, w, plan_only);
    const TensorRules& tr = s.tensors;
    const gguf::TensorInfo* embd = b.find("token_embd.weight");
    if (!embd) throw Error("tensor 'token_embd.weight' not found");
    if (s.n_vocab == 0) s.n_vocab = static_cast<int>(embd->ne(1));
    w.tok_embd = b.lookup_table("token_embd.weight", s.n_embd, s.n_vocab, true);
    if (s.post_norm) {
        bind_encoder_inputs(b, s, w);  // no final norm
    } else {
        w.output_norm = b.vector(s.output_norm_tensor, s.n_embd, true);
        // A pre-norm model (modern-bert, a decoder reranker) has a classification
        // head only where the file asks for rank pooling.
        if (s.pooling == Pooling::Rank) bind_classifier(b, s, w);
    }
    if (!s.post_norm && allowed(tr.input_norm))  // the input rows' norm (modern-bert, bloom)
        w.tok_embd_norm = b.vector("token_embd_norm.weight", s.n_embd, required(tr.input_norm));
    if (!s.post_norm && w.tok_embd_norm && allowed(tr.input_norm_bias))
        w.tok_embd_norm_b = b.vector("token_embd_norm.bias", s.n_embd, required(tr.input_norm_bias));
    if (!s.post_norm && allowed(tr.pos_embd))
        w.pos_embd = b.matrix("position_embd.weight", s.n_embd, s.n_ctx_train, required(tr.pos_embd));
    // LayerNorm biases where the family allows them; RMS norms with biases (phimoe) need theirs.
    auto norm_bias = [&]() { return (s.norm == NormKind::Layer && allowed(tr.norm_bias)) || tr.rms_norm_bias; };
    auto norm_bias_required = [&]() { return tr.rms_norm_bias || required(tr.norm_bias); };
    if (!s.post_norm && norm_bias()) w.output_norm_b = b.vector("output_norm.bias", s.n_embd, norm_bias_required());
    if (s.output_head && allowed(tr.output)) w.output = b.matrix("output.weight", s.n_embd, s.n_vocab, required(tr.output));
    if (w.output.empty() && s.output_head) w.output = w.tok_embd;  // tied output head
    if (!s.output_head && tr.output_unread) b.matrix("output.weight", s.n_embd, s.n_vocab, false);
    if (allowed(tr.dense_out)) bind_dense_out(b, s, w);
    if (s.output_head && allowed(tr.output_bias)) w.output_b = b.vector("output.bias", s.n_vocab, required(tr.output_bias));
    if (s.rope.n_dims > 0 && allowed(tr.rope_freqs))
        w.rope_freqs = b.vector("rope_freqs.weight", s.rope.n_factors > 0 ? s.rope.n_factors : s.rope.n_dims / 2,
                                required(tr.rope_freqs));
    if (s.n_embd_per_layer > 0 && allowed(tr.per_layer_embd)) {
        const int64_t n_ple = static_cast<int64_t>(s.n_embd_per_layer) * s.n_layer;
        w.ple_tok_embd = b.lookup_table("per_layer_token_embd.weight", n_ple, s.n_vocab, true);
        w.ple_model_proj = b.matrix("per_layer_model_proj.weight", s.n_embd, n_ple, true);
        w.ple_proj_norm = b.vector("per_layer_proj_norm.weight", s.n_embd_per_layer, true);
    }
    if (s.rope.n_dims > 0 && allowed(tr.rope_long_short)) {
        w.rope_long = b.vector("rope_factors_long.weight", s.rope.n_dims / 2, required(tr.rope_long_short));
        w.rope_short = b.vector("rope_factors_short.weight", s.rope.n_dims / 2, required(tr.rope_long_short));
    }

    const int64_t e = s.n_embd;
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
    // Q, K and V fused in one matrix where the file has it (every family, as
    // llama.cpp's loader), with a fused bias or separate ones; not with an
    // output gate, whose Q half kiln reads from a separate attn_q.
    // A shared-KV layer (gemma4) needs no K / V of its own; llama.cpp loads them
    // when present and its graph reads only Q, so kiln binds them unused.
    auto bind_qkv = [&](const std::string& p, const LayerSpec& l, LayerWeights& lw, int64_t nq_proj) {
        const int64_t dk = l.head_dim_k, dv = l.head_dim_v;
        const int64_t nq = l.n_head * dk, nk = l.n_head_kv * dk, nv = l.n_head_kv * dv;
        const bool own_kv = l.kv_source < 0;
        if (!s.attn_output_gate) lw.wqkv = b.matrix(p + "attn_qkv.weight", e, nq + nk + nv, false);
        if (!lw.wqkv.empty()) {
            s.fused_qkv = true;
            if (tr.qkv_bias) lw.bqkv = b.vector(p + "attn_qkv.bias", nq + nk + nv, false);
            scales(p + "attn_qkv", lw.wqkv, lw.wqkv_s);
        } else {
            lw.wq = b.matrix(p + "attn_q.weight", e, nq_proj, true);
            lw.wk = b.matrix(p + "attn_k.weight", e, nk, own_kv);
            lw.wv = b.matrix(p + "attn_v.weight", e, nv, own_kv && required(tr.attn_v));
            if (!lw.wk.empty() && lw.wv.empty() && own_kv && nk != nv)
                throw Error("tensor '" + p + "attn_v.weight' not found (K serves as V only with equal key and value sizes)");
            scales(p + "attn_q", lw.wq, lw.wq_s);
            scales(p + "attn_k", lw.wk, lw.wk_s);
            scales(p + "attn_v", lw.wv, lw.wv_s);
        }
        if (!tr.qkv_bias) return;
        if (!lw.bqkv) {
            // llama.cpp adds separate biases to a fused product only when all three exist.
            lw.bq = b.vector(p + "attn_q.bias", nq_proj, false);
            lw.bk = b.vector(p + "attn_k.bias", nk, false);
            lw.bv = b.vector(p + "attn_v.bias", nv, false);
            const int n_separate = (lw.bq != nullptr) + (lw.bk != nullptr) + (lw.bv != nullptr);
            if (!lw.wqkv.empty() && n_separate > 0 && n_separate < 3) {
                for (const char* t : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
                    if (!file.find_tensor(p + t))
                        throw Error("tensor '" + p + t + "' not found (a fused attn_qkv takes all three separate biases or none)");
            }
        }
    };
    // One decoder layer's tensors (blk.il.*) by its spec: the trunk's layers and a NextN block's.
    auto bind_layer = [&](int il, LayerSpec& l) -> LayerWeights {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights lw;
        if (s.post_norm) {
            bind_qkv(p, l, lw, l.n_head * l.head_dim_k);
            bind_encoder_layer(b, s, il, p, l, lw);
            return lw;
        }
        if (l.mixer == MixerKind::Recurrent) {
            // A recurrent layer: its norm and its mixer's tensors (src/model/ssm.cpp);
            // with FFN kind None (Mamba) nothing else.
            lw.attn_norm = b.vector(p + "attn_norm.weight", e, true);
            lw.ssm = bind_ssm_weights(b, p, s);
            if (l.ffn == FfnKind::None) {
                return lw;
            }
        }
        if (l.mixer == MixerKind::Attention && s.mla.kv_lora_rank > 0) {
            lw.attn_norm = b.vector(p + "attn_norm.weight", e, true);
            bind_mla_layer(b, s, p, l, lw);
        } else if (l.mixer == MixerKind::Attention) {
            if (tr.pre_norms) lw.attn_norm = b.vector(p + "attn_norm.weight", e, !(tr.first_attn_norm_optional && il == 0));
            if (norm_bias()) lw.attn_norm_b = b.vector(p + "attn_norm.bias", e, norm_bias_required());
            if (allowed(tr.attn_norm_2)) {
                lw.attn_norm_2 = b.vector(p + "attn_norm_2.weight", e, required(tr.attn_norm_2));
                if (lw.attn_norm_2 && s.norm == NormKind::Layer && allowed(tr.norm_bias))
                    lw.attn_norm_2_b = b.vector(p + "attn_norm_2.bias", e, required(tr.norm_bias));
            }
            // With an output gate the Q projection holds the gate's half per head too (qwen35).
            const int64_t dk = l.head_dim_k, nq = l.n_head * dk, nk = l.n_head_kv * dk;
            const int64_t nq_proj = (s.attn_output_gate ? 2 : 1) * nq;
            bind_qkv(p, l, lw, nq_proj);
            lw.wo = b.matrix(p + "attn_output.weight", l.n_head * l.head_dim_v, e, true);
            scales(p + "attn_output", lw.wo, lw.wo_s);
            if (l.parallel_ssm) lw.ssm = bind_ssm_weights(b, p, s);  // falcon-h1: the mixer beside the attention
            if (allowed(tr.attn_out_bias)) lw.bo = b.vector(p + "attn_output.bias", e, required(tr.attn_out_bias));
            if (allowed(tr.qk_norm) && tr.qk_norm_heads) {  // one weight row per head
                lw.q_norm = b.vector(p + "attn_q_norm.weight", dk, l.n_head, required(tr.qk_norm));
                lw.k_norm = b.vector(p + "attn_k_norm.weight", dk, l.n_head_kv, required(tr.qk_norm) || lw.q_norm);
            } else if (allowed(tr.qk_norm)) {
                lw.q_norm = b.vector(p + "attn_q_norm.weight", tr.qk_norm_full ? nq : dk, required(tr.qk_norm));
                lw.k_norm = b.vector(p + "attn_k_norm.weight", tr.qk_norm_full ? nk : dk,
                                     (required(tr.qk_norm) || lw.q_norm) && l.kv_source < 0);
            }
            any_q_norm |= lw.q_norm != nullptr;
            if (allowed(tr.attn_sinks)) lw.attn_sinks = b.vector(p + "attn_sinks.weight", l.n_head, required(tr.attn_sinks));
            if (allowed(tr.post_norms))
                lw.attn_post_norm = b.vector(p + "post_attention_norm.weight", e, required(tr.post_norms));
            any_post_attn |= lw.attn_post_norm != nullptr;
            if (l.ffn == FfnKind::None) {  // an attention layer alone (nemotron_h)
                return lw;
            }
        }
        // The FFN's input norm: ffn_norm, or under the family's name for it; none
        // without pre-norms (olmo2). An attention layer without one where the
        // family allows that is a parallel block (its FFN reads the attention's norm).
        if (tr.pre_norms && allowed(tr.ffn_norm)) lw.ffn_norm = b.vector(p + s.ffn_norm_tensor, e, required(tr.ffn_norm));
        if (tr.pre_norms && !lw.ffn_norm && l.mixer == MixerKind::Attention) l.parallel = true;
        if (lw.ffn_norm && norm_bias()) lw.ffn_norm_b = b.vector(p + "ffn_norm.bias", e, norm_bias_required());
        const bool expert_layer = file.find_tensor(p + "ffn_gate_inp.weight") != nullptr;
        if (expert_layer) {
            if (!allowed(tr.experts))
                throw Error("tensor '" + p + "ffn_gate_inp.weight': a mixture-of-experts layer, which architecture '" + s.arch +
                                "' does not have",
                            ErrorKind::Unsupported);
            const int n_ff_dense = l.n_ff;
            bind_expert_layer(b, s, p, l, lw.moe);  // an expert layer: its kind from the router's presence
            if (tr.expert_dense_branch) {
                // gemma4: the dense FFN below runs beside the experts, at the file's FFN width.
                l.n_ff_dense = n_ff_dense;
                ExpertWeights& x = lw.moe;
                x.router_in_s = b.vector(p + "ffn_gate_inp.scale", e, true);
                x.pre_norm_2 = b.vector(p + "pre_ffw_norm_2.weight", e, true);
                x.post_norm_1 = b.vector(p + "post_ffw_norm_1.weight", e, true);
                x.post_norm_2 = b.vector(p + "post_ffw_norm_2.weight", e, true);
                x.gate_s = b.vector(p + "ffn_gate_exps.scale", s.moe.n_expert, false);
                x.up_s = b.vector(p + "ffn_up_exps.scale", s.moe.n_expert, false);
                x.down_s = b.vector(p + "ffn_down_exps.scale", s.moe.n_expert, false);
            }
        } else if (required(tr.experts)) {
            throw Error("tensor '" + p + "ffn_gate_inp.weight' not found (every layer of architecture '" + s.arch +
                        "' is a mixture of experts)");
        }
        if (!expert_layer || tr.expert_dense_branch) {
            const FfnKind kind = l.ffn;
            const int n_ff = l.n_ff;
            if (expert_layer) l.n_ff = l.n_ff_dense;  // the dense branch's width while it is bound
            // The FFN's kind from the file: gated when it has a gate projection.
            if (tr.ffn_gate_up_fused) {
                lw.ffn_up = b.matrix(p + "ffn_up.weight", e, 2 * static_cast<int64_t>(l.n_ff), true);
                lw.ffn_gate_up_fused = true;
                l.ffn = FfnKind::Gated;
                s.fused_gate_up = true;
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
            if (allowed(tr.ffn_act_scales))
                lw.ffn_act_s = b.vector(p + "ffn.act.scales", l.n_ff, required(tr.ffn_act_scales));
            if (expert_layer) {
                if (l.ffn != FfnKind::Gated)
                    throw Error("tensor '" + p + "ffn_gate.weight' not found (the dense FFN beside the experts is gated)");
                l.ffn = kind;
                l.n_ff = n_ff;
            }
        }
        if (allowed(tr.post_norms)) lw.ffn_post_norm = b.vector(p + "post_ffw_norm.weight", e, required(tr.post_norms));
        any_post_ffn |= lw.ffn_post_norm != nullptr;
        if (s.n_embd_per_layer > 0 && allowed(tr.per_layer_embd)) {
            lw.ple_gate = b.matrix(p + "inp_gate.weight", e, s.n_embd_per_layer, true);
            lw.ple_proj = b.matrix(p + "proj.weight", s.n_embd_per_layer, e, true);
            lw.ple_post_norm = b.vector(p + "post_norm.weight", e, true);
        }
        if (allowed(tr.layer_out_scale))
            if (const float* v = b.vector(p + "layer_output_scale.weight", 1, required(tr.layer_out_scale))) lw.out_scale = v[0];
        return lw;
    };
    for (int il = 0; il < s.n_layer; ++il) w.layers.push_back(bind_layer(il, s.layers[static_cast<size_t>(il)]));
    // Optional tensors must be present in every layer or none.
    for (int il = 0; il < s.n_layer; ++il) {
        const LayerWeights& lw = w.layers[static_cast<size_t>(il)];
        const std::string p = "blk." + std::to_string(il) + ".";
        if (s.layers[static_cast<size_t>(il)].mixer != MixerKind::Attention) continue;
        if (any_q_norm && !lw.q_norm) throw Error("tensor '" + p + "attn_q_norm.weight' not found (other layers have it)");
        if (any_post_attn && !lw.attn_post_norm)
            throw Error("tensor '" + p + "post_attention_norm.weight' not found (other layers have it)");
        if (any_post_ffn && !lw.ffn_post_norm) throw Error("tensor '" + p + "post_ffw_norm.weight' not found (other layers have it)");
    }
    // The first NextN block: its decoder layer (the trunk's kind: attention or
    // latent attention, dense or expert FFN by presence) and its own tensors. The
    // trunk's every-layer-or-none checks above do not include it.
    // A file converted without its MTP tensors (no eh_proj) keeps only the note.
    if (!s.nextn_layers.empty() && tr.nextn_head && file.find_tensor("blk." + std::to_string(s.n_layer) + ".nextn.eh_proj.weight")) {
        const int il = s.n_layer;
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerSpec& l = s.nextn_layers.front();
        if (l.mixer != MixerKind::Attention)
            throw Error("tensor '" + p + "nextn.eh_proj.weight': a multi-token-prediction block after a recurrent layer kind",
                        ErrorKind::Unsupported);
        NextnWeights nw;
        nw.layer = bind_layer(il, l);
        nw.eh_proj = b.matrix(p + "nextn.eh_proj.weight", 2 * e, e, true);
        nw.enorm = b.vector(p + "nextn.enorm.weight", e, true);
        nw.hnorm = b.vector(p + "nextn.hnorm.weight", e, true);
        nw.embed_tokens = b.lookup_table(p + "nextn.embed_tokens.weight", e, s.n_vocab, false);
        nw.head = b.matrix(p + "nextn.shared_head_head.weight", e, s.n_vocab, false);
        nw.head_norm = b.vector(p + "nextn.shared_head_norm.weight", e, false);
        if (nw.head.empty() && !s.output_head)
            throw Error("tensor '" + p + "nextn.shared_head_head.weight' not found and the model has no output head");
        w.nextn.push_back(std::move(nw));
    }
    if (s.n_embd_target > 0) {  // a Gemma 4 assistant: between the target's width and its own
        w.assistant_pre = b.matrix("nextn.pre_projection.weight", 2 * static_cast<int64_t>(s.n_embd_target), e, true);
        w.assistant_post = b.matrix("nextn.post_projection.weight", e, s.n_embd_target, true);
    }
    std::vector<std::string> mtp_notes;
    b.check_all_used(s, !w.nextn.empty(), mtp_notes);
    w.conversion_notes = b.conversion_notes();
    w.conversion_notes.insert(w.conversion_notes.end(), mtp_notes.begin(), mtp_notes.end());
    // Matrices the kernels take in a repacked layout are repacked now, once
    // (compute/matmul.h); the embedding stays as it is for row lookups (the tied
    // output head gets its own packed copy).
    std::vector<Matrix*> products;
    for (Matrix* m : {&w.output, &w.cls, &w.cls_out, &w.ple_model_proj, &w.assistant_pre, &w.assistant_post})
        if (!m->empty()) products.push_back(m);
    std::vector<LayerWeights*> all_layers;
    for (LayerWeights& lw : w.layers) all_layers.push_back(&lw);
    for (NextnWeights& nw : w.nextn) {
        all_layers.push_back(&nw.layer);
        for (Matrix* m : {&nw.eh_proj, &nw.head})
            if (!m->empty()) products.push_back(m);
    }
    // Expert layers in layer order while their experts fit the budget; from the
    // first that does not, the rest stay in the mapping, read in place. Only
    // quantized experts with a panel layout (the in-place kernels repack their
    // panels as they go); float or converted experts are always repacked.
    auto in_place_capable = [](const Matrix& m) { return !is_float_weight(m.type) && has_packed_layout(m.type); };
    auto expert_bytes = [&](const ExpertWeights& x) {
        uint64_t n = 0;
        for (auto* v : {&x.gate, &x.up, &x.down})
            for (const Matrix& m : *v)
                if (in_place_capable(m)) n += m.row_bytes * static_cast<uint64_t>(m.n_out);
        return n;
    };
    uint64_t all_experts = 0;
    for (const LayerWeights* layer : all_layers) all_experts += expert_bytes(layer->moe);
    if (!expert_budget && all_experts > 0) {
        // The other weights (about their file size once repacked) and a reserve
        // for the sequences' memory and scratch come first.
        uint64_t other = 0;
        for (const gguf::TensorInfo& t : file.tensors()) other += t.bytes;
        other -= std::min(other, all_experts);
        const std::optional<uint64_t> avail = memory_available_now();
        if (avail) {
            const uint64_t reserve = std::max<uint64_t>(uint64_t{1} << 30, *avail / 10);
            expert_budget = *avail > other + reserve ? *avail - other - reserve : 0;
        }
    }
    std::vector<bool> experts_in_place(all_layers.size(), false);
    std::vector<const Matrix*> in_place_experts;
    if (expert_budget && all_experts > *expert_budget) {
        uint64_t kept = 0;
        bool over = false;
        for (size_t i = 0; i < all_layers.size(); ++i) {
            const uint64_t n = expert_bytes(all_layers[i]->moe);
            if (n == 0) continue;
            over = over || kept + n > *expert_budget;
            if (!over) {
                kept += n;
                continue;
            }
            experts_in_place[i] = true;
            all_layers[i]->moe.in_place = true;
            w.in_place_expert_layers.push_back(i < w.layers.size() ? static_cast<int>(i) : s.n_layer + static_cast<int>(i - w.layers.size()));
            w.in_place_expert_bytes += n;
        }
    }
    for (size_t li = 0; li < all_layers.size(); ++li) {
        LayerWeights& lw = *all_layers[li];
        for (Matrix* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wqkv, &lw.wo, &lw.ffn_gate, &lw.ffn_up, &lw.ffn_down, &lw.ple_gate, &lw.ple_proj})
            if (!m->empty()) products.push_back(m);
        for (Matrix* m : ssm_matrices(lw.ssm)) products.push_back(m);
        for (Matrix* m : {&lw.mla.wq_a, &lw.mla.wq_b, &lw.mla.wkv_a})
            if (!m->empty()) products.push_back(m);
        for (auto* v : {&lw.mla.k_b, &lw.mla.v_b})
            for (Matrix& m : *v) products.push_back(&m);
        ExpertWeights& x = lw.moe;
        for (Matrix* m : {&x.router, &x.shexp_gate, &x.shexp_up, &x.shexp_down, &x.shexp_router})
            if (!m->empty()) products.push_back(m);
        for (auto* v : {&x.gate, &x.up, &x.down})
            for (Matrix& m : *v) {
                if (!experts_in_place[li] || !in_place_capable(m)) {
                    products.push_back(&m);
                } else {
                    in_place_experts.push_back(&m);
                    // No read-around: a fault in one expert must not read its neighbours.
                    if (!plan_only) advise_pages(m.data, m.row_bytes * static_cast<uint64_t>(m.n_out), MADV_RANDOM);
                }
            }
    }
    if (!w.in_place_expert_layers.empty()) {
        const std::vector<int>& ls = w.in_place_expert_layers;
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "experts read in place from the file (over the expert memory budget of %.2f MiB): %zu layer%s (blk.%d", 
                      static_cast<double>(*expert_budget) / (1024.0 * 1024.0), ls.size(), ls.size() == 1 ? "" : "s", ls.front());
        std::string note = buf;
        if (ls.size() > 1) note += " .. blk." + std::to_string(ls.back());
        std::snprintf(buf, sizeof buf, "), %.2f MiB of ffn_{gate,up,down}_exps not repacked", 
                      static_cast<double>(w.in_place_expert_bytes) / (1024.0 * 1024.0));
        w.conversion_notes.push_back(note + buf);
    }
    // Every matrix here is bound in place from the file's read-only mapping.
    w.mapped_bytes = b.mapped_bytes();
    w.tok_embd_mapped = !b.converted("token_embd.weight");
    if (plan_only) {
        w.pack_plan = plan_prepare_matrices(products);
        return w;
    }
    w.packed_bytes = prepare_matrices(products, /*release_file_pages=*/true);
    std::vector<const Matrix*> all = {&w.tok_embd};
    all.insert(all.end(), products.begin(), products.end());
    all.insert(all.end(), in_place_experts.begin(), in_place_experts.end());
    w.conversion_notes.push_back(b.residency_note(all));
    return w;
}


}  // namespace kiln
