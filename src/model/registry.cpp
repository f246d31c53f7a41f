#include "model/registry.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "kiln/error.h"
#include "kiln/model.h"
#include "model/arch/families.h"

namespace kiln {

namespace {

// RoPE layout per architecture as llama.cpp assigns it (llama_model_rope_type):
// NORM rotates adjacent pairs, NEOX rotates the two halves of a head.
// name, RoPE, memory, configure (null: known, not runnable), FFN kind.
constexpr ArchRow k_rows[] = {
    {"llama", RopeKind::Norm, MemoryKind::Kv, configure_llama, "gated or experts"},
    {"llama-embed", RopeKind::Norm, MemoryKind::Kv, configure_llama_embed, "gated"},
    {"llama4", RopeKind::Norm, MemoryKind::Kv, configure_llama4, "dense or experts+shared (interleaved)"},
    {"mistral3", RopeKind::Norm, MemoryKind::Kv, configure_mistral3, "gated or experts"},
    {"smollm3", RopeKind::Norm, MemoryKind::Kv, configure_smollm3, "gated"},
    {"granite", RopeKind::Norm, MemoryKind::Kv, configure_granite, "gated"},
    {"granitemoe", RopeKind::Norm, MemoryKind::Kv, configure_granitemoe, "experts (+shared)"},
    {"deepseek", RopeKind::Norm, MemoryKind::Kv, configure_deepseek, "dense, then experts+shared"},
    {"deepseek2", RopeKind::Norm, MemoryKind::Kv, configure_deepseek2, "dense, then experts+shared"},
    {"baichuan", RopeKind::Norm, MemoryKind::Kv, configure_baichuan, "gated"},
    {"starcoder", RopeKind::None, MemoryKind::Kv, configure_gpt2, "plain"},
    {"internlm2", RopeKind::Norm, MemoryKind::Kv, configure_internlm2, "gated"},
    {"minicpm", RopeKind::Norm, MemoryKind::Kv, configure_minicpm, "gated"},
    {"xverse", RopeKind::Norm, MemoryKind::Kv, configure_xverse, "gated"},
    {"command-r", RopeKind::Norm, MemoryKind::Kv, configure_command_r, "gated (parallel block)"},
    {"cohere2", RopeKind::Norm, MemoryKind::Kv, configure_cohere2, "gated (parallel block)"},
    {"olmo", RopeKind::Norm, MemoryKind::Kv, nullptr, "gated"},
    {"arctic", RopeKind::Norm, MemoryKind::Kv, nullptr, "experts"},
    {"chatglm", RopeKind::Norm, MemoryKind::Kv, configure_chatglm, "gated (fused gate-up)"},
    {"glm4", RopeKind::Norm, MemoryKind::Kv, configure_glm4, "gated (fused gate-up)"},
    {"glm4moe", RopeKind::Neox, MemoryKind::Kv, configure_glm4moe, "dense, then experts+shared"},
    {"qwen", RopeKind::Neox, MemoryKind::Kv, configure_qwen, "gated"},
    {"qwen2", RopeKind::Neox, MemoryKind::Kv, configure_qwen2, "gated"},
    {"qwen2moe", RopeKind::Neox, MemoryKind::Kv, configure_qwen2moe, "experts+shared"},
    {"qwen3", RopeKind::Neox, MemoryKind::Kv, configure_qwen3, "gated"},
    {"qwen3moe", RopeKind::Neox, MemoryKind::Kv, configure_qwen3moe, "experts"},
    {"qwen35", RopeKind::Neox, MemoryKind::Hybrid, configure_qwen35, "gated"},
    {"qwen35moe", RopeKind::Neox, MemoryKind::Hybrid, configure_qwen35moe, "experts+shared"},
    {"qwen3next", RopeKind::Neox, MemoryKind::Hybrid, configure_qwen3next, "experts+shared"},
    {"phi2", RopeKind::Neox, MemoryKind::Kv, configure_phi2, "plain (parallel block)"},
    {"gptj", RopeKind::Norm, MemoryKind::Kv, configure_gptj, "plain (parallel block)"},
    {"phi3", RopeKind::Neox, MemoryKind::Kv, configure_phi3, "gated (fused gate-up)"},
    {"phimoe", RopeKind::Neox, MemoryKind::Kv, configure_phimoe, "experts"},
    {"gemma", RopeKind::Neox, MemoryKind::Kv, configure_gemma, "gated"},
    {"gemma2", RopeKind::Neox, MemoryKind::Kv, configure_gemma2, "gated"},
    {"gemma3", RopeKind::Neox, MemoryKind::Kv, configure_gemma3, "gated"},
    {"gemma-embedding", RopeKind::Neox, MemoryKind::Kv, configure_gemma_embedding, "gated"},
    {"gemma3n", RopeKind::Neox, MemoryKind::Kv, nullptr, "gated"},
    {"gemma4", RopeKind::Neox, MemoryKind::Kv, configure_gemma4, "gated (+ per-layer embeddings), or gated + experts"},
    {"gemma4-assistant", RopeKind::Neox, MemoryKind::Kv, configure_gemma4_assistant, "gated (drafts for gemma4, reading its KV cache)"},
    {"falcon", RopeKind::Neox, MemoryKind::Kv, configure_falcon, "plain (parallel block)"},
    {"stablelm", RopeKind::Neox, MemoryKind::Kv, configure_stablelm, "gated (parallel block without ffn_norm)"},
    {"starcoder2", RopeKind::Neox, MemoryKind::Kv, configure_starcoder2, "plain"},
    {"olmo2", RopeKind::Neox, MemoryKind::Kv, configure_olmo2, "gated"},
    {"olmoe", RopeKind::Neox, MemoryKind::Kv, configure_olmoe, "experts"},
    {"dots1", RopeKind::Neox, MemoryKind::Kv, configure_dots1, "dense, then experts+shared"},
    {"gptneox", RopeKind::Neox, MemoryKind::Kv, configure_gptneox, "plain (parallel block or sequential)"},
    {"ernie4_5", RopeKind::Norm, MemoryKind::Kv, configure_ernie4_5, "gated"},
    {"ernie4_5-moe", RopeKind::Norm, MemoryKind::Kv, configure_ernie4_5_moe, "dense, then experts (+shared)"},
    {"exaone", RopeKind::Neox, MemoryKind::Kv, configure_exaone, "gated"},
    {"exaone4", RopeKind::Neox, MemoryKind::Kv, configure_exaone4, "gated"},
    {"orion", RopeKind::Neox, MemoryKind::Kv, configure_orion, "gated"},
    {"seed_oss", RopeKind::Neox, MemoryKind::Kv, configure_seed_oss, "gated"},
    {"hunyuan-dense", RopeKind::Neox, MemoryKind::Kv, configure_hunyuan_dense, "gated"},
    {"hunyuan-moe", RopeKind::Neox, MemoryKind::Kv, configure_hunyuan_moe, "experts+shared"},
    {"bailingmoe2", RopeKind::Neox, MemoryKind::Kv, configure_bailingmoe2, "dense, then experts+shared"},
    {"minimax-m2", RopeKind::Neox, MemoryKind::Kv, configure_minimax_m2, "experts"},
    {"apertus", RopeKind::Neox, MemoryKind::Kv, configure_apertus, "plain (xIELU)"},
    {"arcee", RopeKind::Norm, MemoryKind::Kv, configure_arcee, "plain (squared ReLU)"},
    {"gpt-oss", RopeKind::Neox, MemoryKind::Kv, configure_gpt_oss, "experts"},
    {"gpt2", RopeKind::None, MemoryKind::Kv, configure_gpt2, "plain"},
    {"bert", RopeKind::None, MemoryKind::Kv, configure_bert, "plain"},
    {"nomic-bert", RopeKind::Neox, MemoryKind::Kv, configure_nomic_bert, "gated"},
    {"nomic-bert-moe", RopeKind::Neox, MemoryKind::Kv, configure_nomic_bert_moe, "plain, or experts (ungated GELU)"},
    {"modern-bert", RopeKind::Neox, MemoryKind::Kv, configure_modern_bert, "gated"},
    {"neo-bert", RopeKind::Norm, MemoryKind::Kv, configure_neo_bert, "gated"},
    {"eurobert", RopeKind::Neox, MemoryKind::Kv, configure_eurobert, "gated"},
    {"jina-bert-v2", RopeKind::None, MemoryKind::Kv, configure_jina_bert_v2, "gated or plain"},
    {"mpt", RopeKind::None, MemoryKind::Kv, configure_mpt, "plain"},
    {"bloom", RopeKind::None, MemoryKind::Kv, configure_bloom, "plain"},
    {"mamba", RopeKind::None, MemoryKind::Recurrent, configure_mamba, "none"},
    {"mamba2", RopeKind::None, MemoryKind::Recurrent, configure_mamba2, "none"},
    {"rwkv6", RopeKind::None, MemoryKind::Recurrent, configure_rwkv6, "channel-mix"},
    {"rwkv7", RopeKind::None, MemoryKind::Recurrent, configure_rwkv7, "channel-mix"},
    {"rwkv6qwen2", RopeKind::None, MemoryKind::Recurrent, configure_rwkv6qwen2, "gated"},
    {"arwkv7", RopeKind::None, MemoryKind::Recurrent, configure_arwkv7, "gated"},
    {"t5", RopeKind::None, MemoryKind::Kv, nullptr, "gated"},
    {"jais", RopeKind::None, MemoryKind::Kv, nullptr, "gated"},
    {"lfm2", RopeKind::Neox, MemoryKind::Hybrid, configure_lfm2, "gated"},
    {"refact", RopeKind::None, MemoryKind::Kv, nullptr, "gated"},
    {"nemotron_h", RopeKind::None, MemoryKind::Hybrid, configure_nemotron_h, "plain or none"},
    {"nemotron_h_moe", RopeKind::None, MemoryKind::Hybrid, configure_nemotron_h_moe, "experts+shared (ReLU²) or none"},
    {"granitehybrid", RopeKind::Norm, MemoryKind::Hybrid, configure_granitehybrid, "experts (+shared) or gated"},
    {"falcon-h1", RopeKind::Neox, MemoryKind::Hybrid, configure_falcon_h1, "gated"},
    {"jamba", RopeKind::None, MemoryKind::Hybrid, configure_jamba, "experts or gated"},
};

// Spellings of an architecture that converters and model cards use, each for one
// canonical row with the same graph. The llama spellings name llama's graph:
// Llama 2 / 3, Mistral and Ministral are written as `llama` by llama.cpp's
// converter (mistral3 is its own row: a different graph).
struct Alias {
    std::string_view spelling;
    std::string_view name;
};
constexpr Alias k_aliases[] = {
    {"llama2", "llama"},         {"llama3", "llama"},       {"mistral", "llama"},      {"ministral", "llama"},
    {"codellama", "llama"},      {"cohere", "command-r"},   {"deepseekv2", "deepseek2"},
};

// Lower case, without a Hugging Face class suffix ("Qwen2ForCausalLM" -> "qwen2").
std::string normalized(std::string_view name) {
    std::string s;
    for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::string_view suffix : {"forcausallm", "lmheadmodel", "forconditionalgeneration"})
        if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
            s.resize(s.size() - suffix.size());
            break;
        }
    return s;
}

// Without separators: "command_r", "command-r" and "commandr" compare equal.
std::string squashed(std::string_view name) {
    std::string s;
    for (char c : name)
        if (c != '-' && c != '_' && c != '.') s += c;
    return s;
}

// The row a spelling names: exactly, then normalised, then an alias, then
// ignoring separators (unique among the rows).
const ArchRow* row_for_spelling(std::string_view spelling) {
    if (const ArchRow* r = find_architecture(spelling)) return r;
    const std::string n = normalized(spelling);
    if (const ArchRow* r = find_architecture(n)) return r;
    for (const Alias& a : k_aliases)
        if (squashed(a.spelling) == squashed(n)) return find_architecture(a.name);
    const ArchRow* found = nullptr;
    for (const ArchRow& r : k_rows)
        if (squashed(r.name) == squashed(n)) {
            if (found) return nullptr;
            found = &r;
        }
    return found;
}

// Every prefix P with a `P.block_count` key: the namespaces of hyperparameters
// the file has.
std::vector<std::string> key_namespaces(const gguf::Metadata& md) {
    constexpr std::string_view k_suffix = ".block_count";
    std::vector<std::string> out;
    for (const auto& [key, value] : md.entries())
        if (key.size() > k_suffix.size() && key.compare(key.size() - k_suffix.size(), k_suffix.size(), k_suffix) == 0)
            out.push_back(key.substr(0, key.size() - k_suffix.size()));
    return out;
}

// Architectures with a tiny-model fixture (tests/golden/tiny/<name>[@variant].json),
// listed by the build from the files present.
constexpr std::string_view k_checked[] = {
#include "model/tiny_fixtures.inc"
    "",
};
// Of those, the ones whose fixture comes from an independent reference forward,
// not llama.cpp, which has no graph for them (tools/gptj_reference.py).
constexpr std::string_view k_checked_by_reference[] = {"gptj"};

bool is_vision_projector(const gguf::Metadata& md, std::string_view arch) {
    if (normalized(arch) == "clip" || normalized(arch) == "mmproj") return true;
    for (const auto& [key, value] : md.entries())
        if (key.rfind("clip.", 0) == 0) return true;
    return false;
}

}  // namespace

std::string_view rope_kind_name(RopeKind kind) {
    switch (kind) {
        case RopeKind::None: return "none";
        case RopeKind::Norm: return "norm";
        case RopeKind::Neox: return "neox";
        case RopeKind::Unknown: break;
    }
    return "unknown";
}

std::span<const ArchRow> architecture_rows() { return k_rows; }

std::string supported_architectures() {
    std::vector<std::string_view> names;
    for (const ArchRow& r : k_rows)
        if (r.configure) names.push_back(r.name);
    std::sort(names.begin(), names.end());
    std::string out;
    for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
}

const ArchRow* find_architecture(std::string_view name) {
    for (const ArchRow& r : k_rows)
        if (r.name == name) return &r;
    return nullptr;
}

std::vector<std::string_view> architecture_aliases(std::string_view name) {
    std::vector<std::string_view> out;
    for (const Alias& a : k_aliases)
        if (a.name == name) out.push_back(a.spelling);
    return out;
}

ResolvedArch resolve_architecture(const gguf::Metadata& md) {
    const std::optional<std::string> declared = md.find_string("general.architecture");
    if (is_vision_projector(md, declared.value_or("")))
        throw Error("this is a vision projector (clip / mmproj) file, not a language model: it goes beside the language "
                    "model it was made for, and kiln does not run projectors yet",
                    ErrorKind::Unsupported);
    const std::vector<std::string> spaces = key_namespaces(md);
    auto has_space = [&](std::string_view p) { return std::find(spaces.begin(), spaces.end(), p) != spaces.end(); };
    // The known architectures whose namespace the file has.
    std::vector<std::pair<std::string, const ArchRow*>> known;
    for (const std::string& p : spaces)
        if (const ArchRow* r = row_for_spelling(p)) known.emplace_back(p, r);
    auto unknown = [&](const std::string& what) {
        return Error(what + "; supported: " + supported_architectures(), ErrorKind::Unsupported);
    };

    if (!declared) {
        if (known.size() == 1)
            return {known[0].second, known[0].first + ".",
                    "general.architecture is missing; the hyperparameters are under '" + known[0].first + ".', so it loads as " +
                        std::string(known[0].second->name)};
        if (known.empty()) throw unknown("GGUF metadata key 'general.architecture' not found, and no known architecture's keys either");
        std::string names;
        for (const auto& [p, r] : known) names += (names.empty() ? "" : ", ") + p;
        throw Error("GGUF metadata key 'general.architecture' not found, and the file has the keys of several architectures (" +
                    names + ")");
    }
    const ArchRow* row = row_for_spelling(*declared);
    if (row) {
        // Its keys under the name as written, or under the canonical name.
        if (has_space(*declared))
            return {row, *declared + ".", row->name == *declared ? "" : "architecture '" + *declared + "' resolves to " + std::string(row->name)};
        if (has_space(row->name))
            return {row, std::string(row->name) + ".",
                    row->name == *declared ? "" : "architecture '" + *declared + "' resolves to " + std::string(row->name)};
    }
    // Mislabelled: the name says one thing, the only known namespace another.
    if (known.size() == 1)
        return {known[0].second, known[0].first + ".",
                "general.architecture says '" + *declared + "' but the hyperparameters are under '" + known[0].first +
                    ".', so it loads as " + std::string(known[0].second->name)};
    if (row) return {row, std::string(row->name) + ".", ""};  // reading names the missing key
    throw unknown("unsupported GGUF architecture '" + *declared + "'");
}

std::vector<ArchitectureInfo> known_architectures() {
    std::vector<ArchitectureInfo> out;
    for (const ArchRow& r : k_rows) {
        ArchitectureInfo a;
        a.name = std::string(r.name);
        for (std::string_view s : architecture_aliases(r.name)) a.aliases.emplace_back(s);
        a.runnable = r.configure != nullptr;
        a.mixer = r.memory == MemoryKind::Kv ? "attention" : r.memory == MemoryKind::Recurrent ? "recurrent" : "attention + recurrent";
        a.ffn = std::string(r.ffn);
        a.memory = r.memory == MemoryKind::Kv ? "kv" : r.memory == MemoryKind::Recurrent ? "recurrent" : "hybrid";
        a.rope = std::string(rope_kind_name(r.rope));
        a.checked = std::find(std::begin(k_checked), std::end(k_checked), r.name) != std::end(k_checked);
        if (a.checked)
            a.checked_against = std::find(std::begin(k_checked_by_reference), std::end(k_checked_by_reference), r.name) !=
                                        std::end(k_checked_by_reference)
                                    ? "reference"
                                    : "llama.cpp";
        out.push_back(std::move(a));
    }
    return out;
}

int ArchConfig::count(std::string_view name, bool required) const {
    const std::string k = key(name);
    const auto v = metadata.find_uint(k);
    if (!v) {
        if (required) throw Error("GGUF metadata key '" + k + "' not found");
        return 0;
    }
    if (*v > (1u << 20)) throw Error("GGUF metadata '" + k + "': value " + std::to_string(*v) + " is out of range");
    return static_cast<int>(*v);
}

}  // namespace kiln
