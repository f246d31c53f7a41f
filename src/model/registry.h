// The architecture registry: one row per GGUF `general.architecture` that kiln
// knows. Rows that can run carry `configure`, the family's delta over the common
// hyperparameters (src/model/arch/<family>.cpp); the rest are known by name so
// `kiln inspect` can describe their files and loading them names what is supported.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

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
    // An unsigned size or count key (at most 2^20): 0 when absent and not
    // required; errors name the key.
    int count(std::string_view name, bool required) const;
};

struct ArchRow {
    std::string_view name;  // canonical GGUF name
    RopeKind rope;
    MemoryKind memory = MemoryKind::Kv;  // which SequenceMemory the engine makes (src/cache)
    void (*configure)(ArchConfig&) = nullptr;  // null: known, not runnable
    // The feed-forward block as llama.cpp's graph builds it ("gated", "plain",
    // "experts", ...; `kiln archs` shows it; a runnable family's layers still
    // take their kind from the tensors, weights.cpp).
    std::string_view ffn = "gated";
};

std::span<const ArchRow> architecture_rows();
const ArchRow* find_architecture(std::string_view name);
// "gemma2, gemma3, llama, qwen2, qwen3, smollm3"
std::string supported_architectures();

// Which row a file's metadata asks for, and under which key prefix its
// hyperparameters are. `general.architecture` is taken as written when a row
// has that name; otherwise spelling variants resolve to the canonical row
// ("Qwen2ForCausalLM" -> qwen2, "command_r" -> command-r, "deepseek-v2" ->
// deepseek2, "llama3" / "mistral" / "ministral" -> llama over llama.* keys).
// A file whose name and key namespace disagree follows the namespace that
// exists (with a note); a file without the name is recognised from its
// namespace. A vision projector (clip / mmproj) or an unknown architecture is
// an error that says so and lists the supported ones.
struct ResolvedArch {
    const ArchRow* row = nullptr;
    std::string prefix;  // "llama." — where its keys are
    std::string note;    // how it was resolved, when not by the exact name ("" otherwise)
};
ResolvedArch resolve_architecture(const gguf::Metadata& md);

// Alternative spellings that resolve to `name` (for `kiln archs`).
std::vector<std::string_view> architecture_aliases(std::string_view name);

}  // namespace kiln
