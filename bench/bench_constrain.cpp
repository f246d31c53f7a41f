// Mask computation speed: the time of GrammarMatcher::fill_allowed at every
// step of walks through valid documents, on a real vocabulary (p50 / p99 /
// mean / max), plus compile and trie-build times. Prints figures; not a test.
//
//   bench_constrain [VOCAB.gguf] [ROUNDS] [cpu]
// With `cpu`, each mask is timed by the thread's CPU clock instead of the wall
// clock: on a shared machine a descheduled thread then does not count.
// VOCAB defaults to ggml-vocab-qwen2.gguf (151k tokens) in $KILN_VOCABS or
// ~/.cache/kiln/vocabs (tools/fetch_llamacpp_vocabs.sh puts it there).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct Case {
    const char* name;
    const char* kind;  // "schema" or "gbnf"
    const char* grammar;
    const char* document;
};

const Case k_cases[] = {
    {"enum + integer + bool", "schema",
     R"({"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":14},
        "hourly":{"type":"boolean"}},"required":["unit","days","hourly"],"additionalProperties":false})",
     R"({"unit": "celsius", "days": 7, "hourly": false})"},
    {"free strings (worst case)", "schema",
     R"({"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title","body"],"additionalProperties":false})",
     R"({"title": "A short note on masks", "body": "Constrained decoding walks a trie of the vocabulary with the matcher state, and prunes every subtree whose prefix fails."})"},
    {"nested + arrays + formats", "schema",
     R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"created":{"type":"string","format":"date-time"},
        "items":{"type":"array","minItems":1,"maxItems":5,"items":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"},
        "qty":{"type":"integer","minimum":1},"price":{"type":"number","minimum":0}},"required":["sku","qty","price"],"additionalProperties":false}}},
        "required":["id","created","items"]})",
     R"({"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "created": "2024-05-01T12:00:00Z", "items": [{"sku": "ABC-1234", "qty": 2, "price": 9.5}, {"sku": "XYZ-0001", "qty": 1, "price": 120}]})"},
    {"any JSON (gbnf)", "gbnf",
     R"(root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] )* "\""
number ::= "-"? [0-9]+ ("." [0-9]+)?
ws ::= [ \t\n]{0,8})",
     R"({"a": [1, 2.5, {"b": "text with words"}], "c": null})"},
};

}  // namespace

int main(int argc, char** argv) {
    std::string path;
    if (argc > 1) {
        path = argv[1];
    } else {
        const char* env = std::getenv("KILN_VOCABS");
        const char* home = std::getenv("HOME");
        path = std::string(env && *env ? env : std::string(home ? home : ".") + "/.cache/kiln/vocabs") + "/ggml-vocab-qwen2.gguf";
    }
    const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    const bool cpu_clock = argc > 3 && std::string(argv[3]) == "cpu";
    try {
        auto t = Clock::now();
        const kiln::Tokenizer tok = kiln::Tokenizer::load(path);
        const double load_ms = us_since(t) / 1000;
        t = Clock::now();
        const kiln::TokenVocabulary vocab = kiln::TokenVocabulary::from_tokenizer(tok);
        const double trie_ms = us_since(t) / 1000;
        std::printf("vocabulary %s: %zu tokens, trie %zu nodes (tokenizer load %.0f ms, trie build %.1f ms)\n", path.c_str(),
                    vocab.n_vocab(), vocab.n_trie_nodes(), load_ms, trie_ms);
        std::printf("%-28s %9s %7s %9s %9s %9s %9s %9s\n", "case", "compile", "masks", "p50 us", "p99 us", "mean us", "max us", "allowed");
        for (const Case& c : k_cases) {
            t = Clock::now();
            const kiln::Grammar g = std::string(c.kind) == "gbnf" ? kiln::Grammar::from_gbnf(c.grammar)
                                                                  : kiln::Grammar::from_json_schema(c.grammar);
            const double compile_us = us_since(t);
            const std::vector<kiln::TokenId> ids = tok.encode(c.document, kiln::EncodeOptions{.add_special = false, .parse_special = false});
            std::vector<double> times;
            double allowed = 0;
            kiln::TokenMask mask;
            for (int r = 0; r < rounds; ++r) {
                kiln::GrammarMatcher m(g, vocab);
                for (kiln::TokenId id : ids) {
                    t = Clock::now();
                    const double cpu0 = cpu_clock ? thread_cpu_us() : 0;
                    m.fill_allowed(mask);
                    times.push_back(cpu_clock ? thread_cpu_us() - cpu0 : us_since(t));
                    allowed += static_cast<double>(mask.count());
                    if (!m.accept_token(id)) {
                        std::string piece(vocab.piece(id));
                        if (!m.accept_bytes(piece.substr(piece.find_first_not_of(' ')))) {
                            std::fprintf(stderr, "case '%s': token %d '%s' not accepted\n", c.name, id, piece.c_str());
                            return 1;
                        }
                    }
                }
            }
            std::vector<double> sorted = times;
            std::sort(sorted.begin(), sorted.end());
            auto pct = [&](double p) { return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())))]; };
            double sum = 0;
            for (double x : times) sum += x;
            std::printf("%-28s %7.2fms %7zu %9.1f %9.1f %9.1f %9.1f %9.0f\n", c.name, compile_us / 1000, times.size(), pct(0.5), pct(0.99),
                        sum / static_cast<double>(times.size()), sorted.back(), allowed / static_cast<double>(times.size()));
        }
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "bench_constrain: %s\n", e.what());
        return 1;
    }
    return 0;
}
