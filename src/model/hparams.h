// Reading the hyperparameters every family shares from `{arch}.*` metadata.
#pragma once

#include "kiln/gguf/file.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

// The common hyperparameters under `prefix` ("llama."; resolve_architecture
// says where), then the family's configure step. Errors name the key.
ModelSpec read_model_spec(const gguf::File& file, const ArchRow& row, const std::string& prefix);

// Marks the sliding layers as llama.cpp's load_swa_pattern does: from
// `{arch}.attention.sliding_window_pattern` (a per-layer bool array, or a period
// n: layer il slides unless il % n == n - 1, or, dense_first, unless il % n == 0;
// 0 makes every layer slide), else with the family's default period.
void read_swa_pattern(const ArchConfig& c, int default_period, bool dense_first);

// `{arch}.nextn_predict_layers`: the last that many of block_count's layers are
// multi-token-prediction layers, not part of the trunk. Sets spec.n_layer_nextn
// and shortens spec.layers to the trunk (call before reading per-layer routing).
void read_nextn_layers(ArchConfig& c);

// Refuses a rope.dimension_count other than the head size, for the families
// whose llama.cpp graph asserts they are equal (it names the key and the family).
void require_full_rotation(const ArchConfig& c);

// The rotation's magnitude under YaRN as llama_context computes it (ggml's
// attn_factor): mscale(factor, mscale) / mscale(factor, log_mul) where the file
// gives a YaRN log multiplier (mscale_all_dim), else mscale(factor, 1), then the
// 1 + 0.1 ln(factor) that the rotation multiplies in divided out, times the
// file's rope.scaling.attn_factor. factor = 1 / freq_scale.
float yarn_attn_factor(float factor, float mscale, float log_mul, float rope_attn_factor);

}  // namespace kiln
