// find_tokens / token_neighbors (kiln/vocab.h).
#include "kiln/vocab.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

namespace {

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

}  // namespace

std::vector<TokenId> find_tokens(const Tokenizer& tok, std::string_view text, size_t limit) {
    if (text.empty()) throw Error("vocabulary search: empty text", ErrorKind::InvalidInput);
    const std::string needle = ascii_lower(text);
    std::vector<TokenId> groups[3];
    for (size_t id = 0; id < tok.n_vocab(); ++id) {
        const std::string piece = ascii_lower(tok.token_piece(static_cast<TokenId>(id), true));
        const size_t at = piece.find(needle);
        if (at == std::string::npos) continue;
        groups[piece.size() == needle.size() ? 0 : at == 0 ? 1 : 2].push_back(static_cast<TokenId>(id));
    }
    std::vector<TokenId> out;
    for (auto& g : groups)
        for (TokenId id : g) {
            if (out.size() >= limit) return out;
            out.push_back(id);
        }
    return out;
}

std::vector<TokenNeighbor> token_neighbors(const gguf::File& file, TokenId token, size_t k) {
    const gguf::TensorInfo* t = file.find_tensor("token_embd.weight");
    if (!t) throw Error(file.path() + ": no tensor 'token_embd.weight' (the embedding matrix)", ErrorKind::InvalidInput);
    if (!quant::can_dequantize(t->type))
        throw Error(file.path() + ": tensor 'token_embd.weight': no dequantizer for type " + std::string(ggml_type_name(t->type)),
                    ErrorKind::Unsupported);
    const uint64_t n_embd = t->shape[0], n_rows = t->n_rows();
    if (token < 0 || static_cast<uint64_t>(token) >= n_rows)
        throw Error("token " + std::to_string(token) + " is outside 'token_embd.weight' (" + std::to_string(n_rows) + " rows)",
                    ErrorKind::InvalidInput);
    const uint64_t row_bytes = ggml_row_bytes(t->type, n_embd);
    const uint8_t* base = file.tensor_data(*t);
    std::vector<float> q(n_embd), row(n_embd);
    quant::dequantize_row(t->type, base + static_cast<uint64_t>(token) * row_bytes, q.data(), static_cast<int64_t>(n_embd));
    double qn = 0;
    for (float x : q) qn += static_cast<double>(x) * x;
    if (qn == 0) throw Error("token " + std::to_string(token) + " has an all-zero embedding row", ErrorKind::InvalidInput);
    qn = std::sqrt(qn);
    std::vector<TokenNeighbor> all;
    all.reserve(n_rows);
    for (uint64_t r = 0; r < n_rows; ++r) {
        if (r == static_cast<uint64_t>(token)) continue;
        quant::dequantize_row(t->type, base + r * row_bytes, row.data(), static_cast<int64_t>(n_embd));
        double dot = 0, rn = 0;
        for (uint64_t i = 0; i < n_embd; ++i) {
            dot += static_cast<double>(q[i]) * row[i];
            rn += static_cast<double>(row[i]) * row[i];
        }
        if (rn == 0) continue;
        all.push_back({static_cast<TokenId>(r), dot / (qn * std::sqrt(rn))});
    }
    const size_t n = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(), [](const TokenNeighbor& a, const TokenNeighbor& b) {
        return a.similarity != b.similarity ? a.similarity > b.similarity : a.id < b.id;
    });
    all.resize(n);
    return all;
}

}  // namespace kiln
