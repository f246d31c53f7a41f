// Writes one tiny random model (tests/support/tiny_models.h); used by
// tools/tiny_model_fixtures.py to give llama.cpp the exact file the tests build.
//   make_tiny_model FAMILY TOKENIZER_SOURCE.gguf OUT.gguf
//   make_tiny_model --list
//   make_tiny_model --requantize TYPE SRC.gguf OUT.gguf   (tests/support/requantize.h; tools/lowbit_fixtures.py)
#include <cstdio>
#include <string>

#include "kiln/error.h"
#include "support/requantize.h"
#include "support/tiny_models.h"

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (const auto& f : kiln::test::tiny_model_families()) std::printf("%s\t%s\t%s\n", f.family.c_str(), f.description.c_str(), f.kv_type.c_str());
        std::printf("prompt");
        for (int32_t t : kiln::test::tiny_model_prompt()) std::printf(" %d", t);
        std::printf("\n");
        return 0;
    }
    if (argc == 5 && std::string(argv[1]) == "--requantize") {
        try {
            const kiln::GgmlTypeInfo* t = kiln::find_ggml_type(argv[2]);
            if (!t) throw kiln::Error(std::string("unknown type ") + argv[2]);
            const int n = kiln::test::requantize_layers(argv[3], argv[4], t->type);
            std::printf("%d tensors re-encoded as %s\n", n, argv[2]);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "make_tiny_model: %s\n", e.what());
            return 1;
        }
        return 0;
    }
    if (argc != 4) {
        std::fprintf(stderr, "usage: make_tiny_model FAMILY TOKENIZER_SOURCE.gguf OUT.gguf | --list\n");
        return 1;
    }
    try {
        kiln::test::write_tiny_model(argv[1], argv[2], argv[3]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_tiny_model: %s\n", e.what());
        return 1;
    }
    return 0;
}
