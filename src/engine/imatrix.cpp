// Importance matrices: llama.cpp's file formats and the collection over a text
// (kiln/imatrix.h).
#include "kiln/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/model.h"

namespace kiln {

namespace {

constexpr const char* k_in_sum2 = ".in_sum2";
constexpr const char* k_counts = ".counts";

bool strip_suffix(std::string& s, std::string_view suffix) {
    if (!s.ends_with(suffix)) return false;
    s.resize(s.size() - suffix.size());
    return true;
}

std::vector<float> f32_tensor(const gguf::File& file, const gguf::TensorInfo& t, const std::string& path) {
    if (t.type != GgmlType::F32)
        throw Error("imatrix: " + path + ": " + t.name + " is " + std::string(ggml_type_name(t.type)) + ", not F32");
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    std::memcpy(v.data(), file.tensor_data(t), v.size() * sizeof(float));
    return v;
}

Imatrix load_gguf(const std::string& path) {
    gguf::File file = gguf::File::open(path);
    const gguf::Metadata& md = file.metadata();
    if (md.has("general.type") && md.get_string("general.type") != "imatrix")
        throw Error("imatrix: " + path + " is a GGUF of general.type '" + md.get_string("general.type") + "', not an imatrix");
    if (!md.has("imatrix.chunk_size") || !md.has("imatrix.chunk_count") || !md.has("imatrix.datasets"))
        throw Error("imatrix: " + path + " lacks the imatrix.datasets / imatrix.chunk_count / imatrix.chunk_size keys (not an imatrix file?)");
    Imatrix im;
    im.datasets = file.read_strings("imatrix.datasets");
    im.chunk_count = md.get_u32("imatrix.chunk_count");
    im.chunk_size = md.get_u32("imatrix.chunk_size");
    std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> parts;
    for (const gguf::TensorInfo& t : file.tensors()) {
        std::string name = t.name;
        if (strip_suffix(name, k_in_sum2))
            parts[name].first = &t;
        else if (strip_suffix(name, k_counts))
            parts[name].second = &t;
        else
            throw Error("imatrix: " + path + ": tensor " + t.name + " is neither NAME.in_sum2 nor NAME.counts");
    }
    if (parts.empty()) throw Error("imatrix: " + path + " holds no entries");
    for (const auto& [name, p] : parts) {
        if (!p.first || !p.second) throw Error("imatrix: " + path + ": " + name + " has " + (p.first ? "sums but no counts" : "counts but no sums"));
        ImatrixEntry e;
        e.sums = f32_tensor(file, *p.first, path);
        const std::vector<float> counts = f32_tensor(file, *p.second, path);
        if (counts.empty() || e.sums.size() % counts.size() != 0)
            throw Error("imatrix: " + path + ": " + name + " has " + std::to_string(e.sums.size()) + " sums for " +
                        std::to_string(counts.size()) + " matrices");
        for (float c : counts) {
            if (!(c >= 0.0f) || c > 9.0e15f) throw Error("imatrix: " + path + ": " + name + " has a count of " + std::to_string(c));
            e.counts.push_back(std::lround(c));
        }
        for (float v : e.sums)
            if (!std::isfinite(v)) throw Error("imatrix: " + path + ": " + name + " holds a non-finite sum");
        im.entries.emplace(name, std::move(e));
    }
    return im;
}

// llama.cpp's first format: int32 entry count; per entry int32 name length, the
// name, int32 calls, int32 value count, float values (mean squares x calls);
// then, optionally, int32 chunks and int32 length + the dataset's name.
Imatrix load_legacy(const std::string& path, std::ifstream& in) {
    const auto file_size = static_cast<uint64_t>(in.seekg(0, std::ios::end).tellg());
    in.seekg(0);
    auto read_i32 = [&](const char* what) {
        int32_t v = 0;
        if (!in.read(reinterpret_cast<char*>(&v), 4)) throw Error("imatrix: " + path + " ends inside " + std::string(what));
        return v;
    };
    Imatrix im;
    im.legacy = true;
    const int32_t n_entries = read_i32("the entry count");
    if (n_entries < 1 || static_cast<uint64_t>(n_entries) > file_size / 12)
        throw Error("imatrix: " + path + " is neither a GGUF nor a legacy imatrix (entry count " + std::to_string(n_entries) + ")");
    for (int32_t i = 0; i < n_entries; ++i) {
        const int32_t len = read_i32("an entry's name length");
        if (len < 1 || len > 4096) throw Error("imatrix: " + path + ": entry " + std::to_string(i) + " has a name of " + std::to_string(len) + " bytes");
        std::string name(static_cast<size_t>(len), '\0');
        if (!in.read(name.data(), len)) throw Error("imatrix: " + path + " ends inside entry " + std::to_string(i) + "'s name");
        const int32_t ncall = read_i32("an entry's call count");
        const int32_t nval = read_i32("an entry's value count");
        if (ncall < 0 || nval < 1 || static_cast<uint64_t>(nval) * 4 > file_size)
            throw Error("imatrix: " + path + ": " + name + " has " + std::to_string(nval) + " values and " + std::to_string(ncall) + " calls");
        ImatrixEntry e;
        e.sums.resize(static_cast<size_t>(nval));
        if (!in.read(reinterpret_cast<char*>(e.sums.data()), static_cast<std::streamsize>(nval) * 4))
            throw Error("imatrix: " + path + " ends inside " + name + "'s values");
        e.counts = {ncall};
        im.entries[name] = std::move(e);
    }
    if (in.peek() != EOF) {
        im.chunk_count = static_cast<uint32_t>(std::max(0, read_i32("the chunk count")));
        int32_t len = 0;
        if (in.read(reinterpret_cast<char*>(&len), 4) && len > 0 && len < 1 << 20) {
            std::string dataset(static_cast<size_t>(len), '\0');
            if (in.read(dataset.data(), len)) im.datasets.push_back(dataset);
        }
    }
    return im;
}

}  // namespace

Imatrix Imatrix::load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("imatrix: cannot open " + path);
    char magic[4] = {};
    in.read(magic, 4);
    if (in && std::memcmp(magic, "GGUF", 4) == 0) return load_gguf(path);
    in.clear();
    return load_legacy(path, in);
}

void Imatrix::save(const std::string& path) const {
    gguf::Writer w;
    std::vector<gguf::Value> names;
    for (const std::string& d : datasets) names.push_back(gguf::Value::string(d));
    w.metadata().add("general.type", gguf::Value::string("imatrix"));
    w.metadata().add("imatrix.datasets", gguf::Value::array(gguf::ValueType::String, std::move(names)));
    w.metadata().add("imatrix.chunk_count", gguf::Value::u32(chunk_count));
    w.metadata().add("imatrix.chunk_size", gguf::Value::u32(chunk_size));
    for (const auto& [name, e] : entries) {  // std::map: name order
        const uint64_t n_mat = e.counts.size(), n_in = n_mat ? e.sums.size() / n_mat : 0;
        if (n_mat == 0 || n_in * n_mat != e.sums.size()) throw Error("imatrix: entry " + name + " has sums that do not fill its matrices");
        std::vector<uint8_t> sums(e.sums.size() * 4), counts(n_mat * 4);
        std::memcpy(sums.data(), e.sums.data(), sums.size());
        for (size_t m = 0; m < n_mat; ++m) {
            const float c = static_cast<float>(e.counts[m]);
            std::memcpy(counts.data() + 4 * m, &c, 4);
        }
        w.add_tensor(name + k_in_sum2, GgmlType::F32, {n_in, n_mat}, std::move(sums));
        w.add_tensor(name + k_counts, GgmlType::F32, {1, n_mat}, std::move(counts));
    }
    w.write(path);
}

std::vector<float> Imatrix::importance(const std::string& tensor) const {
    auto it = entries.find(tensor);
    if (it == entries.end()) return {};
    const ImatrixEntry& e = it->second;
    std::vector<float> out(e.sums.size());
    if (legacy) {
        // Already means x calls: divide by the calls (llama-quantize's reading).
        const float ncall = e.counts.empty() ? 0.0f : static_cast<float>(e.counts[0]);
        for (size_t i = 0; i < out.size(); ++i) out[i] = ncall > 0 ? e.sums[i] / ncall : e.sums[i];
        return out;
    }
    const size_t n_in = e.sums.size() / e.counts.size();
    for (size_t m = 0; m < e.counts.size(); ++m) {
        const float count = static_cast<float>(e.counts[m]);
        for (size_t j = 0; j < n_in; ++j) out[m * n_in + j] = count > 0.0f ? e.sums[m * n_in + j] / count : 1.0f;
    }
    return out;
}

Imatrix compute_imatrix(std::shared_ptr<const Model> model, std::span<const TokenId> tokens, const ImatrixOptions& options,
                        const std::function<void(int, int)>& progress) {
    const int n_ctx = options.n_ctx;
    if (n_ctx < 16) throw Error("imatrix: a chunk of " + std::to_string(n_ctx) + " tokens is too short (at least 16)");
    if (static_cast<int64_t>(tokens.size()) < 2LL * n_ctx)
        throw Error("imatrix: the text has " + std::to_string(tokens.size()) + " tokens; chunks of " + std::to_string(n_ctx) +
                    " need at least " + std::to_string(2LL * n_ctx));
    if (n_ctx > model->n_ctx_train())
        throw Error("imatrix: chunks of " + std::to_string(n_ctx) + " tokens exceed the model's context of " +
                    std::to_string(model->n_ctx_train()));
    const int n_chunk_max = static_cast<int>(tokens.size() / static_cast<size_t>(n_ctx));
    const int n_chunk = options.n_chunks > 0 ? std::min(options.n_chunks, n_chunk_max) : n_chunk_max;
    const Tokenizer& tok = model->tokenizer();
    const bool add_bos = tok.add_bos() && tok.special().bos != k_no_token;

    ContextOptions co;
    co.n_ctx = n_ctx;
    co.n_batch = n_ctx;
    co.n_threads = options.n_threads;
    Context ctx(model, co);
    // Sums in double (llama.cpp sums in float: kiln's are the closer to exact).
    struct Acc {
        std::vector<double> sums;
        std::vector<int64_t> counts;
    };
    std::map<std::string, Acc> acc;
    std::map<std::string, uint64_t> n_mat_of;
    for (const gguf::TensorInfo& t : model->file().tensors())
        n_mat_of[t.name] = t.shape.size() > 2 ? t.shape[2] : 1;
    ctx.set_weight_input_hook([&](const std::string& name, int expert, const float* x, int64_t n_in, int64_t n_rows) {
        if (!(name.starts_with("blk.") || (options.process_output && name == "output.weight"))) return;
        const uint64_t n_mat = n_mat_of[name];
        if (n_mat == 1 && n_rows < 16) return;  // as llama-imatrix: small 2-D products are not collected
        Acc& a = acc[name];
        if (a.sums.empty()) {
            a.sums.assign(static_cast<size_t>(n_in) * n_mat, 0.0);
            a.counts.assign(n_mat, 0);
        }
        if (a.sums.size() != static_cast<size_t>(n_in) * n_mat)
            throw Error("imatrix: " + name + " was seen with inputs of " + std::to_string(n_in) + " columns and " +
                        std::to_string(a.sums.size() / n_mat) + " before");
        double* s = a.sums.data() + static_cast<size_t>(expert) * static_cast<size_t>(n_in);
        for (int64_t r = 0; r < n_rows; ++r) {
            const float* row = x + r * n_in;
            for (int64_t j = 0; j < n_in; ++j) s[j] += static_cast<double>(row[j]) * static_cast<double>(row[j]);
        }
        a.counts[static_cast<size_t>(expert)] += n_rows;
    });

    std::vector<float> logits;
    std::vector<TokenId> chunk(static_cast<size_t>(n_ctx));
    for (int c = 0; c < n_chunk; ++c) {
        std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(c) * n_ctx, n_ctx, chunk.begin());
        if (add_bos) chunk[0] = tok.special().bos;
        ctx.clear();
        ctx.decode(chunk, &logits);  // every row's logits: every layer evaluates every row
        if (progress) progress(c + 1, n_chunk);
    }
    ctx.set_weight_input_hook(nullptr);

    Imatrix im;
    if (!options.dataset.empty()) im.datasets.push_back(options.dataset);
    im.chunk_count = static_cast<uint32_t>(n_chunk);
    im.chunk_size = static_cast<uint32_t>(n_ctx);
    for (auto& [name, a] : acc) {
        ImatrixEntry e;
        e.sums.assign(a.sums.begin(), a.sums.end());
        e.counts = std::move(a.counts);
        im.entries.emplace(name, std::move(e));
    }
    return im;
}

}  // namespace kiln
