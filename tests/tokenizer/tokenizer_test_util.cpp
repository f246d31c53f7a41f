#include "tokenizer/tokenizer_test_util.h"

#include <lzma.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
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

const Tokenizer& cached_tokenizer(const std::string& path, TokenizerCompat compat) {
    static std::mutex mu;
    static std::map<std::pair<std::string, TokenizerCompat>, std::unique_ptr<Tokenizer>> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto key = std::make_pair(path, compat);
    auto it = cache.find(key);
    if (it == cache.end())
        it = cache.emplace(key, std::make_unique<Tokenizer>(Tokenizer::load(
                                    path, TokenizerLoadOptions{.compat = compat, .require_end_of_generation = false})))
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


namespace kiln::test {

namespace {

// Decompresses an .xz file to `out` (once per process).
bool unxz(const std::string& in_path, const std::string& out_path, std::string& why) {
    std::ifstream in(in_path, std::ios::binary);
    if (!in) {
        why = "cannot read " + in_path;
        return false;
    }
    std::ofstream out(out_path + ".tmp", std::ios::binary);
    lzma_stream s = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&s, UINT64_MAX, 0) != LZMA_OK) {
        why = "lzma_stream_decoder failed";
        return false;
    }
    std::vector<uint8_t> ibuf(1 << 16), obuf(1 << 16);
    lzma_action action = LZMA_RUN;
    lzma_ret ret = LZMA_OK;
    while (ret == LZMA_OK) {
        if (s.avail_in == 0 && action == LZMA_RUN) {
            in.read(reinterpret_cast<char*>(ibuf.data()), static_cast<std::streamsize>(ibuf.size()));
            s.next_in = ibuf.data();
            s.avail_in = static_cast<size_t>(in.gcount());
            if (in.eof()) action = LZMA_FINISH;
        }
        s.next_out = obuf.data();
        s.avail_out = obuf.size();
        ret = lzma_code(&s, action);
        out.write(reinterpret_cast<const char*>(obuf.data()), static_cast<std::streamsize>(obuf.size() - s.avail_out));
    }
    lzma_end(&s);
    out.close();
    if (ret != LZMA_STREAM_END) {
        why = "xz decoding of " + in_path + " failed (" + std::to_string(ret) + ")";
        return false;
    }
    fs::rename(out_path + ".tmp", out_path);
    return true;
}

}  // namespace

std::string fixture_vocab_path(const std::string& key, std::string& why) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    std::string path;
    if (key.rfind("ggml-vocab-", 0) == 0) {
        path = vocab_path(key.substr(11));
        if (path.empty()) why = key + ".gguf not found (run tools/fetch_llamacpp_vocabs.sh)";
    } else if (key == "model-smollm2" || key == "model-gemma3") {
        path = key == "model-smollm2" ? smollm2_path() : gemma3_path();
        why = missing_reason(path);
        if (!why.empty()) path.clear();
    } else if (key.rfind("hf-", 0) == 0) {
        path = temp_dir() + "/" + key + ".gguf";
        if (!fs::exists(path) && !unxz(golden_path("tokenizer/vocabs/" + key + ".gguf.xz"), path, why)) path.clear();
    } else {
        why = "unknown vocabulary key " + key;
    }
    return path;
}

const std::string& corpus_text(const std::string& id) {
    static const std::map<std::string, std::string> corpus = [] {
        std::map<std::string, std::string> m;
        nlohmann::json j = nlohmann::json::parse(read_file(golden_path("tokenizer/corpus.json")));
        for (const auto& e : j) {
            std::string text;
            if (e.contains("text")) {
                text = e["text"].get<std::string>();
            } else {
                const std::string hex = e["hex"].get<std::string>();
                for (size_t i = 0; i + 1 < hex.size(); i += 2) text.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
            }
            m[e["id"].get<std::string>()] = text;
        }
        return m;
    }();
    static const std::string none;
    auto it = corpus.find(id);
    return it == corpus.end() ? none : it->second;
}

std::vector<std::string> golden_keys(const std::string& dir) {
    std::vector<std::string> keys;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(golden_path("tokenizer/" + dir), ec)) {
        std::string f = e.path().filename().string();
        if (f.size() > 5 && f.compare(f.size() - 5, 5, ".json") == 0) keys.push_back(f.substr(0, f.size() - 5));
    }
    std::sort(keys.begin(), keys.end());
    return keys;
}

}  // namespace kiln::test
