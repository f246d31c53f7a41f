#include "constrain/constrain_test_util.h"

#include <cstdlib>
#include <fstream>

#include "kiln/error.h"

namespace kiln::test {

std::string constrain_vocab_path(const std::string& name) {
    const std::string file = "ggml-vocab-" + name + ".gguf";
    std::string cached;
    if (const char* env = std::getenv("KILN_VOCABS"); env && *env) cached = env;
    else cached = std::string(std::getenv("HOME") ? std::getenv("HOME") : ".") + "/.cache/kiln/vocabs";
    for (const std::string& dir : {std::string(KILN_SOURCE_DIR) + "/tests/data/shared/tokenizer", cached}) {
        std::ifstream f(dir + "/" + file);
        if (f) return dir + "/" + file;
    }
    return "";
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace kiln::test
