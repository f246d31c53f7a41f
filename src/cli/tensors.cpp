// kiln tensors FILE [--filter GLOB] [--json]: the tensor table in file order.
#include <fnmatch.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/gguf/file.h"

namespace kiln::cli {

int cmd_tensors(int argc, char** argv) {
    CLI::App app{"List the tensors of a GGUF file in file order", "tensors"};
    std::string path, filter;
    bool json = false;
    app.add_option("file", path, "GGUF file or model name")->required();
    app.add_option("--filter", filter, "only names matching this glob (e.g. 'blk.0.*')");
    app.add_flag("--json", json, "print a JSON array");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    path = resolve_model(path);  // a file, or any name of the catalog
    gguf::File file = gguf::File::open(path);
    const bool split = file.shards().size() > 1;
    nlohmann::json out = nlohmann::json::array();
    if (!json) std::printf("%-48s %-8s %-28s %14s %14s\n", "name", "type", "shape", "offset", "bytes");
    for (const gguf::TensorInfo& t : file.tensors()) {
        if (!filter.empty() && fnmatch(filter.c_str(), t.name.c_str(), 0) != 0) continue;
        if (json) {
            nlohmann::json j = {{"name", t.name},
                                {"type", std::string(ggml_type_name(t.type))},
                                {"shape", t.shape},
                                {"offset", t.offset},
                                {"bytes", t.bytes}};
            if (split) j["shard"] = t.shard;
            out.push_back(std::move(j));
        } else {
            std::printf("%-48s %-8s %-28s %14llu %14llu\n", t.name.c_str(), std::string(ggml_type_name(t.type)).c_str(),
                        t.shape_string().c_str(), static_cast<unsigned long long>(t.offset),
                        static_cast<unsigned long long>(t.bytes));
        }
    }
    if (json) std::printf("%s\n", out.dump().c_str());
    return 0;
}

}  // namespace kiln::cli
