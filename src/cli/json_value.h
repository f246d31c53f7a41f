// GGUF metadata values as JSON, for `kiln metadata --json` and the tests.
#pragma once

#include <nlohmann/json.hpp>

#include "kiln/gguf/file.h"

namespace kiln::cli {

// Arrays are read whole (lazy ones from the file). f32 values are written with
// their shortest float text (1e-05, not 9.99999974e-06).
nlohmann::json value_to_json(const gguf::File& file, const gguf::Value& value);
// Short text for humans: long arrays summarised as "[49152 x string: '<unk>', ...]".
std::string value_to_text(const gguf::File& file, const gguf::Value& value, size_t max_items);

}  // namespace kiln::cli
