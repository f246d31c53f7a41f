// What a JSON Schema constraint adds to one sampling step, the only part of a
// decode step it changes: Sampler::sample + accept, greedy, with and without the
// schema's grammar stage, on the model's vocabulary, interleaved token by token
// along a document's tokens (logits random, the document's token made the best,
// so both samplers pick it and the constrained one walks the document).
//
//   constrain_sampling MODEL.gguf SCHEMA.json DOCUMENT.json [ROUNDS]
//
// Prints per-token means (thread CPU time, µs) of the free and constrained steps
// and their difference, for the first request with the schema (a Grammar
// compiled afresh, its walker cold) and for later ones (the same Grammar: its
// matchers start from the pooled walker). Divide the difference by a decode
// step's time (kiln bench) for the constraint's share of decoding.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/sampling.h"
#include "kiln/tokenizer.h"

namespace {

double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

std::string read_file(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw kiln::Error(std::string("cannot open ") + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: constrain_sampling MODEL.gguf SCHEMA.json DOCUMENT.json [ROUNDS]\n");
        return 2;
    }
    const int rounds = argc > 4 ? std::max(1, std::atoi(argv[4])) : 5;
    try {
        const kiln::Tokenizer tok = kiln::Tokenizer::load(argv[1]);
        const kiln::TokenVocabulary vocab = kiln::TokenVocabulary::from_tokenizer(tok);
        const std::string schema = read_file(argv[2]);
        std::string doc = read_file(argv[3]);
        while (!doc.empty() && (doc.back() == '\n' || doc.back() == '\r')) doc.pop_back();
        const std::vector<kiln::TokenId> ids = tok.encode(doc, kiln::EncodeOptions{.add_special = false, .parse_special = false});
        const int n_vocab = static_cast<int>(tok.n_vocab());
        std::mt19937 rng(7);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        std::vector<std::vector<float>> logits(ids.size(), std::vector<float>(static_cast<size_t>(n_vocab)));
        for (size_t i = 0; i < ids.size(); ++i) {
            for (float& l : logits[i]) l = normal(rng);
            logits[i][static_cast<size_t>(ids[i])] = 100.0f;
        }
        std::optional<kiln::Grammar> grammar;
        for (const bool warm : {false, true}) {
            double free_us = 0, constrained_us = 0;
            size_t steps = 0;
            for (int r = 0; r < rounds; ++r) {
                kiln::JsonSchemaOptions fresh;
                fresh.reuse_compiled = false;
                if (!warm || !grammar) grammar = kiln::Grammar::from_json_schema(schema, fresh);
                kiln::Sampler free(kiln::SamplingParams::greedy(), n_vocab), constrained(kiln::SamplingParams::greedy(), n_vocab);
                constrained.add_constraint(kiln::grammar_stage(*grammar, vocab));
                for (size_t i = 0; i < ids.size(); ++i) {
                    double t0 = thread_cpu_us();
                    const int32_t a = free.sample(logits[i]);
                    free.accept(a);
                    double t1 = thread_cpu_us();
                    const int32_t b = constrained.sample(logits[i]);
                    constrained.accept(b);
                    double t2 = thread_cpu_us();
                    if (a != ids[i] || b != ids[i]) throw kiln::Error("the document's token " + std::to_string(ids[i]) + " was not picked");
                    free_us += t1 - t0;
                    constrained_us += t2 - t1;
                    ++steps;
                }
            }
            std::printf("%s: %zu steps, free %.1f us/token, constrained %.1f us/token, constraint adds %.1f us/token\n",
                        warm ? "schema compiled before (warm)" : "first request (cold)", steps, free_us / steps,
                        constrained_us / steps, (constrained_us - free_us) / steps);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "constrain_sampling: %s\n", e.what());
        return 1;
    }
    return 0;
}
