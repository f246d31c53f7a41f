// kiln vocab [-m FILE] --find TEXT | --neighbors TOKEN [-k N] [--json]: tokens of
// the vocabulary by text, or a token's nearest neighbours in the embedding
// matrix (cosine similarity of token_embd.weight rows). TOKEN is an id, or a
// token's exact text. Reads the tokenizer and the one tensor, loads no model.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/tokenizer.h"
#include "kiln/vocab.h"

namespace kiln::cli {

namespace {

// A piece as one printable line: control characters escaped.
std::string shown(std::string_view piece) {
    std::string out;
    for (unsigned char c : piece) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += static_cast<char>(c);
    }
    return out;
}

}  // namespace

int cmd_vocab(int argc, char** argv) {
    CLI::App app{"Search a model's vocabulary, or a token's nearest neighbours in the embedding matrix", "vocab"};
    std::string model, find, neighbors;
    size_t k = 10, limit = 50;
    bool json = false;
    app.add_option("-m,--model", model, "GGUF file (default: the model setup installed)");
    auto* f = app.add_option("--find", find, "tokens whose text contains TEXT (ASCII case-insensitive)");
    auto* n = app.add_option("--neighbors", neighbors, "nearest tokens to TOKEN (an id or a token's exact text)");
    f->excludes(n);
    app.add_option("-k", k, "neighbours to list")->check(CLI::Range(1, 10000));
    app.add_option("--limit", limit, "most matches --find lists")->check(CLI::Range(1, 1000000));
    app.add_flag("--json", json, "print JSON");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (find.empty() && neighbors.empty()) throw Error("give --find TEXT or --neighbors TOKEN");

    const gguf::File file = gguf::File::open(resolve_model(model));
    const Tokenizer tok = Tokenizer::from_gguf(file);
    nlohmann::json out = nlohmann::json::array();
    if (!find.empty()) {
        for (TokenId id : find_tokens(tok, find, limit)) {
            const std::string piece(tok.token_piece(id, true));
            if (json) out.push_back({{"id", id}, {"piece", piece}});
            else std::printf("%d\t%s\n", id, shown(piece).c_str());
        }
        if (json) std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    TokenId token = k_no_token;
    if (neighbors.find_first_not_of("0123456789") == std::string::npos) {
        const long long v = std::stoll(neighbors);
        if (v >= static_cast<long long>(tok.n_vocab()))
            throw Error("--neighbors " + neighbors + ": outside the vocabulary (" + std::to_string(tok.n_vocab()) + " tokens)");
        token = static_cast<TokenId>(v);
    } else {
        token = tok.find_token(neighbors);
        if (token == k_no_token) throw Error("--neighbors '" + neighbors + "': no token has exactly this text (try --find)");
    }
    for (const TokenNeighbor& t : token_neighbors(file, token, k)) {
        const std::string piece(tok.token_piece(t.id, true));
        if (json) out.push_back({{"id", t.id}, {"piece", piece}, {"similarity", t.similarity}});
        else std::printf("%d\t%.6f\t%s\n", t.id, t.similarity, shown(piece).c_str());
    }
    if (json) std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
}

}  // namespace kiln::cli
