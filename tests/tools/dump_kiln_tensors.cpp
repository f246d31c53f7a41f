// Dumps kiln's named intermediates for a token sequence (the tensor hook of
// Context), one raw f32 file per tensor: OUT_DIR/<name>-<layer>.f32 with a
// sidecar .shape ("n_per_row n_rows"). tools/compare_tensors.py lines them up
// with llama.cpp's (tools/dump_llama_tensors.py).
//   dump_kiln_tensors MODEL.gguf OUT_DIR TOKEN...
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/context.h"

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: dump_kiln_tensors MODEL.gguf OUT_DIR TOKEN...\n");
        return 1;
    }
    try {
        auto model = kiln::Model::load(argv[1]);
        std::string dir = argv[2];
        std::filesystem::create_directories(dir);
        std::vector<int32_t> tokens;
        for (int i = 3; i < argc; ++i) tokens.push_back(std::atoi(argv[i]));
        kiln::Context ctx(model, {.n_ctx = 512, .n_batch = 512, .n_threads = 1});
        ctx.set_tensor_hook([&](const char* name, int layer, const float* data, int64_t per_row, int64_t rows) {
            std::string base = dir + "/" + name + (layer >= 0 ? "-" + std::to_string(layer) : "");
            std::FILE* f = std::fopen((base + ".f32").c_str(), "wb");
            std::fwrite(data, sizeof(float), static_cast<size_t>(per_row * rows), f);
            std::fclose(f);
            f = std::fopen((base + ".shape").c_str(), "w");
            std::fprintf(f, "%lld %lld\n", static_cast<long long>(per_row), static_cast<long long>(rows));
            std::fclose(f);
        });
        ctx.decode(tokens);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dump_kiln_tensors: %s\n", e.what());
        return 1;
    }
    return 0;
}
