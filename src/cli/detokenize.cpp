// kiln detokenize -m FILE [--special] ID...
#include <charconv>
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/tokenizer.h"

namespace kiln::cli {

int cmd_detokenize(int argc, char** argv) {
    CLI::App app{"Turn token ids back into text with a GGUF file's tokenizer", "detokenize"};
    std::string model;
    std::vector<std::string> args;
    bool special = false;
    app.add_option("-m,--model", model, "GGUF file (a vocab-only one is enough; default: the SmolLM2 model)");
    app.add_flag("--special", special, "show control tokens (BOS, EOS, ...) as their text");
    app.add_option("ids", args, "token ids")->required();
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    std::vector<TokenId> ids;
    for (const std::string& a : args) {
        TokenId id = 0;
        auto r = std::from_chars(a.data(), a.data() + a.size(), id);
        if (r.ec != std::errc() || r.ptr != a.data() + a.size()) throw Error("not a token id: '" + a + "'");
        ids.push_back(id);
    }
    Tokenizer tok = Tokenizer::load(resolve_model(model), TokenizerLoadOptions{.require_end_of_generation = false});
    std::string text = tok.decode(ids, DecodeOptions{.show_special = special});
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::printf("\n");
    return 0;
}

}  // namespace kiln::cli
