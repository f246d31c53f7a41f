// The architecture registry: one row per GGUF `general.architecture` that kiln
// knows. Rows that can run carry a forward-pass factory (added by the inference
// core); the rest are known by name so `kiln inspect` can describe their files.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace kiln {

enum class RopeKind { None, Norm, Neox, Unknown };
std::string_view rope_kind_name(RopeKind kind);

struct ArchRow {
    std::string_view name;  // canonical GGUF name
    RopeKind rope;
};

std::span<const ArchRow> architecture_rows();
const ArchRow* find_architecture(std::string_view name);

}  // namespace kiln
