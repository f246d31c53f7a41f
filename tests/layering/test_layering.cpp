// The layer order of docs/ARCHITECTURE.md, checked on the include lines: a file
// in src/<folder> includes only its own folder, the folders below it, and the
// public headers that those folders implement; the CLI (and the server) include
// nothing of src/ but their own files; public headers include only public ones.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// Each folder of src/ and what it may include, lowest first.
const std::map<std::string, std::set<std::string>> k_allowed = {
    {"gguf", {}},
    {"quant", {"gguf"}},
    {"compute", {"quant", "gguf"}},
    {"cache", {"compute", "quant", "gguf"}},
    {"tokenizer", {"gguf"}},
    {"model", {"cache", "compute", "quant", "gguf", "tokenizer"}},
    {"sampling", {"gguf"}},
    {"constrain", {"sampling", "tokenizer", "gguf"}},
    {"engine", {"model", "cache", "compute", "quant", "gguf", "tokenizer", "sampling", "constrain"}},
    {"chat/jinja", {"gguf"}},
    {"chat", {"chat/jinja", "engine", "model", "cache", "compute", "quant", "gguf", "tokenizer", "sampling", "constrain"}},
    {"catalog", {"engine", "model", "cache", "compute", "quant", "gguf", "tokenizer", "sampling", "constrain"}},
    {"server", {}},  // the public API only
    {"cli", {}},     // the public API only
};

// The folder that implements each public header.
std::string public_layer(const std::string& header) {
    static const std::map<std::string, std::string> k = {
        {"kiln/error.h", "gguf"},       {"kiln/quant.h", "quant"},          {"kiln/executor.h", "compute"},
        {"kiln/system.h", "compute"},   {"kiln/tokenizer.h", "tokenizer"},  {"kiln/model.h", "model"},
        {"kiln/model_card.h", "model"}, {"kiln/sampling.h", "sampling"},    {"kiln/constraint.h", "constrain"},
        {"kiln/context.h", "engine"},   {"kiln/engine.h", "engine"},        {"kiln/embedding.h", "engine"},        {"kiln/jinja.h", "chat/jinja"},
        {"kiln/chat_template.h", "chat"}, {"kiln/reply.h", "chat"},         {"kiln/reply_format.h", "chat"},
        {"kiln/tool_grammar.h", "chat"},
        {"kiln/chat.h", "chat"},        {"kiln/server.h", "server"},
        {"kiln/probe.h", "engine"},     {"kiln/vocab.h", "model"},          {"kiln/imatrix.h", "engine"},
        {"kiln/agent.h", "chat"},       {"kiln/mcp.h", "chat"},
        {"kiln/chat.h", "chat"},        {"kiln/server.h", "server"},        {"kiln/memory_plan.h", "engine"},
        {"kiln/catalog.h", "catalog"},  {"kiln/config.h", "catalog"},       {"kiln/pull.h", "catalog"},
    };
    if (header.rfind("kiln/gguf/", 0) == 0) return "gguf";
    auto it = k.find(header);
    return it == k.end() ? "" : it->second;
}

// src/chat/jinja/x.cpp -> "chat/jinja"; src/compute/kernels/x.cpp -> "compute".
std::string folder_layer(const std::string& rel) {
    if (rel.rfind("chat/jinja/", 0) == 0) return "chat/jinja";
    return rel.substr(0, rel.find('/'));
}

std::vector<std::string> quoted_includes(const fs::path& file) {
    static const std::regex inc(R"re(^\s*#\s*include\s*"([^"]+)")re");
    std::vector<std::string> out;
    std::ifstream in(file);
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, inc)) out.push_back(m[1]);
    return out;
}

bool source(const fs::path& p) { return p.extension() == ".h" || p.extension() == ".cpp"; }

}  // namespace

TEST(Layering, SourceFoldersIncludeOnlyDownward) {
    const fs::path src = fs::path(KILN_SOURCE_DIR) / "src";
    int checked = 0;
    std::vector<std::string> violations;
    for (const auto& e : fs::recursive_directory_iterator(src)) {
        if (!e.is_regular_file() || !source(e.path())) continue;
        const std::string rel = fs::relative(e.path(), src).generic_string();
        const std::string layer = folder_layer(rel);
        auto allowed = k_allowed.find(layer);
        if (allowed == k_allowed.end()) {
            violations.push_back(rel + ": folder '" + layer + "' has no place in the layer order (add it here and to docs/ARCHITECTURE.md)");
            continue;
        }
        for (const std::string& inc : quoted_includes(e.path())) {
            ++checked;
            std::string target;
            if (inc.rfind("kiln/", 0) == 0) {
                if (layer == "cli" || layer == "server") continue;  // every public header is theirs to use
                target = public_layer(inc);
                if (target.empty()) {
                    violations.push_back(rel + ": includes " + inc + ", a public header with no layer here");
                    continue;
                }
            } else if (fs::exists(e.path().parent_path() / inc)) {
                target = layer;  // beside the file
            } else {
                target = folder_layer(inc);
                if (layer == "cli" || layer == "server") {
                    violations.push_back(rel + ": includes " + inc + " (the " + layer + " uses include/kiln only)");
                    continue;
                }
            }
            if (target != layer && !allowed->second.count(target))
                violations.push_back(rel + ": includes " + inc + " (" + target + ") above its layer " + layer);
        }
    }
    for (const auto& v : violations) ADD_FAILURE() << v;
    EXPECT_GT(checked, 200);
}

TEST(Layering, PublicHeadersIncludeOnlyPublicHeaders) {
    const fs::path inc = fs::path(KILN_SOURCE_DIR) / "include";
    for (const auto& e : fs::recursive_directory_iterator(inc)) {
        if (!e.is_regular_file() || !source(e.path())) continue;
        for (const std::string& i : quoted_includes(e.path()))
            EXPECT_EQ(i.rfind("kiln/", 0), 0u) << e.path().generic_string() << " includes " << i;
    }
}
