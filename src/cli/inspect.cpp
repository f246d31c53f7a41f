// kiln inspect FILE [--json] [--verbose]: the model card.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/model_card.h"

namespace kiln::cli {

namespace {

std::string join_layers(const std::vector<uint64_t>& v) {
    if (v.empty()) return "-";
    uint64_t lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    if (lo == hi) return std::to_string(lo);
    return std::to_string(lo) + ".." + std::to_string(hi) + " (per layer)";
}

template <typename T>
std::string opt(const std::optional<T>& v) {
    if (!v) return "-";
    if constexpr (std::is_floating_point_v<T>) return format_float(*v);
    else return std::to_string(*v);
}

nlohmann::json opt_json(const std::optional<uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json card_json(const ModelCard& c) {
    nlohmann::json j;
    j["architecture"] = c.architecture;
    j["name"] = c.name;
    j["size_label"] = c.size_label;
    j["file_type"] = c.file_type;
    j["n_layer"] = opt_json(c.n_layer);
    j["n_embd"] = opt_json(c.n_embd);
    j["n_head"] = c.n_head;
    j["n_head_kv"] = c.n_head_kv;
    j["head_dim_k"] = opt_json(c.head_dim_k);
    j["head_dim_v"] = opt_json(c.head_dim_v);
    j["n_ff"] = c.n_ff;
    j["n_ctx_train"] = opt_json(c.n_ctx_train);
    j["rope"] = {{"kind", c.rope_kind},
                 {"dims", opt_json(c.rope_dims)},
                 {"freq_base", opt_json(c.rope_freq_base)},
                 {"freq_base_swa", opt_json(c.rope_freq_base_swa)},
                 {"scaling", c.rope_scaling},
                 {"scaling_factor", opt_json(c.rope_scaling_factor)},
                 {"scaling_original_context", opt_json(c.rope_scaling_orig_ctx)}};
    j["sliding_window"] = opt_json(c.sliding_window);
    j["n_expert"] = opt_json(c.n_expert);
    j["n_expert_used"] = opt_json(c.n_expert_used);
    j["tokenizer"] = {{"model", c.tokenizer_model},
                      {"pre", c.tokenizer_pre},
                      {"n_vocab", c.n_vocab},
                      {"bos", c.bos_id ? nlohmann::json{{"id", *c.bos_id}, {"text", c.bos_text}} : nlohmann::json(nullptr)},
                      {"eos", c.eos_id ? nlohmann::json{{"id", *c.eos_id}, {"text", c.eos_text}} : nlohmann::json(nullptr)},
                      {"eot", c.eot_id ? nlohmann::json{{"id", *c.eot_id}, {"text", c.eot_text}} : nlohmann::json(nullptr)}};
    j["chat_template"] = c.has_chat_template ? nlohmann::json{{"bytes", c.chat_template_bytes}} : nlohmann::json(nullptr);
    j["file_size"] = c.file_size;
    j["n_shards"] = c.n_shards;
    j["n_tensors"] = c.n_tensors;
    j["n_params"] = c.n_params;
    j["bits_per_weight"] = c.bits_per_weight();
    nlohmann::json mix = nlohmann::json::object();
    for (const auto& [type, u] : c.type_mix) mix[type] = {{"tensors", u.tensors}, {"bytes", u.bytes}};
    j["type_mix"] = mix;
    return j;
}

std::string token_desc(const std::optional<uint64_t>& id, const std::string& text) {
    if (!id) return "-";
    return std::to_string(*id) + " '" + text + "'";
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
    CLI::App app{"Show the model card of a GGUF file (reads only the front of the file)", "inspect"};
    std::string path;
    bool json = false, verbose = false;
    app.add_option("file", path, "GGUF file or model name (any shard of a split model)")->required();
    app.add_flag("--json", json, "print one JSON object");
    app.add_flag("-v,--verbose", verbose, "also print bytes read and time taken (stderr)");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    auto t0 = std::chrono::steady_clock::now();
    path = resolve_model(path);  // a file, or any name of the catalog
    gguf::File file = gguf::File::open(path);
    ModelCard c = describe_model(file);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    if (json) {
        std::printf("%s\n", card_json(c).dump(2).c_str());
    } else {
        auto row = [](const char* label, const std::string& value) { std::printf("%-22s %s\n", label, value.c_str()); };
        row("architecture", c.architecture.empty() ? "-" : c.architecture);
        row("name", c.name.empty() ? "-" : c.name);
        row("size label", c.size_label.empty() ? "-" : c.size_label);
        row("file type", c.file_type.empty() ? "-" : c.file_type);
        row("parameters", human_count(c.n_params) + " (" + std::to_string(c.n_params) + ")");
        row("layers", opt(c.n_layer));
        row("width (n_embd)", opt(c.n_embd));
        row("heads / kv heads", join_layers(c.n_head) + " / " + join_layers(c.n_head_kv));
        row("head size k / v", opt(c.head_dim_k) + " / " + opt(c.head_dim_v));
        row("ffn width", join_layers(c.n_ff));
        row("context length", opt(c.n_ctx_train));
        std::string rope = c.rope_kind + ", base " + opt(c.rope_freq_base);
        if (c.rope_freq_base_swa) rope += " (sliding layers " + opt(c.rope_freq_base_swa) + ")";
        if (c.rope_dims) rope += ", dims " + opt(c.rope_dims);
        rope += ", scaling " + c.rope_scaling;
        if (c.rope_scaling_factor) rope += " x" + opt(c.rope_scaling_factor);
        row("rope", rope);
        row("sliding window", opt(c.sliding_window));
        row("experts (used)", c.n_expert ? opt(c.n_expert) + " (" + opt(c.n_expert_used) + ")" : "-");
        row("vocabulary", std::to_string(c.n_vocab));
        row("tokenizer", (c.tokenizer_model.empty() ? "-" : c.tokenizer_model) +
                             (c.tokenizer_pre.empty() ? "" : " / pre " + c.tokenizer_pre));
        row("bos", token_desc(c.bos_id, c.bos_text));
        row("eos", token_desc(c.eos_id, c.eos_text));
        row("eot", token_desc(c.eot_id, c.eot_text));
        row("chat template", c.has_chat_template ? "yes (" + std::to_string(c.chat_template_bytes) + " bytes)" : "no");
        row("file size", human_bytes(c.file_size) + (c.n_shards > 1 ? " in " + std::to_string(c.n_shards) + " shards" : ""));
        row("tensors", std::to_string(c.n_tensors));
        char bpw[32];
        std::snprintf(bpw, sizeof bpw, "%.3f", c.bits_per_weight());
        row("bits per weight", bpw);
        std::string mix;
        for (const auto& [type, u] : c.type_mix)
            mix += (mix.empty() ? "" : ", ") + type + " x" + std::to_string(u.tensors) + " (" + human_bytes(u.bytes) + ")";
        row("quantization mix", mix.empty() ? "-" : mix);
    }
    if (verbose)
        std::fprintf(stderr, "read %llu bytes of %llu (front %llu bytes) in %.2f ms\n",
                     static_cast<unsigned long long>(file.bytes_read()),
                     static_cast<unsigned long long>(c.file_size), static_cast<unsigned long long>(c.front_bytes), ms);
    return 0;
}

}  // namespace kiln::cli
