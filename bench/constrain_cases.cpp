// kiln's side of bench/constrain_vs_engines.py: reads cases (one JSON object a
// line) and writes one result line each, so that the script can put kiln beside
// llguidance and XGrammar on the same schemas, documents and token sequences.
//
//   constrain_cases VOCAB.gguf CASES.jsonl [ROUNDS]
//
// A case: {"id", "schema": <schema or its text>, "tokens": [ids of a valid
// document] (or "document": its text, tokenized here), "instances": [{"text", "valid"}]}. A result: {"id", "compiled",
// "error", "compile_ms" (median of ROUNDS: JSON Schema -> grammar, with the
// generation whitespace policy, plus a matcher), "mask_us" (every fill_allowed of
// every round, thread CPU time, a Grammar compiled afresh each round),
// "mask_warm_us" (one more walk with the last round's Grammar: its walker is
// warm), "walk_ok" (every
// token of the document was allowed), "accepted" (per instance: validate() with
// any JSON whitespace, as `kiln grammar --check` reads a document)}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/tokenizer.h"

namespace {

using json = nlohmann::json;

double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

json run_case(const json& c, const kiln::Tokenizer& tok, const kiln::TokenVocabulary& vocab, int rounds) {
    json out{{"id", c.value("id", "")}};
    const std::string schema = c["schema"].is_string() ? c["schema"].get<std::string>() : c["schema"].dump();
    kiln::JsonSchemaOptions fresh;
    fresh.reuse_compiled = false;  // every compile timed, every cold round cold
    std::vector<double> compile_ms;
    std::optional<kiln::Grammar> g;
    try {
        for (int r = 0; r < rounds; ++r) {
            const double t0 = thread_cpu_us();
            g = kiln::Grammar::from_json_schema(schema, fresh);
            const kiln::GrammarMatcher m(*g, vocab);
            compile_ms.push_back((thread_cpu_us() - t0) / 1000);
        }
    } catch (const kiln::Error& e) {
        out["compiled"] = false;
        out["error"] = e.what();
        return out;
    }
    out["compiled"] = true;
    std::sort(compile_ms.begin(), compile_ms.end());
    out["compile_ms"] = compile_ms[compile_ms.size() / 2];

    std::vector<double> mask_us;
    bool walk_ok = true;
    std::vector<kiln::TokenId> tokens = c.value("tokens", std::vector<kiln::TokenId>{});
    if (!c.contains("tokens") && c.contains("document"))
        tokens = tok.encode(c["document"].get<std::string>(), kiln::EncodeOptions{.add_special = false, .parse_special = false});
    kiln::TokenMask mask;
    auto walk = [&](const kiln::Grammar& grammar, std::vector<double>& times) {
        kiln::GrammarMatcher m(grammar, vocab);
        for (kiln::TokenId id : tokens) {
            const double t0 = thread_cpu_us();
            m.fill_allowed(mask);
            times.push_back(thread_cpu_us() - t0);
            if (id < 0 || static_cast<size_t>(id) >= vocab.n_vocab() || !mask.allowed(id) || !m.accept_token(id)) return false;
        }
        return true;
    };
    // Cold: each round a Grammar compiled afresh (a request with a new schema),
    // so nothing is reused between rounds. Warm: one more walk with the last
    // round's Grammar, whose matcher starts from the walker the previous one gave
    // back (a request with a schema already compiled).
    for (int r = 0; r < rounds && walk_ok; ++r) {
        g = kiln::Grammar::from_json_schema(schema, fresh);
        walk_ok = walk(*g, mask_us);
    }
    std::vector<double> warm_us;
    if (walk_ok) walk(*g, warm_us);
    out["mask_us"] = mask_us;
    out["mask_warm_us"] = warm_us;
    out["walk_ok"] = walk_ok;

    kiln::JsonSchemaOptions check;
    check.any_whitespace = true;
    const kiln::Grammar checker = kiln::Grammar::from_json_schema(schema, check);
    std::vector<bool> accepted;
    for (const json& inst : c.value("instances", json::array()))
        accepted.push_back(kiln::validate(checker, inst["text"].get<std::string>()).status == kiln::MatchStatus::Complete);
    out["accepted"] = accepted;
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: constrain_cases VOCAB.gguf CASES.jsonl [ROUNDS]\n");
        return 2;
    }
    const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
    try {
        const kiln::Tokenizer tok = kiln::Tokenizer::load(argv[1]);
        const kiln::TokenVocabulary vocab = kiln::TokenVocabulary::from_tokenizer(tok);
        std::ifstream in(argv[2]);
        if (!in) throw kiln::Error(std::string("cannot open ") + argv[2]);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            std::printf("%s\n", run_case(json::parse(line), tok, vocab, rounds).dump(-1, ' ', false, json::error_handler_t::replace).c_str());
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "constrain_cases: %s\n", e.what());
        return 1;
    }
    return 0;
}
