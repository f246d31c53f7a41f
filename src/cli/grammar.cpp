// kiln grammar (--json-schema F | --gbnf F | --regex R) [-m MODEL] [--check TEXTFILE] [--print-gbnf]
//
// Compiles a constraint, the tool to debug a schema or grammar (as llama.cpp's
// gbnf-validator is). Exit status: 0 compiled (with --check: the text is a
// complete match), 1 the text is rejected or incomplete (the byte offset is
// printed), 2 the constraint is refused or invalid (the construct is named), or
// the command line or a file is wrong. Without -m the check is at byte level;
// with -m the text is tokenized with the model's tokenizer and fed token by token
// through the allowed-token masks, as generation would.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/tokenizer.h"

namespace kiln::cli {

namespace {

constexpr int k_exit_ok = 0;
constexpr int k_exit_no_match = 1;
constexpr int k_exit_refused = 2;

// The bytes around `offset`, escaped for one line of output.
std::string context(std::string_view text, size_t offset) {
    const size_t from = offset > 30 ? offset - 30 : 0;
    std::string out;
    auto put = [&](std::string_view part) {
        for (unsigned char c : part) {
            if (c == '\n') out += "\\n";
            else if (c == '\t') out += "\\t";
            else if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02X", c);
                out += buf;
            } else out += static_cast<char>(c);
        }
    };
    put(text.substr(from, offset - from));
    out += " >>> ";
    put(text.substr(offset, 20));
    return out;
}

int report(MatchResult r, std::string_view text) {
    switch (r.status) {
        case MatchStatus::Complete:
            std::printf("complete match (%zu bytes)\n", text.size());
            return k_exit_ok;
        case MatchStatus::Incomplete:
            std::printf("incomplete: all %zu bytes accepted, the grammar needs more\n", text.size());
            return k_exit_no_match;
        case MatchStatus::Rejected:
            std::printf("rejected at byte %zu: %s\n", r.offset, context(text, r.offset).c_str());
            return k_exit_no_match;
    }
    return k_exit_no_match;
}

// Feeds the text's tokens through the masks; the result is as validate()'s, with
// the offset at the start of the first token not allowed.
MatchResult check_tokens(const Grammar& g, const Tokenizer& tok, std::string_view text, double& mask_us, size_t& n_masks) {
    const TokenVocabulary vocab = TokenVocabulary::from_tokenizer(tok);
    GrammarMatcher m(g, vocab);
    TokenMask mask;
    const std::vector<TokenId> ids = tok.encode(text, EncodeOptions{.add_special = false, .parse_special = false});
    size_t offset = 0;
    mask_us = 0;
    n_masks = 0;
    for (TokenId id : ids) {
        const auto t0 = std::chrono::steady_clock::now();
        m.fill_allowed(mask);
        mask_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        ++n_masks;
        std::string_view piece = vocab.piece(id);
        // SentencePiece puts a space before the first word; generation after a
        // prompt has none there, so it is accepted as bytes without the space.
        if (offset == 0 && !mask.allowed(id) && !piece.empty() && piece[0] == ' ' && tok.scheme() == TokenizerScheme::SentencePiece) {
            if (!m.accept_bytes(piece.substr(1))) return {MatchStatus::Rejected, 0};
            offset += piece.size() - 1;
            continue;
        }
        if (!mask.allowed(id) || !m.accept_token(id)) return {MatchStatus::Rejected, offset};
        offset += piece.size();
    }
    return {m.is_complete() ? MatchStatus::Complete : MatchStatus::Incomplete, text.size()};
}

}  // namespace

int cmd_grammar(int argc, char** argv) {
    CLI::App app{"Compile a structured-output constraint and check a text against it", "grammar"};
    std::string schema_file, gbnf_file, regex, model, check_file;
    bool print_gbnf = false;
    auto* js = app.add_option("--json-schema", schema_file, "JSON Schema file");
    auto* gb = app.add_option("--gbnf", gbnf_file, "GBNF grammar file (llama.cpp syntax, rule 'root')");
    auto* rx = app.add_option("--regex", regex, "regular expression the whole text must match");
    js->excludes(gb)->excludes(rx);
    gb->excludes(rx);
    app.add_option("-m,--model", model, "GGUF file whose tokenizer feeds --check token by token");
    app.add_option("--check", check_file, "text file to check against the constraint");
    app.add_flag("--print-gbnf", print_gbnf, "print the compiled grammar as GBNF");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc == 0 ? k_exit_ok : k_exit_refused;
    if (js->count() + gb->count() + rx->count() != 1) {
        std::fprintf(stderr, "kiln grammar: give one of --json-schema, --gbnf, --regex\n");
        return k_exit_refused;
    }

    std::optional<Grammar> grammar;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        if (js->count()) {
            // --check accepts any JSON whitespace, whatever generation would allow.
            JsonSchemaOptions options;
            options.any_whitespace = !check_file.empty();
            grammar = Grammar::from_json_schema(read_text_file(schema_file), options);
        } else if (gb->count()) {
            grammar = Grammar::from_gbnf(read_text_file(gbnf_file));
        } else {
            grammar = Grammar::from_regex(regex);
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "kiln grammar: refused: %s\n", e.what());
        return k_exit_refused;
    }
    const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (print_gbnf) std::fputs(grammar->to_gbnf().c_str(), stdout);
    std::fprintf(stderr, "compiled: %zu rules in %.2f ms\n", grammar->n_rules(), compile_ms);
    if (check_file.empty()) return k_exit_ok;

    std::string text;
    try {
        text = read_text_file(check_file);
    } catch (const Error& e) {
        std::fprintf(stderr, "kiln grammar: %s\n", e.what());
        return k_exit_refused;
    }
    if (js->count() && !text.empty() && text.back() == '\n') {
        text.pop_back();  // one trailing newline, as editors write files
        if (!text.empty() && text.back() == '\r') text.pop_back();
    }
    if (model.empty()) return report(validate(*grammar, text), text);

    try {
        const Tokenizer tok = Tokenizer::load(resolve_model(model));
        double mask_us = 0;
        size_t n_masks = 0;
        const MatchResult r = check_tokens(*grammar, tok, text, mask_us, n_masks);
        if (n_masks) std::fprintf(stderr, "%zu masks over %zu tokens, mean %.1f us\n", n_masks, tok.n_vocab(), mask_us / static_cast<double>(n_masks));
        return report(r, text);
    } catch (const Error& e) {
        std::fprintf(stderr, "kiln grammar: %s\n", e.what());
        return k_exit_refused;
    }
}

}  // namespace kiln::cli
