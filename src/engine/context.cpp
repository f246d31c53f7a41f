#include <algorithm>

#include "cache/kv_cache.h"
#include "compute/thread_pool.h"
#include "kiln/error.h"
#include "kiln/model.h"
#include "model/forward.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_default_ctx_cap = 4096;
}

struct Context::Impl {
    std::shared_ptr<const Model> model;
    int n_ctx = 0;
    int n_batch = 0;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<KvCache> cache;
    std::unique_ptr<Forward> forward;
    std::vector<int32_t> history;
    std::vector<float> last_logits;
    std::vector<float> chunk_logits;
};

Context::Context(std::shared_ptr<const Model> model, const ContextOptions& o) : impl_(std::make_unique<Impl>()) {
    Impl& im = *impl_;
    const ModelSpec& spec = model->spec();
    im.model = std::move(model);
    int n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(spec.n_ctx_train, k_default_ctx_cap);
    if (n_ctx > spec.n_ctx_train)
        throw Error("context of " + std::to_string(n_ctx) + " tokens exceeds the model's maximum of " +
                    std::to_string(spec.n_ctx_train));
    if (n_ctx < 1) throw Error("context size must be positive");
    if (o.n_batch < 1) throw Error("batch size must be positive");
    im.n_ctx = n_ctx;
    im.n_batch = std::min(o.n_batch, n_ctx);
    im.pool = std::make_unique<ThreadPool>(o.n_threads);
    im.cache = std::make_unique<KvCache>(spec, n_ctx, im.n_batch, parse_kv_type(o.kv_type));
    im.forward = std::make_unique<Forward>(spec, im.model->weights(), *im.cache, *im.pool, im.n_batch);
}

Context::~Context() = default;

const Model& Context::model() const { return *impl_->model; }
int Context::n_ctx() const { return impl_->n_ctx; }
int Context::n_batch() const { return impl_->n_batch; }
int Context::n_threads() const { return impl_->pool->size(); }
int64_t Context::n_past() const { return static_cast<int64_t>(impl_->history.size()); }
const std::vector<int32_t>& Context::history() const { return impl_->history; }

void Context::decode(std::span<const int32_t> tokens, std::vector<float>* all_logits) {
    Impl& im = *impl_;
    const int64_t n_vocab = im.model->n_vocab();
    if (tokens.empty()) return;
    if (n_past() + static_cast<int64_t>(tokens.size()) > im.n_ctx)
        throw Error("context full: " + std::to_string(n_past() + static_cast<int64_t>(tokens.size())) +
                    " tokens do not fit in a context of " + std::to_string(im.n_ctx));
    if (all_logits) all_logits->resize(tokens.size() * static_cast<size_t>(n_vocab));
    size_t done = 0;
    while (done < tokens.size()) {
        const int n = static_cast<int>(std::min<size_t>(static_cast<size_t>(im.n_batch), tokens.size() - done));
        const bool last_chunk = done + static_cast<size_t>(n) == tokens.size();
        float* out = nullptr;
        int first_row = n - 1;
        if (all_logits) {
            out = all_logits->data() + done * static_cast<size_t>(n_vocab);
            first_row = 0;
        } else if (last_chunk) {
            im.chunk_logits.resize(static_cast<size_t>(n_vocab));
            out = im.chunk_logits.data();
        } else {
            first_row = n;  // no logits needed
        }
        im.forward->eval(tokens.data() + done, n, n_past(), first_row, out);
        im.history.insert(im.history.end(), tokens.begin() + static_cast<std::ptrdiff_t>(done),
                          tokens.begin() + static_cast<std::ptrdiff_t>(done) + n);
        done += static_cast<size_t>(n);
    }
    if (all_logits)
        im.last_logits.assign(all_logits->end() - n_vocab, all_logits->end());
    else
        im.last_logits = im.chunk_logits;
}

std::span<const float> Context::last_logits() const { return impl_->last_logits; }

bool Context::keep_prefix(int64_t n_keep) {
    Impl& im = *impl_;
    if (n_keep >= n_past()) return true;
    if (n_keep < 0 || !im.cache->can_keep_prefix(n_keep, n_past())) {
        clear();
        return n_keep <= 0;
    }
    im.history.resize(static_cast<size_t>(n_keep));
    im.last_logits.clear();
    return true;
}

void Context::clear() {
    impl_->history.clear();
    impl_->last_logits.clear();
}

uint64_t Context::kv_bytes_per_position() const { return impl_->cache->bytes_per_position(); }
uint64_t Context::kv_bytes() const { return impl_->cache->allocated_bytes(); }

void Context::set_tensor_hook(TensorHook hook) { impl_->forward->set_debug_hook(std::move(hook)); }

}  // namespace kiln
