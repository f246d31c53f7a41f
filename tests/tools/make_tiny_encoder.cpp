// Writes one tiny random encoder (tests/support/tiny_encoders.h); used by
// tools/tiny_embedding_fixtures.py to give llama.cpp the exact file the tests build.
//   make_tiny_encoder NAME VOCAB_SOURCE.gguf OUT.gguf
//   make_tiny_encoder --list   (name, description, vocabulary file per line; then the texts, one per line after "texts")
#include <cstdio>
#include <string>

#include "support/tiny_encoders.h"

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (const auto& e : kiln::test::tiny_encoders())
            std::printf("%s\t%s\t%s\n", e.name.c_str(), e.description.c_str(), kiln::test::tiny_encoder_vocab(e.name).c_str());
        std::printf("texts\n");
        for (const auto& t : kiln::test::tiny_encoder_texts()) std::printf("%s\n", t.c_str());
        return 0;
    }
    if (argc != 4) {
        std::fprintf(stderr, "usage: make_tiny_encoder NAME VOCAB_SOURCE.gguf OUT.gguf | --list\n");
        return 1;
    }
    try {
        kiln::test::write_tiny_encoder(argv[1], argv[2], argv[3]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_tiny_encoder: %s\n", e.what());
        return 1;
    }
    return 0;
}
