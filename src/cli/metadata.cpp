// kiln metadata FILE [KEY] [--json]: metadata keys and values in file order.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "json_value.h"
#include "kiln/error.h"

namespace kiln::cli {

int cmd_metadata(int argc, char** argv) {
    CLI::App app{"Print the metadata of a GGUF file", "metadata"};
    std::string path, key;
    bool json = false;
    app.add_option("file", path, "GGUF file or model name")->required();
    app.add_option("key", key, "print only this key (its full value)");
    app.add_flag("--json", json, "print one JSON object of every key with its full value");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    path = resolve_model(path);  // a file, or any name of the catalog
    gguf::File file = gguf::File::open(path);
    const gguf::Metadata& md = file.metadata();
    if (!key.empty()) {
        const gguf::Value& v = md.at(key);
        if (json) {
            std::printf("%s\n", value_to_json(file, v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        } else if (v.type() == gguf::ValueType::String) {
            std::printf("%s\n", v.raw_string().c_str());
        } else {
            std::printf("%s\n", value_to_text(file, v, SIZE_MAX).c_str());
        }
        return 0;
    }
    if (json) {
        nlohmann::ordered_json out = nlohmann::ordered_json::object();
        for (const auto& [k, v] : md.entries()) out[k] = value_to_json(file, v);
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    for (const auto& [k, v] : md.entries())
        std::printf("%-44s %-14s %s\n", k.c_str(), v.type_description().c_str(), value_to_text(file, v, 8).c_str());
    return 0;
}

}  // namespace kiln::cli
