// kiln analyze FILE [--json]: where the bytes of a model go.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/model_card.h"

namespace kiln::cli {

int cmd_analyze(int argc, char** argv) {
    CLI::App app{"Parameters, bits per weight, bytes per type, KV cache size and file layout", "analyze"};
    std::string path;
    bool json = false;
    int top = 10;
    app.add_option("file", path, "GGUF file or model name")->required();
    app.add_option("--top", top, "how many of the largest tensors to list")->check(CLI::Range(0, 100000));
    app.add_flag("--json", json, "print one JSON object");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    path = resolve_model(path);  // a file, or any name of the catalog
    gguf::File file = gguf::File::open(path);
    ModelCard c = describe_model(file);
    constexpr double k_f16 = 2.0, k_q8_0 = 34.0 / 32.0;
    auto kv_f16 = c.kv_bytes_per_position(k_f16);
    auto kv_q8 = c.kv_bytes_per_position(k_q8_0);
    auto kv_expanded = c.expanded_kv_bytes_per_position(k_f16);  // latent attention: the heads it stands for
    uint64_t ctx = c.n_ctx_train.value_or(0);

    std::vector<const gguf::TensorInfo*> largest;
    for (const auto& t : file.tensors()) largest.push_back(&t);
    std::stable_sort(largest.begin(), largest.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
    if (largest.size() > static_cast<size_t>(top)) largest.resize(static_cast<size_t>(top));

    if (json) {
        nlohmann::json j;
        j["n_params"] = c.n_params;
        j["bits_per_weight"] = c.bits_per_weight();
        j["file_size"] = c.file_size;
        j["front_bytes"] = c.front_bytes;
        j["data_bytes"] = c.data_bytes;
        nlohmann::json types = nlohmann::json::object();
        for (const auto& [name, u] : c.type_mix)
            types[name] = {{"tensors", u.tensors}, {"bytes", u.bytes}, {"elements", u.elements}};
        j["types"] = types;
        j["kv_cache"] = {{"bytes_per_position_f16", kv_f16 ? nlohmann::json(*kv_f16) : nlohmann::json(nullptr)},
                         {"bytes_per_position_q8_0", kv_q8 ? nlohmann::json(*kv_q8) : nlohmann::json(nullptr)},
                         {"context_length", ctx},
                         {"bytes_full_context_f16", kv_f16 ? nlohmann::json(*kv_f16 * static_cast<double>(ctx)) : nlohmann::json(nullptr)},
                         {"bytes_full_context_q8_0", kv_q8 ? nlohmann::json(*kv_q8 * static_cast<double>(ctx)) : nlohmann::json(nullptr)}};
        if (kv_expanded) {
            j["kv_cache"]["latent"] = true;
            j["kv_cache"]["expanded_bytes_per_position_f16"] = *kv_expanded;
        }
        nlohmann::json big = nlohmann::json::array();
        for (auto* t : largest)
            big.push_back({{"name", t->name}, {"type", std::string(ggml_type_name(t->type))}, {"bytes", t->bytes}});
        j["largest_tensors"] = big;
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }

    std::printf("%s (%s)\n\n", path.c_str(), c.architecture.c_str());
    std::printf("parameters        %s (%llu)\n", human_count(c.n_params).c_str(), static_cast<unsigned long long>(c.n_params));
    std::printf("bits per weight   %.3f\n", c.bits_per_weight());
    std::printf("file              %s = front %s (%.3f%%: header, metadata, tensor table) + data %s\n\n",
                human_bytes(c.file_size).c_str(), human_bytes(c.front_bytes).c_str(),
                c.file_size ? 100.0 * static_cast<double>(c.front_bytes) / static_cast<double>(c.file_size) : 0.0,
                human_bytes(c.data_bytes).c_str());
    std::printf("%-8s %8s %14s %8s %12s\n", "type", "tensors", "bytes", "share", "bits/weight");
    for (const auto& [name, u] : c.type_mix)
        std::printf("%-8s %8llu %14s %7.2f%% %12.3f\n", name.c_str(), static_cast<unsigned long long>(u.tensors),
                    human_bytes(u.bytes).c_str(),
                    c.data_bytes ? 100.0 * static_cast<double>(u.bytes) / static_cast<double>(c.data_bytes) : 0.0,
                    u.elements ? 8.0 * static_cast<double>(u.bytes) / static_cast<double>(u.elements) : 0.0);
    std::printf("\nKV cache          ");
    if (kv_f16 && kv_q8)
        std::printf("f16: %s per position, %s at %llu positions; q8_0: %s per position, %s at full context\n",
                    human_bytes(static_cast<uint64_t>(*kv_f16)).c_str(),
                    human_bytes(static_cast<uint64_t>(*kv_f16 * static_cast<double>(ctx))).c_str(),
                    static_cast<unsigned long long>(ctx), human_bytes(static_cast<uint64_t>(*kv_q8)).c_str(),
                    human_bytes(static_cast<uint64_t>(*kv_q8 * static_cast<double>(ctx))).c_str());
    else
        std::printf("unknown (no block_count / head_count_kv in the metadata)\n");
    if (kv_f16 && kv_expanded)
        std::printf("                  latent attention: the cache holds the latent rows; expanded keys and values "
                    "would take %s per position in f16 (%.1fx)\n",
                    human_bytes(static_cast<uint64_t>(*kv_expanded)).c_str(), *kv_expanded / *kv_f16);
    std::printf("\nlargest tensors\n");
    for (auto* t : largest)
        std::printf("  %-44s %-8s %-24s %s\n", t->name.c_str(), std::string(ggml_type_name(t->type)).c_str(),
                    t->shape_string().c_str(), human_bytes(t->bytes).c_str());
    return 0;
}

}  // namespace kiln::cli
