// Tiny random models of the mixture-of-experts families written with llama's
// tensor layout plus their own keys (glm4moe, ernie4_5-moe, ...): one recipe
// table, one writer (tiny_moe_models.cpp). tiny_models.cpp lists and writes them
// with the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/tiny_models.h"

namespace kiln::test {

std::vector<TinyModelInfo> tiny_moe_families();

// Writes the tiny model of `family` if it is one of these (false otherwise).
bool write_tiny_moe_model(const std::string& family, uint64_t seed, const std::string& tokenizer_source, const std::string& path);

}  // namespace kiln::test
