// The explorer's server side (web/explore.html): the models the server offers,
// a model's GGUF front parsed here (the same shape the page's own parser gives
// for a dropped file), long metadata arrays by page, exact weight previews
// (kiln dequant's values), the vocabulary and the resident-model cache.
//
// A model is named, never given by path: only the server's -m files and the
// .gguf files of its --models folders can be opened.
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "kiln/gguf/file.h"
#include "kiln/quant.h"
#include "kiln/vocab.h"
#include "routes.h"

namespace kiln::server {

namespace {

void reply_json(httplib::Response& res, const Json& j) { res.set_content(json_text(j), "application/json"); }

// The path of a model the server lists, by its name or file name; 400 for
// anything that looks like a path, 404 for names it does not list.
ModelCache::Available listed_model(ServerState& state, const Json& body) {
    auto name = get_string(body, "model");
    if (!name || name->empty()) throw bad_field("model", "missing (a name from GET /explore/models)");
    if (name->find_first_of("/\\") != std::string::npos || name->find('\0') != std::string::npos || *name == "." || *name == "..")
        throw ApiError(400, "'model': '" + *name + "' is a path; name one of the models the server lists (GET /explore/models)",
                       "model", "invalid_value");
    std::string names;
    for (const auto& a : state.models->available()) {
        if (a.name == *name || std::filesystem::path(a.path).filename().string() == *name) return a;
        names += (names.empty() ? "" : ", ") + a.name;
    }
    throw ApiError(404, "model '" + *name + "' not found; available: " + names, "model", "model_not_found");
}

Json value_json(const gguf::Value& v) {
    using gguf::ValueType;
    switch (v.type()) {
        case ValueType::I8:
        case ValueType::I16:
        case ValueType::I32:
        case ValueType::I64: return v.raw_i64();
        case ValueType::U8:
        case ValueType::U16:
        case ValueType::U32:
        case ValueType::U64: return v.raw_u64();
        case ValueType::F32:
        case ValueType::F64: return std::isfinite(v.raw_f64()) ? Json(v.raw_f64()) : Json(std::to_string(v.raw_f64()));
        case ValueType::Bool: return v.raw_bool();
        case ValueType::String: return v.raw_string();
        case ValueType::Array: return nullptr;  // arrays are paged (array_page)
    }
    return nullptr;
}

// Elements of an array sent with the metadata: numeric arrays up to k_whole_numeric
// whole (per-layer values: the card needs them all), others their first k_array_preview.
constexpr uint64_t k_array_preview = 32;
constexpr uint64_t k_whole_numeric = 4096;

Json array_page(const gguf::File& file, const gguf::Value& v, uint64_t offset, uint64_t count) {
    Json values = Json::array();
    if (offset < v.count()) {
        const std::vector<gguf::Value> items = file.read_array(v);
        const uint64_t end = std::min<uint64_t>(v.count(), offset + count);
        for (uint64_t i = offset; i < end; ++i) values.push_back(value_json(items[i]));
    }
    return values;
}

std::string type_name(gguf::ValueType t) {
    using gguf::ValueType;
    switch (t) {
        case ValueType::U8: return "u8";
        case ValueType::I8: return "i8";
        case ValueType::U16: return "u16";
        case ValueType::I16: return "i16";
        case ValueType::U32: return "u32";
        case ValueType::I32: return "i32";
        case ValueType::F32: return "f32";
        case ValueType::Bool: return "bool";
        case ValueType::String: return "string";
        case ValueType::Array: return "array";
        case ValueType::U64: return "u64";
        case ValueType::I64: return "i64";
        case ValueType::F64: return "f64";
    }
    return "?";
}

}  // namespace

void handle_explore_models(ServerState& state, const httplib::Request&, httplib::Response& res) {
    Json data = Json::array();
    for (const auto& a : state.models->available()) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(a.path, ec);
        data.push_back({{"name", a.name},
                        {"file", std::filesystem::path(a.path).filename().string()},
                        {"file_size", ec ? 0 : size},
                        {"loaded", a.loaded},
                        {"default", a.name == state.models->default_name()}});
    }
    reply_json(res, {{"models", data}});
}

void handle_explore_open(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const auto model = listed_model(state, parse_body(req.body));
    const gguf::File file = gguf::File::open(model.path);
    Json metadata = Json::array();
    for (const auto& [key, v] : file.metadata().entries()) {
        Json e = {{"key", key}, {"type", type_name(v.type())}};
        if (v.type() == gguf::ValueType::Array) {
            e["elem_type"] = type_name(v.elem_type());
            e["count"] = v.count();
            const bool numeric = v.elem_type() != gguf::ValueType::String && v.elem_type() != gguf::ValueType::Array;
            e["values"] = array_page(file, v, 0, numeric && v.count() <= k_whole_numeric ? k_whole_numeric : k_array_preview);
        } else {
            e["value"] = value_json(v);
        }
        metadata.push_back(std::move(e));
    }
    Json tensors = Json::array();
    for (const gguf::TensorInfo& t : file.tensors())
        tensors.push_back({{"name", t.name},
                           {"type", std::string(ggml_type_name(t.type))},
                           {"type_id", static_cast<uint32_t>(t.type)},
                           {"shape", t.shape},
                           {"elements", t.n_elements()},
                           {"offset", t.offset},
                           {"bytes", t.bytes},
                           {"shard", t.shard}});
    const gguf::ShardInfo& s0 = file.shards().front();
    reply_json(res, {{"model", model.name},
                     {"file", std::filesystem::path(model.path).filename().string()},
                     {"version", file.version()},
                     {"alignment", file.alignment()},
                     {"file_size", file.total_file_size()},
                     {"n_shards", file.shards().size()},
                     {"data_offset", s0.data_offset},
                     {"front_bytes_read", file.front_bytes_read()},
                     {"metadata", metadata},
                     {"tensors", tensors}});
}

void handle_explore_array(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const auto model = listed_model(state, body);
    auto key = get_string(body, "key");
    if (!key) throw bad_field("key", "missing");
    const uint64_t offset = static_cast<uint64_t>(get_int(body, "offset", 0, 1LL << 40).value_or(0));
    const uint64_t count = static_cast<uint64_t>(get_int(body, "count", 1, 10000).value_or(100));
    const gguf::File file = gguf::File::open(model.path);
    const gguf::Value* v = file.metadata().find(*key);
    if (!v) throw ApiError(404, "metadata key '" + *key + "' is not in " + model.name, "key", "not_found");
    if (v->type() != gguf::ValueType::Array) throw bad_field("key", "'" + *key + "' is not an array");
    reply_json(res, {{"key", *key}, {"count", v->count()}, {"offset", offset}, {"values", array_page(file, *v, offset, count)}});
}

// A tensor's values as `kiln dequant` gives them (quant::dequantize_row on each
// row): a run of `count` values from element `offset`, a `rows` x `cols` slice
// from (`row`, `col`) for the heat-map, and min / max / mean / std and a
// histogram over every element.
void handle_explore_tensor(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const auto model = listed_model(state, body);
    auto name = get_string(body, "tensor");
    if (!name) throw bad_field("tensor", "missing");
    const gguf::File file = gguf::File::open(model.path);
    const gguf::TensorInfo* t = file.find_tensor(*name);
    if (!t) throw ApiError(404, "tensor '" + *name + "' is not in " + model.name, "tensor", "not_found");
    if (!quant::can_dequantize(t->type))
        throw ApiError(400, "tensor '" + *name + "': no dequantizer for type " + std::string(ggml_type_name(t->type)), "tensor",
                       "unsupported");
    const uint64_t row_len = t->shape[0], n_rows = t->n_rows(), n = t->n_elements();
    const uint64_t offset = static_cast<uint64_t>(get_int(body, "offset", 0, 1LL << 50).value_or(0));
    const uint64_t count = static_cast<uint64_t>(get_int(body, "count", 0, 65536).value_or(256));
    const uint64_t row0 = static_cast<uint64_t>(get_int(body, "row", 0, 1LL << 50).value_or(0));
    const uint64_t col0 = static_cast<uint64_t>(get_int(body, "col", 0, 1LL << 50).value_or(0));
    const uint64_t rows = static_cast<uint64_t>(get_int(body, "rows", 1, 256).value_or(64));
    const uint64_t cols = static_cast<uint64_t>(get_int(body, "cols", 1, 256).value_or(64));
    const int bins = static_cast<int>(get_int(body, "bins", 1, 1024).value_or(64));
    if (offset > n) throw bad_field("offset", "beyond the tensor's " + std::to_string(n) + " elements");

    const uint64_t row_bytes = ggml_row_bytes(t->type, row_len);
    const uint8_t* base = file.tensor_data(*t);
    std::vector<float> row(row_len);
    Json values = Json::array(), slice = Json::array();
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    uint64_t n_nonfinite = 0;
    // Two passes over the rows: the histogram needs min and max first.
    for (uint64_t r = 0; r < n_rows; ++r) {
        quant::dequantize_row(t->type, base + r * row_bytes, row.data(), static_cast<int64_t>(row_len));
        const uint64_t e0 = r * row_len;
        for (uint64_t i = 0; i < row_len; ++i) {
            const float x = row[i];
            if (e0 + i >= offset && e0 + i < offset + count) values.push_back(x);
            if (!std::isfinite(x)) {
                ++n_nonfinite;
                continue;
            }
            sum += x;
            sq += static_cast<double>(x) * x;
            mn = std::min<double>(mn, x);
            mx = std::max<double>(mx, x);
        }
        if (r >= row0 && r < row0 + rows) {
            Json line = Json::array();
            for (uint64_t c = col0; c < std::min(row_len, col0 + cols); ++c) line.push_back(row[c]);
            slice.push_back(std::move(line));
        }
    }
    const uint64_t n_finite = n - n_nonfinite;
    const double mean = n_finite ? sum / static_cast<double>(n_finite) : 0;
    std::vector<uint64_t> hist(static_cast<size_t>(bins));
    if (n_finite) {
        const double width = mx > mn ? (mx - mn) / bins : 1;
        for (uint64_t r = 0; r < n_rows; ++r) {
            quant::dequantize_row(t->type, base + r * row_bytes, row.data(), static_cast<int64_t>(row_len));
            for (float x : row) {
                if (!std::isfinite(x)) continue;
                const int b = std::min(bins - 1, static_cast<int>((x - mn) / width));
                ++hist[static_cast<size_t>(b)];
            }
        }
    }
    reply_json(res, {{"tensor", t->name},
                     {"type", std::string(ggml_type_name(t->type))},
                     {"shape", t->shape},
                     {"offset", offset},
                     {"values", values},
                     {"slice", {{"row", row0}, {"col", col0}, {"values", slice}}},
                     {"stats",
                      {{"n", n},
                       {"nonfinite", n_nonfinite},
                       {"min", n_finite ? Json(mn) : Json(nullptr)},
                       {"max", n_finite ? Json(mx) : Json(nullptr)},
                       {"mean", mean},
                       {"std", n_finite ? std::sqrt(std::max(0.0, sq / static_cast<double>(n_finite) - mean * mean)) : 0.0}}},
                     {"histogram", {{"min", n_finite ? mn : 0}, {"max", n_finite ? mx : 0}, {"counts", hist}}}});
}

// {model, find: TEXT} tokens whose piece contains TEXT; {model, id: N} one
// token; {model, neighbors: N, k} the nearest tokens in the embedding matrix.
void handle_explore_vocab(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const auto listed = listed_model(state, body);
    std::shared_ptr<LoadedModel> held = state.models->get(listed.name);
    const Tokenizer& tok = held->model->tokenizer();
    const long long n_vocab = static_cast<long long>(tok.n_vocab());
    auto token_json = [&](TokenId id) {
        return Json{{"id", id}, {"piece", std::string(tok.token_piece(id, true))}, {"text", std::string(tok.token_text(id))},
                    {"score", tok.token_score(id)}, {"control", tok.is_control(id)}};
    };
    Json out = {{"model", listed.name}, {"n_vocab", n_vocab}};
    if (auto text = get_string(body, "find")) {
        const size_t limit = static_cast<size_t>(get_int(body, "limit", 1, 1000).value_or(50));
        Json tokens = Json::array();
        for (TokenId id : find_tokens(tok, *text, limit)) tokens.push_back(token_json(id));
        out["tokens"] = tokens;
    } else if (auto id = get_int(body, "id", 0, n_vocab - 1)) {
        out["tokens"] = Json::array({token_json(static_cast<TokenId>(*id))});
    } else if (auto nb = get_int(body, "neighbors", 0, n_vocab - 1)) {
        const size_t k = static_cast<size_t>(get_int(body, "k", 1, 200).value_or(10));
        const gguf::File file = gguf::File::open(held->model->path());
        Json tokens = Json::array();
        for (const TokenNeighbor& t : token_neighbors(file, static_cast<TokenId>(*nb), k)) {
            Json j = token_json(t.id);
            j["similarity"] = t.similarity;
            tokens.push_back(std::move(j));
        }
        out["token"] = token_json(static_cast<TokenId>(*nb));
        out["tokens"] = tokens;
    } else {
        throw ApiError(400, "give 'find' (text), 'id' or 'neighbors' (a token id)", "find", "invalid_value");
    }
    reply_json(res, out);
}

// The resident models with the memory each holds: its file's bytes (mapped or
// repacked) plus its sequences' memory.
void handle_explore_cache(ServerState& state, const httplib::Request&, httplib::Response& res) {
    const ModelCacheStats s = state.models->stats();
    Json models = Json::array();
    for (const auto& m : state.models->loaded()) {
        std::error_code ec;
        const uint64_t file = std::filesystem::file_size(m->model->path(), ec);
        const uint64_t seq = m->scheduler->memory_bytes();
        models.push_back({{"name", m->name},
                          {"architecture", m->model->architecture()},
                          {"file_bytes", ec ? 0 : file},
                          {"sequence_bytes", seq},
                          {"bytes", (ec ? 0 : file) + seq},
                          {"n_ctx", m->scheduler->n_ctx()},
                          {"loaded_at", m->created}});
    }
    reply_json(res, {{"resident", s.resident}, {"capacity", s.capacity}, {"bytes", s.bytes}, {"hits", s.hits},
                     {"loads", s.loads}, {"evictions", s.evictions}, {"models", models}});
}

}  // namespace kiln::server
