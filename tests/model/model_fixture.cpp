#include "model/model_fixture.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/test_support.h"

namespace kiln::test {

ModelFixture load_model_fixture(const std::string& key) {
    auto j = nlohmann::json::parse(read_file(golden_path("model/" + key + ".json")));
    std::string raw = read_file(golden_path("model/" + key + ".f32"));
    std::vector<float> floats(raw.size() / 4);
    std::memcpy(floats.data(), raw.data(), floats.size() * 4);
    ModelFixture f;
    f.model_file = j["model"];
    f.n_vocab = j["n_vocab"];
    f.top = j["top"];
    f.random_ids = j["random_ids"].get<std::vector<int32_t>>();
    const size_t per_row = static_cast<size_t>(f.top) + f.random_ids.size();
    for (const auto& p : j["prompts"]) {
        PromptFixture pf;
        pf.name = p["name"];
        pf.tokens = p["tokens"].get<std::vector<int32_t>>();
        pf.argmax = p["argmax"].get<std::vector<int32_t>>();
        pf.top_ids = p["top_ids"].get<std::vector<std::vector<int32_t>>>();
        size_t off = p["float_offset"].get<size_t>();
        for (size_t r = 0; r < pf.tokens.size(); ++r) {
            const float* row = floats.data() + off + r * per_row;
            if (off + (r + 1) * per_row > floats.size()) throw std::runtime_error("fixture floats truncated");
            pf.top_logits.emplace_back(row, row + f.top);
            pf.random_logits.emplace_back(row + f.top, row + per_row);
        }
        if (p.contains("self_noise")) {
            pf.self_max_diff = p["self_noise"]["max_diff"];
            pf.self_argmax_changes = p["self_noise"]["argmax_changes"];
        }
        if (p.contains("greedy")) {
            pf.greedy = p["greedy"].get<std::vector<int32_t>>();
            pf.greedy_margins = p["greedy_margins"].get<std::vector<float>>();
        }
        f.prompts.push_back(std::move(pf));
    }
    return f;
}

}  // namespace kiln::test
