// The architecture registry: one row per GGUF `general.architecture` that kiln
// knows. Rows that can run carry `configure`, the family's delta over the common
// hyperparameters (src/model/arch/<family>.cpp); the rest are known by name so
// `kiln inspect` can describe their files and loading them names what is supported.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kiln/gguf/value.h"
#include "model/spec.h"

namespace kiln {

enum class RopeKind { None, Norm, Neox, Unknown };
std::string_view rope_kind_name(RopeKind kind);

// What a family's configure step reads and adjusts.
struct ArchConfig {
    const gguf::Metadata& metadata;
    std::string prefix;  // "llama." — the family's metadata key prefix
    ModelSpec& spec;

    std::string key(std::string_view name) const { return prefix + std::string(name); }
};

struct ArchRow {
    std::string_view name;  // canonical GGUF name
    RopeKind rope;
    MemoryKind memory = MemoryKind::Kv;  // which SequenceMemory the engine makes (src/cache)
    void (*configure)(ArchConfig&) = nullptr;  // null: known, not runnable
};

std::span<const ArchRow> architecture_rows();
const ArchRow* find_architecture(std::string_view name);
// "gemma2, gemma3, llama, qwen2, qwen3, smollm3"
std::string supported_architectures();

}  // namespace kiln
