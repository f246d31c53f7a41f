#include "tokenizer/tokenizer_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

#include "support/test_support.h"

namespace kiln::test {

namespace fs = std::filesystem;

std::string shared_vocab_dir() { return data_path("shared/tokenizer"); }

std::string cached_vocab_dir() {
    if (const char* env = std::getenv("KILN_VOCABS"); env && *env) return env;
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.cache/kiln/vocabs";
}

std::string vocab_path(const std::string& name) {
    for (const std::string& dir : {shared_vocab_dir(), cached_vocab_dir()}) {
        std::string p = dir + "/ggml-vocab-" + name + ".gguf";
        if (fs::exists(p)) return p;
    }
    return "";
}

std::vector<std::string> all_vocab_names() {
    std::set<std::string> names = {"aquila",  "baichuan", "bert-bge",       "command-r", "deepseek-coder",
                                   "deepseek-llm", "falcon", "gemma-4",     "gpt-2",     "gpt-neox",
                                   "llama-bpe", "llama-spm", "mpt",         "nomic-bert-moe", "phi-3",
                                   "qwen2",   "qwen35",   "refact",         "starcoder"};
    for (const std::string& dir : {shared_vocab_dir(), cached_vocab_dir()}) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            std::string f = e.path().filename().string();
            const std::string prefix = "ggml-vocab-", suffix = ".gguf";
            if (f.size() > prefix.size() + suffix.size() && f.rfind(prefix, 0) == 0 &&
                f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
                names.insert(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
        }
    }
    return {names.begin(), names.end()};
}

const Tokenizer& cached_tokenizer(const std::string& path) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(path);
    if (it == cache.end())
        it = cache.emplace(path, std::make_unique<Tokenizer>(Tokenizer::load(
                                     path, TokenizerLoadOptions{.require_end_of_generation = false})))
                 .first;
    return *it->second;
}

std::vector<VocabVector> read_vectors(const std::string& name) {
    std::string inp, out;
    for (const std::string& dir : {cached_vocab_dir(), shared_vocab_dir()}) {
        // The cached copies come with the sdist's vocab: prefer them when present.
        std::string base = dir + "/ggml-vocab-" + name + ".gguf";
        if (fs::exists(base + ".inp") && fs::exists(base + ".out") && fs::exists(base)) {
            inp = read_file(base + ".inp");
            out = read_file(base + ".out");
            break;
        }
    }
    if (inp.empty()) {
        std::string base = shared_vocab_dir() + "/ggml-vocab-" + name + ".gguf";
        if (!fs::exists(base + ".inp")) return {};
        inp = read_file(base + ".inp");
        out = read_file(base + ".out");
    }
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    size_t pos = 0;
    while (true) {
        size_t hit = inp.find(sep, pos);
        if (hit == std::string::npos) {
            if (pos < inp.size()) texts.push_back(inp.substr(pos));
            break;
        }
        texts.push_back(inp.substr(pos, hit - pos));
        pos = hit + sep.size();
    }
    std::vector<VocabVector> v;
    std::istringstream lines(out);
    std::string line;
    for (const std::string& t : texts) {
        if (!std::getline(lines, line)) break;
        VocabVector vv{t, {}};
        std::istringstream ids(line);
        for (TokenId id; ids >> id;) vv.ids.push_back(id);
        v.push_back(std::move(vv));
    }
    return v;
}

std::string format_ids(const std::vector<TokenId>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

std::string escape_text(const std::string& text) {
    std::string s;
    for (unsigned char c : text) {
        if (c == '\n') s += "\\n";
        else if (c == '\t') s += "\\t";
        else if (c == '\r') s += "\\r";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            s += buf;
        } else s.push_back(static_cast<char>(c));
    }
    return s;
}

}  // namespace kiln::test
