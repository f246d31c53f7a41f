// Embeddings (kiln/embedding.h): inputs packed as separate sequences into
// batches of one Context, each sequence evaluated whole (an encoder's attention
// sees all of it), its outputs pooled, then normalized.
#include "kiln/embedding.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "compute/matmul.h"
#include "compute/ops.h"
#include "compute/thread_pool.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "model/internals.h"

namespace kiln {

namespace {

constexpr int k_default_ctx_cap = 8192;
constexpr int k_default_batch = 2048;

}  // namespace

Normalization parse_normalization(std::string_view t, float& p) {
    p = 2.0f;
    if (t == "none") return Normalization::None;
    if (t == "maxabs" || t == "max-abs") return Normalization::MaxAbs;
    if (t == "l1") return Normalization::L1;
    if (t == "l2") return Normalization::L2;
    if (t.size() >= 2 && (t[0] == 'p' || t[0] == 'P')) {
        const std::string num(t.substr(1));
        char* end = nullptr;
        const double v = std::strtod(num.c_str(), &end);
        if (end && *end == '\0' && std::isfinite(v) && v > 0.0) {
            p = static_cast<float>(v);
            return Normalization::PNorm;
        }
    }
    throw Error("normalization '" + std::string(t) + "': expected none, maxabs, l1, l2 or pN (N > 0)");
}

Pooling parse_pooling(std::string_view t) {
    for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Rank})
        if (t == pooling_name(p)) return p;
    throw Error("pooling '" + std::string(t) + "': expected none, mean, cls, last or rank");
}

std::string_view pooling_name(Pooling p) {
    switch (p) {
        case Pooling::None: return "none";
        case Pooling::Mean: return "mean";
        case Pooling::Cls: return "cls";
        case Pooling::Last: return "last";
        case Pooling::Rank: return "rank";
    }
    return "unknown";
}

void normalize_embedding(std::span<float> v, Normalization kind, float p) {
    double norm = 0.0;
    switch (kind) {
        case Normalization::None: return;
        case Normalization::MaxAbs:
            for (float x : v) norm = std::max(norm, static_cast<double>(std::fabs(x)));
            break;
        case Normalization::L1:
            for (float x : v) norm += std::fabs(static_cast<double>(x));
            break;
        case Normalization::L2:
            for (float x : v) norm += static_cast<double>(x) * static_cast<double>(x);
            norm = std::sqrt(norm);
            break;
        case Normalization::PNorm:
            for (float x : v) norm += std::pow(std::fabs(static_cast<double>(x)), static_cast<double>(p));
            norm = std::pow(norm, 1.0 / static_cast<double>(p));
            break;
    }
    if (norm <= 0.0) return;
    const float inv = static_cast<float>(1.0 / norm);
    for (float& x : v) x *= inv;
}

struct Embedder::Impl {
    std::shared_ptr<const Model> model;
    std::unique_ptr<Context> ctx;
    int n_ctx = 0;
    int n_batch = 0;
    int n_seq_max = 0;
    std::unique_ptr<ThreadPool> pool;  // the classification head's products
    MatmulScratch mm;
    std::vector<float> dense_mid;  // [dense_2_out]: between the two Dense projections

    // The Dense projections after pooling (gemma-embedding's dense_2 then
    // dense_3, each a plain product as llama.cpp's build_dense_out), in place
    // on one n_embd row; nothing where the file has none.
    void dense_out(const ModelWeights& w, std::span<float> row) {
        if (w.dense_2.empty() && w.dense_3.empty()) return;
        const float* x = row.data();
        if (!w.dense_2.empty()) {
            dense_mid.resize(static_cast<size_t>(w.dense_2.n_out));
            matmul(w.dense_2, row.data(), 1, dense_mid.data(), *pool, mm);
            x = dense_mid.data();
        }
        if (!w.dense_3.empty()) {
            std::vector<float> in(x, x + w.dense_3.n_in);
            matmul(w.dense_3, in.data(), 1, row.data(), *pool, mm);
        } else {
            std::copy(x, x + row.size(), row.begin());
        }
    }
};

Embedder::Embedder(std::shared_ptr<const Model> model, const EmbedderOptions& o) : impl_(std::make_unique<Impl>()) {
    Impl& im = *impl_;
    if (!model) throw Error("embedder: no model");
    im.model = std::move(model);
    im.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(im.model->n_ctx_train(), k_default_ctx_cap);
    if (o.n_seq_max < 1) throw Error("embedder: the number of sequences must be positive");
    im.n_seq_max = o.n_seq_max;
    // A non-causal sequence is evaluated in one forward pass: a batch holds at
    // least one whole input of the context's length.
    im.n_batch = std::max(o.n_batch > 0 ? o.n_batch : k_default_batch, im.n_ctx);
    ContextOptions co;
    co.n_ctx = im.n_ctx;
    co.n_seq_max = im.n_seq_max;
    co.n_batch = im.n_batch;
    co.n_threads = o.n_threads;
    co.executor = o.executor;
    co.hidden_states = true;
    co.logits = false;
    im.ctx = std::make_unique<Context>(im.model, co);
    im.n_batch = im.ctx->n_batch();
    im.pool = std::make_unique<ThreadPool>(o.executor ? o.executor : Executor::shared(), o.n_threads);
}

Embedder::~Embedder() = default;

const Model& Embedder::model() const { return *impl_->model; }
int Embedder::n_ctx() const { return impl_->n_ctx; }
int Embedder::n_embd() const { return impl_->model->n_embd(); }

Pooling Embedder::pooling(const EmbedOptions& o) const {
    if (o.pooling) return *o.pooling;
    if (auto p = impl_->model->pooling()) return *p;
    throw Error("model '" + impl_->model->path() + "' sets no pooling type ('" + impl_->model->architecture() +
                ".pooling_type'): choose one (none, mean, cls, last or rank)");
}

std::vector<TokenId> Embedder::tokenize(std::string_view text) const {
    // Control-token text ("[SEP]") becomes the token, as llama-server and Hugging Face do.
    return impl_->model->tokenizer().encode(text, {.add_special = true, .parse_special = true});
}

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

}  // namespace

EmbedInput Embedder::tokenize_pair(std::string_view query, std::string_view document) const {
    const Tokenizer& tok = impl_->model->tokenizer();
    // A reranker whose file has a "rerank" prompt (a Qwen3 reranker's
    // tokenizer.chat_template.rerank) is fed that prompt with {query} and
    // {document} filled in, special tokens parsed and none added, as
    // llama-server's format_prompt_rerank does; every token type 0.
    if (auto prompt = impl_->model->file().metadata().find_string("tokenizer.chat_template.rerank")) {
        std::string text(*prompt);
        replace_all(text, "{query}", query);
        replace_all(text, "{document}", document);
        EmbedInput in;
        tok.encode(text, in.tokens, {.add_special = false, .parse_special = true});
        in.token_types.assign(in.tokens.size(), 0);
        return in;
    }
    const SpecialTokens& sp = tok.special();
    const TokenId cls = sp.bos, sep = sp.sep != k_no_token ? sp.sep : sp.eos;
    if (cls == k_no_token || sep == k_no_token)
        throw Error("model '" + impl_->model->path() + "': the vocabulary has no CLS / SEP tokens to join a query and a document");
    // A vocabulary that closes a text with EOS (RoBERTa, XLM-R: </s>) pairs as
    // Hugging Face's RoBERTa tokenizers do, <s> q </s></s> d </s>; BERT's
    // [CLS] q [SEP] d [SEP].
    const bool closes_with_eos = tok.add_eos() && sp.eos != k_no_token;
    EmbedInput in;
    in.tokens.push_back(cls);
    tok.encode(query, in.tokens, {.add_special = false, .parse_special = false});
    if (closes_with_eos) in.tokens.push_back(sp.eos);
    in.tokens.push_back(sep);
    in.token_types.assign(in.tokens.size(), 0);
    tok.encode(document, in.tokens, {.add_special = false, .parse_special = false});
    in.tokens.push_back(closes_with_eos ? sp.eos : sep);
    // The second segment is type 1 where the model has that row (BERT); with one
    // type (RoBERTa / XLM-R rerankers) Hugging Face gives every token type 0.
    const bool two_types = ModelInternals::weights(*impl_->model).type_embd.n_out > 1;
    in.token_types.resize(in.tokens.size(), two_types ? 1 : 0);
    return in;
}

std::vector<Embedding> Embedder::embed(std::span<const std::vector<TokenId>> inputs, const EmbedOptions& o) {
    std::vector<EmbedInput> in(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in[i].tokens = inputs[i];
    return embed(std::span<const EmbedInput>(in), o);
}

std::vector<Embedding> Embedder::embed_texts(std::span<const std::string> texts, const EmbedOptions& o) {
    std::vector<EmbedInput> in(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) in[i].tokens = tokenize(texts[i]);
    return embed(std::span<const EmbedInput>(in), o);
}

std::vector<float> Embedder::rerank(std::string_view query, std::span<const std::string> documents, bool truncate,
                                    int64_t* n_tokens) {
    if (impl_->model->n_cls_out() < 1)
        throw Error("model '" + impl_->model->path() + "' is not a reranker: it has no classification head (cls.output.weight)");
    std::vector<EmbedInput> pairs;
    for (const std::string& d : documents) pairs.push_back(tokenize_pair(query, d));
    EmbedOptions o;
    o.pooling = Pooling::Rank;
    o.truncate = truncate;
    std::vector<float> scores;
    int64_t tokens = 0;
    for (const Embedding& e : embed(std::span<const EmbedInput>(pairs), o)) {
        scores.push_back(e.values.at(0));
        tokens += e.n_tokens;
    }
    if (n_tokens) *n_tokens = tokens;
    return scores;
}

// llama.cpp softmaxes the rank head's labels for these architectures only.
bool Embedder::rank_is_probability() const {
    const std::string& arch = ModelInternals::spec(*impl_->model).arch;
    return arch == "qwen3" || arch == "qwen3vl";
}

std::vector<Embedding> Embedder::embed(std::span<const EmbedInput> inputs, const EmbedOptions& o) {
    Impl& im = *impl_;
    const Pooling pooling = this->pooling(o);
    const int n_embd = im.model->n_embd();
    const ModelWeights& w = ModelInternals::weights(*im.model);
    const ModelSpec& spec = ModelInternals::spec(*im.model);
    // Rank pooling scores the first token (CLS) of a non-causal model and the
    // last of a causal one (only it has seen the whole input), as llama.cpp's
    // llm_graph_input_cls; a Qwen3 reranker's two labels (yes, no) are
    // softmaxed as llama.cpp's rank pooling does for that architecture.
    const bool rank_mean = pooling == Pooling::Rank && spec.rank_mean;
    const bool rank_last = pooling == Pooling::Rank && spec.causal && !rank_mean;
    const bool rank_softmax = pooling == Pooling::Rank && rank_is_probability();
    if (pooling == Pooling::Rank && w.cls.empty() && w.cls_out.empty())
        throw Error("model '" + im.model->path() + "' has no classification head (cls / cls.output tensors) for rank pooling");
    if (o.dimensions < 0 || o.dimensions > n_embd)
        throw Error("dimensions " + std::to_string(o.dimensions) + ": the model's embeddings have " + std::to_string(n_embd));
    if (o.dimensions > 0 && (pooling == Pooling::Rank || pooling == Pooling::None))
        throw Error("dimensions apply to pooled embeddings, not to pooling '" + std::string(pooling_name(pooling)) + "'");

    // Every input checked (and cut, if asked) before anything is evaluated.
    std::vector<EmbedInput> cut;  // inputs that were truncated, by index
    std::vector<const EmbedInput*> use(inputs.size());
    std::vector<Embedding> out(inputs.size());
    const int n_vocab = im.model->n_vocab();
    for (size_t i = 0; i < inputs.size(); ++i) {
        const EmbedInput& in = inputs[i];
        if (in.tokens.empty()) throw Error("input " + std::to_string(i) + " has no tokens");
        if (!in.token_types.empty() && in.token_types.size() != in.tokens.size())
            throw Error("input " + std::to_string(i) + ": " + std::to_string(in.token_types.size()) + " token types for " +
                        std::to_string(in.tokens.size()) + " tokens");
        for (TokenId t : in.tokens)
            if (t < 0 || t >= n_vocab)
                throw Error("input " + std::to_string(i) + ": token id " + std::to_string(t) + " is outside the vocabulary (" +
                            std::to_string(n_vocab) + ")");
        use[i] = &in;
    }
    cut.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        const EmbedInput& in = inputs[i];
        const size_t len = in.tokens.size();
        if (len <= static_cast<size_t>(im.n_ctx)) continue;
        if (!o.truncate)
            throw Error("input " + std::to_string(i) + " has " + std::to_string(len) + " tokens, more than the context of " +
                        std::to_string(im.n_ctx) + " (truncation is off)");
        EmbedInput c;
        const size_t keep = static_cast<size_t>(im.n_ctx);
        c.tokens.assign(in.tokens.begin(), in.tokens.begin() + static_cast<std::ptrdiff_t>(keep - 1));
        c.tokens.push_back(in.tokens.back());  // the end token the tokenizer added (SEP / EOS)
        if (!in.token_types.empty()) {
            c.token_types.assign(in.token_types.begin(), in.token_types.begin() + static_cast<std::ptrdiff_t>(keep - 1));
            c.token_types.push_back(in.token_types.back());
        }
        cut.push_back(std::move(c));
        use[i] = &cut.back();
        out[i].truncated = true;
    }

    // Inputs packed in order into batches of at most n_seq_max sequences and
    // n_batch tokens; every sequence is cleared after its batch.
    Context& ctx = *im.ctx;
    Batch batch;
    std::vector<float> pooled(static_cast<size_t>(n_embd)), cls_hidden;
    for (size_t first = 0; first < inputs.size();) {
        size_t last = first;
        int tokens = 0;
        while (last < inputs.size() && static_cast<int>(last - first) < im.n_seq_max &&
               tokens + static_cast<int>(use[last]->tokens.size()) <= im.n_batch) {
            tokens += static_cast<int>(use[last]->tokens.size());
            ++last;
        }
        batch.clear();
        for (size_t i = first; i < last; ++i) {
            const EmbedInput& in = *use[i];
            const int n = static_cast<int>(in.tokens.size());
            const SeqId seq = static_cast<SeqId>(i - first);
            for (int t = 0; t < n; ++t) {
                const bool wanted = pooling == Pooling::Mean || pooling == Pooling::None || rank_mean ||
                                    ((pooling == Pooling::Cls || (pooling == Pooling::Rank && !rank_last && !rank_mean)) && t == 0) ||
                                    ((pooling == Pooling::Last || rank_last) && t == n - 1);
                batch.add(in.tokens[static_cast<size_t>(t)], t, seq, wanted,
                          in.token_types.empty() ? 0 : in.token_types[static_cast<size_t>(t)]);
            }
        }
        ctx.decode(batch);
        int k = 0;  // the next output, in batch order
        for (size_t i = first; i < last; ++i) {
            const int n = static_cast<int>(use[i]->tokens.size());
            Embedding& e = out[i];
            e.n_tokens = n;
            if (pooling == Pooling::None) {
                e.values.resize(static_cast<size_t>(n) * static_cast<size_t>(n_embd));
                for (int t = 0; t < n; ++t) {
                    auto h = ctx.hidden(k++);
                    std::span<float> row(e.values.data() + static_cast<size_t>(t) * static_cast<size_t>(n_embd), static_cast<size_t>(n_embd));
                    std::copy(h.begin(), h.end(), row.begin());
                    im.dense_out(w, row);  // per token, as llama.cpp without pooling
                    normalize_embedding(row, o.normalize, o.p);
                }
                continue;
            }
            if (pooling == Pooling::Mean || rank_mean) {
                std::fill(pooled.begin(), pooled.end(), 0.0f);
                for (int t = 0; t < n; ++t) {
                    auto h = ctx.hidden(k++);
                    for (int j = 0; j < n_embd; ++j) pooled[static_cast<size_t>(j)] += h[static_cast<size_t>(j)];
                }
                const float inv = 1.0f / static_cast<float>(n);
                for (float& x : pooled) x *= inv;
            } else {
                auto h = ctx.hidden(k++);
                std::copy(h.begin(), h.end(), pooled.begin());
            }
            if (pooling == Pooling::Rank) {
                // cls (+ bias, tanh; modern-bert: GELU then cls.norm), then
                // cls.output (+ bias), as llama.cpp's rank pooling.
                std::vector<float> x = pooled;
                if (!w.cls.empty()) {
                    const int n_cls = static_cast<int>(w.cls.n_out);
                    const bool gelu = spec.arch == "modern-bert";
                    cls_hidden.resize(static_cast<size_t>(n_cls));
                    matmul(w.cls, x.data(), 1, cls_hidden.data(), *im.pool, im.mm);
                    for (int j = 0; j < n_cls; ++j) {
                        const float v = cls_hidden[static_cast<size_t>(j)] + (w.cls_b ? w.cls_b[j] : 0.0f);
                        cls_hidden[static_cast<size_t>(j)] = gelu ? ops::gelu_table(v) : std::tanh(v);
                    }
                    if (w.cls_norm) {
                        std::vector<float> normed(cls_hidden.size());
                        ops::layer_norm(cls_hidden.data(), w.cls_norm, nullptr, normed.data(), n_cls, spec.norm_eps);
                        cls_hidden = std::move(normed);
                    }
                    x = cls_hidden;
                }
                if (!w.cls_out.empty()) {
                    e.values.resize(static_cast<size_t>(w.cls_out.n_out));
                    matmul(w.cls_out, x.data(), 1, e.values.data(), *im.pool, im.mm);
                    if (w.cls_out_b)
                        for (size_t j = 0; j < e.values.size(); ++j) e.values[j] += w.cls_out_b[j];
                } else {
                    e.values = x;
                }
                if (rank_softmax) {
                    const float mx = *std::max_element(e.values.begin(), e.values.end());
                    double sum = 0.0;
                    for (float& v : e.values) {
                        v = std::exp(v - mx);
                        sum += v;
                    }
                    for (float& v : e.values) v = static_cast<float>(v / sum);
                }
                continue;
            }
            im.dense_out(w, pooled);  // after pooling, before the Matryoshka cut and normalization
            const size_t dims = o.dimensions > 0 ? static_cast<size_t>(o.dimensions) : static_cast<size_t>(n_embd);
            e.values.assign(pooled.begin(), pooled.begin() + static_cast<std::ptrdiff_t>(dims));
            normalize_embedding(e.values, o.normalize, o.p);
        }
        for (size_t i = first; i < last; ++i) ctx.seq_clear(static_cast<SeqId>(i - first));
        first = last;
    }
    return out;
}

}  // namespace kiln
