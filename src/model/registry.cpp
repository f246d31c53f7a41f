#include "model/registry.h"

#include "model/arch/families.h"

#include <algorithm>
#include <vector>

namespace kiln {

namespace {

// RoPE layout per architecture as llama.cpp assigns it (llama_model_rope_type):
// NORM rotates adjacent pairs, NEOX rotates the two halves of a head.
constexpr ArchRow k_rows[] = {
    {"llama", RopeKind::Norm, MemoryKind::Kv, configure_llama},      {"llama4", RopeKind::Norm},     {"mistral3", RopeKind::Norm},
    {"smollm3", RopeKind::Norm, MemoryKind::Kv, configure_smollm3},    {"granite", RopeKind::Norm},    {"granitemoe", RopeKind::Norm},
    {"deepseek", RopeKind::Norm},   {"deepseek2", RopeKind::Norm},  {"baichuan", RopeKind::Norm},
    {"starcoder", RopeKind::None},  {"internlm2", RopeKind::Norm},  {"minicpm", RopeKind::Norm},
    {"xverse", RopeKind::Norm},     {"command-r", RopeKind::Norm},  {"cohere2", RopeKind::Norm},
    {"olmo", RopeKind::Norm},       {"arctic", RopeKind::Norm},     {"chatglm", RopeKind::Norm},
    {"glm4", RopeKind::Norm},       {"qwen", RopeKind::Neox},       {"qwen2", RopeKind::Neox, MemoryKind::Kv, configure_qwen2},
    {"qwen2moe", RopeKind::Neox, MemoryKind::Kv, configure_qwen2moe},   {"qwen3", RopeKind::Neox, MemoryKind::Kv, configure_qwen3},      {"qwen3moe", RopeKind::Neox, MemoryKind::Kv, configure_qwen3moe},
    {"qwen35", RopeKind::Neox, MemoryKind::Hybrid, configure_qwen35},     {"qwen3next", RopeKind::Neox, MemoryKind::Hybrid},  {"phi2", RopeKind::Neox},
    {"phi3", RopeKind::Neox},       {"phimoe", RopeKind::Neox},     {"gemma", RopeKind::Neox},
    {"gemma2", RopeKind::Neox, MemoryKind::Kv, configure_gemma2},     {"gemma3", RopeKind::Neox, MemoryKind::Kv, configure_gemma3},     {"gemma3n", RopeKind::Neox},
    {"gemma4", RopeKind::Neox},     {"falcon", RopeKind::Neox},     {"stablelm", RopeKind::Neox},
    {"starcoder2", RopeKind::Neox}, {"olmo2", RopeKind::Neox},      {"olmoe", RopeKind::Neox, MemoryKind::Kv, configure_olmoe},
    {"gptneox", RopeKind::Neox},    {"ernie4_5", RopeKind::Norm},   {"exaone", RopeKind::Neox},
    {"gpt-oss", RopeKind::Neox, MemoryKind::Kv, configure_gpt_oss},    {"gpt2", RopeKind::None},       {"bert", RopeKind::None, MemoryKind::Kv, configure_bert},
    {"nomic-bert", RopeKind::Neox}, {"mpt", RopeKind::None},        {"bloom", RopeKind::None},
    {"mamba", RopeKind::None, MemoryKind::Recurrent, configure_mamba}, {"mamba2", RopeKind::None, MemoryKind::Recurrent, configure_mamba2},      {"rwkv6", RopeKind::None, MemoryKind::Recurrent},      {"rwkv7", RopeKind::None, MemoryKind::Recurrent},
    {"t5", RopeKind::None},         {"jais", RopeKind::None},       {"lfm2", RopeKind::Neox, MemoryKind::Hybrid, configure_lfm2},
    {"refact", RopeKind::None},     {"nemotron_h", RopeKind::None, MemoryKind::Hybrid, configure_nemotron_h},
};

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

}  // namespace kiln
