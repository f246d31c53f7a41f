#include <chrono>
#include <optional>

#include "kiln/error.h"
#include "kiln/model.h"
#include "compute/kernels/packing.h"
#include "model/hparams.h"
#include "model/internals.h"
#include "model/nextn.h"
#include "model/registry.h"
#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

struct Model::Impl {
    std::string path;
    gguf::File file;
    std::optional<Tokenizer> tokenizer;
    ModelSpec spec;
    ModelWeights weights;
    double load_seconds = 0;
    std::vector<std::string> notes;
    std::unique_ptr<NextnHead> nextn;  // the multi-token-prediction head (null: none)
};

Model::Model() = default;
Model::~Model() = default;

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& options) {
    auto t0 = std::chrono::steady_clock::now();
    gguf::File file = gguf::File::open(path);
    const gguf::Metadata& md = file.metadata();
    ResolvedArch resolved;
    try {
        resolved = resolve_architecture(md);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what(), e.kind());
    }
    const ArchRow* row = resolved.row;
    if (!row->configure)
        throw Error(path + ": architecture '" + std::string(row->name) + "' is not supported yet; supported: " +
                        supported_architectures(),
                    ErrorKind::Unsupported);
    std::shared_ptr<Model> m(new Model());
    m->impl_ = std::make_unique<Impl>(Impl{path, std::move(file), std::nullopt, {}, {}, 0, {}, nullptr});
    Impl& im = *m->impl_;
    try {
        im.spec = read_model_spec(im.file, *row, resolved.prefix);
        // An embedding model's vocabulary need not have an end-of-generation token.
        im.tokenizer = Tokenizer::from_gguf(
            im.file, {.require_end_of_generation = im.spec.output_head && !im.spec.pooling.has_value()});
        if (im.spec.n_vocab != 0 && static_cast<size_t>(im.spec.n_vocab) != im.tokenizer->n_vocab())
            throw Error("the tokenizer has " + std::to_string(im.tokenizer->n_vocab()) + " tokens but the model " +
                        std::to_string(im.spec.n_vocab));
        im.file.map_all();
        im.weights = bind_weights(im.file, im.spec, /*plan_only=*/false, options.expert_memory_budget);
        im.nextn = make_nextn_head(im.spec, im.weights);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what(), e.kind());
    }
    im.notes = im.weights.conversion_notes;
    if (!resolved.note.empty()) im.notes.insert(im.notes.begin(), resolved.note);
    if (options.prefault) {
        volatile uint8_t sink = 0;
        for (const auto& t : im.file.tensors()) {
            const uint8_t* p = im.file.tensor_data(t);
            for (uint64_t off = 0; off < t.bytes; off += 4096) sink = sink ^ p[off];
        }
        (void)sink;
    }
    im.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return m;
}

const std::string& Model::path() const { return impl_->path; }
const gguf::File& Model::file() const { return impl_->file; }
const Tokenizer& Model::tokenizer() const { return *impl_->tokenizer; }
const std::string& Model::architecture() const { return impl_->spec.arch; }
int Model::n_vocab() const { return impl_->spec.n_vocab; }
int Model::n_ctx_train() const { return impl_->spec.n_ctx_train; }
int Model::n_embd() const { return impl_->spec.n_embd; }
int Model::n_layer() const { return impl_->spec.n_layer; }
double Model::load_seconds() const { return impl_->load_seconds; }
std::optional<Pooling> Model::pooling() const { return impl_->spec.pooling; }
bool Model::is_embedding_model() const { return !impl_->spec.output_head || impl_->spec.pooling.has_value(); }
bool Model::has_output_head() const { return impl_->spec.output_head; }
int Model::n_cls_out() const { return impl_->spec.n_cls_out; }
const std::vector<std::string>& Model::load_notes() const { return impl_->notes; }
const ModelSpec& ModelInternals::spec(const Model& m) { return m.impl_->spec; }
const ModelWeights& ModelInternals::weights(const Model& m) { return m.impl_->weights; }
const NextnHead* ModelInternals::nextn(const Model& m) { return m.impl_->nextn.get(); }

ModelFootprint Model::footprint() const {
    const ModelWeights& w = impl_->weights;
    auto bytes = [](const Matrix& m) { return m.empty() ? uint64_t{0} : m.row_bytes * static_cast<uint64_t>(m.n_out); };
    auto params = [](const Matrix& m) { return m.empty() ? uint64_t{0} : static_cast<uint64_t>(m.n_in) * static_cast<uint64_t>(m.n_out); };
    ModelFootprint f;
    f.decode_bytes = bytes(w.output);
    const int n_used = impl_->spec.moe.n_expert_used;
    for (const LayerWeights& l : w.layers) {
        const ExpertWeights& x = l.moe;
        for (const Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wqkv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &x.router, &x.shexp_gate,
                                &x.shexp_up, &x.shexp_down, &x.shexp_router}) {
            f.decode_bytes += bytes(*m);
            f.layer_params += params(*m);
        }
        // An expert layer: a token reads n_used of its experts (all experts
        // have one shape and type, so any n_used of them weigh the same).
        for (const auto* v : {&x.gate, &x.up, &x.down})
            if (!v->empty()) {
                f.decode_bytes += bytes(v->front()) * static_cast<uint64_t>(n_used);
                f.layer_params += params(v->front()) * static_cast<uint64_t>(n_used);
            }
    }
    // The type of the layers' matrices: that of the first FFN matrix.
    if (!w.layers.empty()) {
        const Matrix& up = w.layers[0].moe.up.empty() ? w.layers[0].ffn_up : w.layers[0].moe.up.front();
        f.float_weights = is_float_weight(up.type);
        f.bf16_weights = up.type == GgmlType::BF16;
    }
    f.repacked_bytes = w.packed_bytes;
    f.matrix_file_bytes = w.matrix_file_bytes;
    f.matrix_resident_bytes = w.matrix_resident_bytes;
    return f;
}

}  // namespace kiln
