// kiln tokenize -m FILE (--text T | --file F) [--json] [--pieces] [--no-bos] [--no-special]
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/tokenizer.h"

namespace kiln::cli {

namespace {

// JSON strings must be valid UTF-8: bytes of a partial sequence are shown as <0xHH>.
std::string printable_piece(std::string_view piece) {
    std::string out;
    for (size_t i = 0; i < piece.size();) {
        const auto c = static_cast<unsigned char>(piece[i]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = len > 0 && i + len <= piece.size();
        for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(piece[i + k]) & 0xC0) == 0x80;
        if (ok) {
            out.append(piece, i, len);
            i += len;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", c);
            out += buf;
            i += 1;
        }
    }
    return out;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
    CLI::App app{"Tokenize text with a GGUF file's tokenizer", "tokenize"};
    std::string model, text, file;
    bool json = false, pieces = false, no_bos = false, no_special = false;
    app.add_option("-m,--model", model, "GGUF file (a vocab-only one is enough; default: the SmolLM2 model)");
    auto* t = app.add_option("--text", text, "text to tokenize");
    auto* f = app.add_option("--file", file, "file whose bytes are tokenized");
    t->excludes(f);
    auto* j = app.add_flag("--json", json, "print exactly one JSON array of ids");
    app.add_flag("--pieces", pieces, "print each id with the text it stands for")->excludes(j);
    app.add_flag("--no-bos", no_bos, "do not add BOS / EOS even if the metadata asks for them");
    app.add_flag("--no-special", no_special, "treat special-token text as plain text");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (t->count() == 0 && f->count() == 0) {
        std::fprintf(stderr, "kiln tokenize: give --text or --file\n");
        return 1;
    }
    if (f->count()) {
        std::ifstream in(file, std::ios::binary);
        if (!in) throw Error("cannot read " + file);
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }

    Tokenizer tok = Tokenizer::load(resolve_model(model), TokenizerLoadOptions{.require_end_of_generation = false});
    std::vector<TokenId> ids = tok.encode(text, EncodeOptions{.add_special = !no_bos, .parse_special = !no_special});

    if (json) {
        std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    } else if (pieces) {
        for (TokenId id : ids) {
            nlohmann::json s = printable_piece(tok.token_piece(id, true));
            std::printf("%6d %s\n", id, s.dump().c_str());
        }
    } else {
        for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
        std::printf("\n");
    }
    return 0;
}

}  // namespace kiln::cli
