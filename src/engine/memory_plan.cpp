// The memory plan (kiln/memory_plan.h): a load and a run sized before either
// happens, through the code that sizes them for real — bind_weights in plan mode
// (what is converted, what prepare_matrices repacks), size_context (the KV
// cache after the budget), Forward::scratch_bytes (the forward pass's buffers).
// What no sizing code holds — the process itself, the tokenizer's tables, the
// mapped embedding pages that lookups touch — is measured or modelled here, each
// with its reason.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/context_sizing.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/memory_plan.h"
#include "model/forward.h"
#include "model/nextn.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/weights.h"

namespace kiln {

namespace {

// A field of /proc/<self>/status or /proc/meminfo in bytes ("VmRSS:  9000 kB").
uint64_t proc_kib_field(const char* file, const std::string& field) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) {
            std::istringstream ss(line.substr(field.size() + 1));
            uint64_t kib = 0;
            ss >> kib;
            return kib * 1024;
        }
    return 0;
}

// The tokenizer's tables: each token and merge costs its text plus about 128
// bytes of containers (its string object, the id <-> text hash maps, its score
// and type, a merge's rank entry) — measured on SmolLM2's BPE (49,152 tokens,
// 48,900 merges) and Gemma 3's SentencePiece (262,144 tokens) vocabularies.
uint64_t tokenizer_bytes(const gguf::Metadata& md) {
    constexpr uint64_t k_per_entry = 128;
    uint64_t bytes = 0;
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
        const gguf::Value* v = md.find(key);
        if (!v || v->type() != gguf::ValueType::Array) continue;
        bytes += k_per_entry * v->count() + v->byte_size();
    }
    return bytes;
}

void add(MemoryPlan& p, std::string name, uint64_t bytes, std::string meaning) {
    p.parts.push_back({std::move(name), bytes, std::move(meaning)});
}

}  // namespace

uint64_t available_memory_bytes() { return proc_kib_field("/proc/meminfo", "MemAvailable"); }

namespace {

// The draft loads after the target: its resident parts (less the process, counted
// once) join the run, and its load's peak comes on top of the target's run.
void add_draft_model(MemoryPlan& p, const MemoryPlanOptions& o) {
    MemoryPlanOptions d = o;
    d.draft_model.clear();
    d.memory_budget = 0;  // the budget shortens the target's sequences; the draft follows their context
    d.n_ctx = p.n_ctx;
    {
        const gguf::File f = gguf::File::open(o.draft_model);
        const std::string arch = f.metadata().find_string("general.architecture").value_or("");
        if (const auto trained = f.metadata().find_uint(arch + ".context_length"); trained && *trained > 0)
            d.n_ctx = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(d.n_ctx), *trained));
    }
    const MemoryPlan dp = plan_memory(o.draft_model, d);
    uint64_t process = 0;
    for (const MemoryPart& part : dp.parts)
        if (part.name == "process") process = part.bytes;
    const uint64_t own = dp.run_bytes - std::min(dp.run_bytes, process);
    const uint64_t own_peak = dp.load_peak_bytes - std::min(dp.load_peak_bytes, process);
    add(p, "draft_model", own,
        "the draft model " + o.draft_model + " at " + std::to_string(dp.n_ctx) + " positions: weights, cache and scratch");
    p.load_peak_bytes = std::max(p.load_peak_bytes, p.run_bytes + own_peak);
    p.run_bytes += own;
    p.total_bytes = std::max(p.load_peak_bytes, p.run_bytes);
}

}  // namespace

MemoryPlan plan_memory(const std::string& path, const MemoryPlanOptions& o) {
    MemoryPlan p;
    p.path = path;
    const gguf::File file = gguf::File::open(path);
    const gguf::Metadata& md = file.metadata();
    ResolvedArch resolved;
    try {
        resolved = resolve_architecture(md);  // as Model::load resolves it
    } catch (const Error& e) {
        throw Error(path + ": " + e.what(), e.kind());
    }
    const ArchRow* row = resolved.row;
    p.architecture = std::string(row->name);
    if (!row->configure)
        throw Error(path + ": architecture '" + p.architecture + "' is not supported yet; supported: " + supported_architectures(),
                    ErrorKind::Unsupported);
    ModelSpec spec;
    ModelWeights w;
    ContextSizing z;
    ContextOptions co;
    co.n_ctx = o.n_ctx;
    co.n_seq_max = o.n_seq_max;
    co.kv_type = o.kv_type;
    co.n_batch = o.n_batch;
    co.memory_budget = o.memory_budget;
    try {
        spec = read_model_spec(file, *row, resolved.prefix);
        w = bind_weights(file, spec, /*plan_only=*/true, o.expert_memory_budget);
        z = size_context(spec, co);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what(), e.kind());
    }
    p.n_ctx = static_cast<int>(z.kv.n_ctx);
    p.n_seq_max = o.n_seq_max;
    p.n_batch = z.n_batch;
    p.kv_type = o.kv_type;
    p.file_bytes = file.total_file_size();
    // Sliding layers hold a ring of at most window + batch - 1 cells: this is
    // the cache's bytes per position it holds, not a marginal figure.
    p.kv_bytes_per_position =
        z.memory_bytes / std::max<uint64_t>(1, static_cast<uint64_t>(z.kv.n_ctx) * static_cast<uint64_t>(o.n_seq_max));

    const uint64_t process = proc_kib_field("/proc/self/status", "VmRSS");
    const uint64_t tokenizer = tokenizer_bytes(md);
    const PackPlan& pk = w.pack_plan;
    const uint64_t embd_bytes = w.tok_embd.row_bytes * static_cast<uint64_t>(w.tok_embd.n_out);
    // Mapped tensors read in full while running: everything bound in place but
    // the repacked sources (their pages are released) and the embedding (rows).
    const uint64_t converted_sources = std::min(w.converted_bytes, pk.source_bytes);
    const uint64_t mapped_sources = pk.source_bytes - converted_sources;
    uint64_t mapped_read = w.mapped_bytes;
    mapped_read -= std::min(mapped_read, mapped_sources);
    // Experts read in place: page cache, not a resident requirement.
    p.experts_in_place_bytes = w.in_place_expert_bytes;
    mapped_read -= std::min(mapped_read, w.in_place_expert_bytes);
    // A tied output head reads the whole embedding each step unless it is repacked
    // (then the embedding is one of the released sources). Row lookups read with
    // pread (Matrix::rows_fd): page cache, none of the table's pages mapped.
    const bool tied = w.output.data == w.tok_embd.data;
    const bool embd_source = std::find(pk.sources.begin(), pk.sources.end(), w.tok_embd.data) != pk.sources.end();
    const bool embd_read_whole = tied && !embd_source;
    uint64_t pread_tables = w.lookup_table_bytes;
    if (w.tok_embd_mapped && (embd_source || embd_read_whole)) pread_tables -= std::min(pread_tables, embd_bytes);
    mapped_read -= std::min(mapped_read, pread_tables);
    const int n_threads = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    const uint64_t n_keys = static_cast<uint64_t>(z.kv.n_ctx);
    const uint64_t forward = Forward::scratch_bytes(spec, z.n_batch, n_threads, static_cast<int64_t>(n_keys), z.kv.type == KvType::Q8_0);
    // The Context's own: logits of each sequence's last row and of sequence 0's
    // last token, and each sequence's token history.
    const uint64_t context = sizeof(float) * static_cast<uint64_t>(spec.n_vocab) * (static_cast<uint64_t>(o.n_seq_max) + 1) +
                             sizeof(int32_t) * n_keys * static_cast<uint64_t>(o.n_seq_max);

    add(p, "process", process, "this process before the load (code, libraries, heap): measured");
    add(p, "tokenizer", tokenizer, "token and merge tables");
    add(p, "weights_repacked", pk.packed_bytes, "matrices repacked into the kernels' panel layout (their mapped pages released)");
    if (w.converted_bytes) add(p, "weights_converted", w.converted_bytes, "tensors converted at load to a type the kernels take");
    add(p, "weights_vectors", w.vector_bytes, "f32 vectors (norms, biases) copied out of the mapping");
    add(p, "weights_mapped", mapped_read, "mapped tensors read in place (matrices without a repacked layout)");
    add(p, "kv_cache", z.memory_bytes,
        std::to_string(o.n_seq_max) + " x " + std::to_string(z.kv.n_ctx) + " positions of " + o.kv_type + " keys and values");
    add(p, "scratch", forward + context, "the forward pass's activations for a batch of " + std::to_string(z.n_batch) + ", logits");
    // Recurrent layers: what rolling back into a verification batch keeps (model/ssm.h),
    // for the default draft plus the pending token, per sequence; allocated on the first draft.
    const int log_rows = SpecOptions{}.draft_max + 1;
    if (const uint64_t log = Forward::replay_log_bytes(spec, o.n_seq_max, log_rows))
        add(p, "replay_log", log, "rolling recurrent layers back into a verification of " + std::to_string(log_rows) + " rows, per sequence");
    // The multi-token-prediction head the Engine drafts with (src/engine/mtp_draft.h):
    // its one layer's cells, the trunk's state at every position, its pass's buffers.
    if (const auto head = make_nextn_head(spec, w)) {
        ContextOptions ho = co;
        ho.n_ctx = static_cast<int>(z.kv.n_ctx);
        ho.memory_budget = 0;
        const ContextSizing hz = size_context(head->spec, ho);
        const uint64_t e = static_cast<uint64_t>(spec.n_embd);
        const uint64_t states = sizeof(float) * e * n_keys * static_cast<uint64_t>(o.n_seq_max);
        const uint64_t head_scratch =
            Forward::scratch_bytes(head->spec, hz.n_batch, n_threads, static_cast<int64_t>(n_keys), z.kv.type == KvType::Q8_0) +
            sizeof(float) * (e * static_cast<uint64_t>(z.n_batch) + static_cast<uint64_t>(spec.n_vocab) * static_cast<uint64_t>(o.n_seq_max));
        add(p, "mtp_head", hz.memory_bytes + states + head_scratch,
            "the multi-token-prediction head: its layer's cells, the trunk's final state at every position, its pass's buffers");
    }
    for (const MemoryPart& part : p.parts) p.run_bytes += part.bytes;
    p.window_checkpoints_max_bytes = KvCache::checkpoint_bytes(z.shapes, z.kv) * static_cast<uint64_t>(z.kv.n_checkpoints) *
                                     static_cast<uint64_t>(o.n_seq_max);
    // The load's peak: everything the load keeps, plus the source pages of the
    // matrices being repacked (released as they go: at most a window per thread).
    const uint64_t in_flight = std::min<uint64_t>(pk.source_bytes, static_cast<uint64_t>(n_threads) * (uint64_t{4} << 20));
    p.load_peak_bytes = process + tokenizer + pk.packed_bytes + w.converted_bytes + w.vector_bytes + mapped_read + in_flight;
    p.total_bytes = std::max(p.load_peak_bytes, p.run_bytes);
    if (!o.draft_model.empty()) add_draft_model(p, o);
    return p;
}

std::string plan_refusal(const MemoryPlan& plan, uint64_t limit, const std::string& what, const MemoryPlanOptions& options) {
    if (plan.total_bytes <= limit) return "";
    auto mib = [](uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB"; };
    uint64_t kv = 0, scratch = 0;
    for (const MemoryPart& part : plan.parts) {
        if (part.name == "kv_cache") kv = part.bytes;
        if (part.name == "scratch") scratch = part.bytes;
    }
    std::string msg = plan.path + ": the load needs " + mib(plan.total_bytes) + " (KV cache " + mib(kv) + ", scratch " + mib(scratch) +
                      ", weights, tokenizer and the process " + mib(plan.total_bytes - std::min(plan.total_bytes, kv + scratch)) +
                      "), more than " + what + " of " + mib(limit);
    // The largest context that fits at this cache type, then at q8_0, within 1%
    // less than the limit: the plan's "process" part is measured, and a later
    // process (the one the user starts with the advice) measures a little more.
    const uint64_t target = limit - limit / 100;
    for (const std::string& kv : {plan.kv_type, std::string("q8_0")}) {
        if (kv != plan.kv_type && plan.kv_type == "q8_0") break;
        int lo = 0, hi = plan.n_ctx;
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            MemoryPlanOptions o = options;
            o.n_ctx = mid;
            o.kv_type = kv;
            o.memory_budget = 0;
            if (plan_memory(plan.path, o).total_bytes <= target)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo >= 1) {
            msg += "; -c " + std::to_string(lo) + (kv != plan.kv_type ? " with --kv-type " + kv : "") + " would fit";
            return msg;
        }
    }
    return msg + "; no context fits: the weights alone are too large";
}

}  // namespace kiln
