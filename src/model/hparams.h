// Reading the hyperparameters every family shares from `{arch}.*` metadata.
#pragma once

#include "kiln/gguf/file.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

// The common hyperparameters, then the family's configure step. Errors name the key.
ModelSpec read_model_spec(const gguf::File& file, const ArchRow& row);

}  // namespace kiln
