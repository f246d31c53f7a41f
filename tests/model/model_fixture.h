// Reads tests/golden/model/<model>.json + .f32 (tools/model_fixtures.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::test {

struct PromptFixture {
    std::string name;
    std::vector<int32_t> tokens;
    std::vector<int32_t> argmax;                // per position
    std::vector<std::vector<int32_t>> top_ids;  // per position, `top` ids
    std::vector<std::vector<float>> top_logits;
    std::vector<std::vector<float>> random_logits;  // at ModelFixture::random_ids
    std::vector<int32_t> greedy;
    std::vector<float> greedy_margins;
    float self_max_diff = 0;       // llama.cpp flash attention on vs off
    int self_argmax_changes = 0;
};

struct ModelFixture {
    std::string model_file;
    int n_vocab = 0;
    int top = 0;
    std::vector<int32_t> random_ids;
    std::vector<PromptFixture> prompts;
};

ModelFixture load_model_fixture(const std::string& key);  // "smollm2" | "gemma3"

}  // namespace kiln::test
