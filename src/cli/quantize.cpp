// kiln quantize IN.gguf OUT.gguf TYPE [--imatrix F] [--pure] [--leave-output-tensor]
//     [--output-tensor-type T] [--token-embedding-type T] [--tensor-type REGEX=T ...]
//     [--allow-requantize] [-t N] [--dry-run]
//
// Makes a smaller file the way llama.cpp's llama-quantize does: the same
// per-tensor types for the preset (quant_recipe.h) and ggml's reference
// quantizers (kiln's are bit-exact), so the same input and options give the
// same tensor bytes. Metadata is copied, with general.file_type set to the
// preset and general.quantization_version to 2. Source tensors may be F32, F16
// or BF16; quantized ones only with --allow-requantize (re-quantizing loses
// more than quantizing the original once).
//
// With --imatrix (kiln imatrix's or llama-imatrix's file, kiln/imatrix.h) the
// types that search their scales weight the search by it, as ggml's
// quantize_*_impl do; a tensor the imatrix has no entry for is quantized without
// one (as llama-quantize does, and the summary names them), except where the
// type needs one (IQ1_S, IQ1_M, IQ2_*, IQ3_XXS and Q2_K in Q2_K_S: refused, as
// llama-quantize refuses them; without --imatrix such a preset is refused too).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <regex>
#include <thread>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/gguf/writer.h"
#include "kiln/imatrix.h"
#include "kiln/quant.h"
#include "quant_recipe.h"

namespace kiln::cli {

namespace {

GgmlType parse_type(const std::string& name, const char* flag) {
    const GgmlTypeInfo* t = find_ggml_type(name);
    if (!t) throw Error(std::string("quantize: ") + flag + " " + name + " is not a ggml type name (Q4_K, Q6_K, Q8_0, F16, ...)");
    return t->type;
}

// Rows [0, n_rows) of `t` re-encoded as `type`, on `threads` threads.
// importance: [n_per_row * n_mat] (one row of importances per matrix of a 3-D
// tensor) or empty.
std::vector<uint8_t> convert_tensor(const gguf::File& file, const gguf::TensorInfo& t, GgmlType type, int threads,
                                    const std::vector<float>& importance) {
    const int64_t n_per_row = static_cast<int64_t>(t.shape[0]);
    const int64_t n_rows = static_cast<int64_t>(t.n_rows());
    const uint64_t src_rb = ggml_row_bytes(t.type, t.shape[0]), dst_rb = ggml_row_bytes(type, t.shape[0]);
    std::vector<uint8_t> out(dst_rb * static_cast<uint64_t>(n_rows));
    const uint8_t* src = file.tensor_data(t);
    const int64_t rows_per_matrix = t.shape.size() > 1 ? static_cast<int64_t>(t.shape[1]) : 1;
    auto work = [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<size_t>(n_per_row));
        for (int64_t r = r0; r < r1; ++r) {
            quant::dequantize_row(t.type, src + static_cast<uint64_t>(r) * src_rb, row.data(), n_per_row);
            const float* qw = nullptr;
            if (!importance.empty()) qw = importance.data() + static_cast<size_t>(r / rows_per_matrix) * static_cast<size_t>(n_per_row);
            quant::quantize_row_for_file(type, row.data(), out.data() + static_cast<uint64_t>(r) * dst_rb, n_per_row, qw);
        }
    };
    const int n = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, n_rows / 4)));
    std::vector<std::thread> pool;
    for (int i = 1; i < n; ++i) pool.emplace_back(work, n_rows * i / n, n_rows * (i + 1) / n);
    work(0, n_rows / n);
    for (auto& th : pool) th.join();
    return out;
}

// llama-quantize's tensor_requires_imatrix: the types whose quantizers make garbage
// without one (and Q2_K in a Q2_K_S file), except for the token embedding and output.
bool requires_imatrix(const std::string& name, GgmlType type, const QuantPreset& preset) {
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
    switch (type) {
        case GgmlType::IQ3_XXS: case GgmlType::IQ2_XXS: case GgmlType::IQ2_XS: case GgmlType::IQ2_S:
        case GgmlType::IQ1_M: case GgmlType::IQ1_S: return true;
        case GgmlType::Q2_K: return preset.name == "Q2_K_S";
        default: return false;
    }
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
    CLI::App app{"Quantize a GGUF file to a preset (the per-tensor types and bytes of llama.cpp's llama-quantize)", "quantize"};
    std::string in_path, out_path, preset_name, out_type, embd_type, imatrix_path;
    std::vector<std::string> tensor_types;
    bool list = false, allow_requantize = false, dry_run = false;
    int threads = 0;
    QuantRecipeOptions ro;
    app.add_option("input", in_path, "the GGUF file to quantize (F32 / F16 / BF16 weights)");
    app.add_option("output", out_path, "the file to write");
    app.add_option("type", preset_name, "the preset: Q4_K_M, Q5_K_M, Q6_K, Q8_0, ... (--list)");
    app.add_flag("--list", list, "list the presets");
    app.add_option("--imatrix", imatrix_path, "importance matrix (kiln imatrix / llama-imatrix) to weight the quantizers by");
    app.add_flag("--pure", ro.pure, "every quantizable tensor the preset's type (no per-layer mixture, no Q6_K output)");
    app.add_flag("--leave-output-tensor", ro.leave_output_tensor, "keep output.weight as it is");
    app.add_option("--output-tensor-type", out_type, "type for output.weight");
    app.add_option("--token-embedding-type", embd_type, "type for token_embd.weight");
    app.add_option("--tensor-type", tensor_types, "REGEX=TYPE: tensors whose name matches get TYPE (first match wins)");
    app.add_flag("--allow-requantize", allow_requantize, "allow quantized source tensors (quality loss)");
    app.add_flag("--dry-run", dry_run, "print the type of every tensor and the size, write nothing");
    app.add_option("-t,--threads", threads, "threads (0: all)")->check(CLI::Range(0, 1024));
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (list) {
        for (const QuantPreset& p : quant_presets())
            std::printf("%-10s %-7s %s\n", std::string(p.name).c_str(), std::string(ggml_type_name(p.default_type)).c_str(),
                        std::string(p.description).c_str());
        return 0;
    }
    if (in_path.empty() || preset_name.empty() || (out_path.empty() && !dry_run))
        throw Error("quantize: usage: kiln quantize IN.gguf OUT.gguf TYPE (kiln quantize --list for the types)");
    const QuantPreset* preset = find_quant_preset(preset_name);
    if (!preset) {
        std::string names;
        for (const QuantPreset& p : quant_presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
        throw Error("quantize: unknown type '" + preset_name + "'; kiln makes " + names +
                    " (llama-quantize's other presets are for formats kiln does not make)");
    }
    if (!out_type.empty()) ro.output_tensor_type = parse_type(out_type, "--output-tensor-type");
    if (!embd_type.empty()) ro.token_embedding_type = parse_type(embd_type, "--token-embedding-type");
    for (const std::string& tt : tensor_types) {
        const size_t eq = tt.rfind('=');
        if (eq == std::string::npos || eq == 0) throw Error("quantize: --tensor-type " + tt + ": expected REGEX=TYPE");
        ro.tensor_types.emplace_back(tt.substr(0, eq), parse_type(tt.substr(eq + 1), "--tensor-type"));
        try {
            std::regex check(ro.tensor_types.back().first);
        } catch (const std::regex_error& e) {
            throw Error("quantize: --tensor-type " + tt + ": not a regular expression (" + e.what() + ")");
        }
    }
    if (!dry_run && std::filesystem::weakly_canonical(in_path) == std::filesystem::weakly_canonical(out_path))
        throw Error("quantize: the output would overwrite the input " + in_path);

    std::optional<Imatrix> imatrix;
    if (!imatrix_path.empty()) {
        imatrix = Imatrix::load(imatrix_path);
        ro.has_imatrix = true;
    }
    gguf::File file = gguf::File::open(in_path);
    QuantRecipe recipe(file, *preset, ro);
    // Check everything before converting anything.
    uint64_t bytes_in = 0, bytes_out = 0, n_weights = 0;
    int n_fallback = 0;
    std::string needs_imatrix;  // the first tensor that needs an imatrix (--dry-run: a warning)
    for (const QuantRecipe::Entry& e : recipe.entries()) {
        const gguf::TensorInfo& t = *e.tensor;
        bytes_in += t.bytes;
        bytes_out += ggml_row_bytes(e.type, t.shape[0]) * t.n_rows();
        n_weights += t.n_elements();
        n_fallback += e.fallback;
        if (e.type == t.type) continue;
        if (ggml_type_info(t.type).quantized && !allow_requantize)
            throw Error("quantize: " + t.name + " is already " + std::string(ggml_type_name(t.type)) +
                        "; re-quantizing loses more than quantizing the original (--allow-requantize to do it anyway)");
        if (!quant::can_dequantize(t.type))
            throw Error("quantize: " + t.name + " is " + std::string(ggml_type_name(t.type)) + ", which kiln cannot read");
        if (!quant::can_quantize_for_file(e.type))
            throw Error("quantize: " + t.name + " would become " + std::string(ggml_type_name(e.type)) +
                        ", which kiln has no quantizer for");
        if (requires_imatrix(t.name, e.type, *preset)) {
            if (!imatrix && needs_imatrix.empty()) needs_imatrix = t.name + " (" + std::string(ggml_type_name(e.type)) + ")";
            if (!imatrix && !dry_run)
                throw Error("quantize: " + std::string(preset->name) + " needs an importance matrix (--imatrix F; kiln imatrix "
                            "makes one), as in llama-quantize: " + needs_imatrix + " would be garbage without one");
            if (imatrix && !imatrix->entries.count(t.name))
                throw Error("quantize: the imatrix has no entry for " + t.name + ", which becomes " +
                            std::string(ggml_type_name(e.type)) + ": too few bits to quantize without one (as llama-quantize refuses)");
        }
        if (imatrix && imatrix->entries.count(t.name)) {
            if (quant::importance_use(e.type) == quant::ImportanceUse::Unsupported)
                throw Error("quantize: " + t.name + " would become " + std::string(ggml_type_name(e.type)) +
                                ", and kiln has no importance-weighted quantizer for it; drop --imatrix or choose "
                                "another type (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K to Q6_K and the i-quants use one)",
                            ErrorKind::Unsupported);
            const uint64_t n_mat = t.shape.size() > 2 ? t.shape[2] : 1;
            const size_t have = imatrix->entries.at(t.name).sums.size();
            if (have != t.shape[0] * n_mat && t.name != "token_embd.weight")
                throw Error("quantize: the imatrix has " + std::to_string(have) + " values for " + t.name + ", which needs " +
                            std::to_string(t.shape[0] * n_mat) + " (" + std::to_string(t.shape[0]) + " columns x " +
                            std::to_string(n_mat) + " matrices): made for another model?");
        }
    }
    if (dry_run) {
        for (const QuantRecipe::Entry& e : recipe.entries())
            std::printf("%-40s %-6s -> %-6s %s%s\n", e.tensor->name.c_str(), std::string(ggml_type_name(e.tensor->type)).c_str(),
                        std::string(ggml_type_name(e.type)).c_str(), e.tensor->shape_string().c_str(),
                        e.fallback ? " (row width does not fit the block: fallback)" : "");
        std::printf("%s -> %s: %s -> %s (%.2f bits per weight)\n", in_path.c_str(), std::string(preset->name).c_str(),
                    human_bytes(bytes_in).c_str(), human_bytes(bytes_out).c_str(), 8.0 * bytes_out / std::max<uint64_t>(1, n_weights));
        if (!needs_imatrix.empty())
            std::fprintf(stderr, "quantize: warning: quantizing for real needs an importance matrix (--imatrix): %s\n",
                         needs_imatrix.c_str());
        return 0;
    }

    gguf::Writer writer;
    writer.metadata() = gguf::materialize_metadata(file);
    writer.metadata().add("general.quantization_version", gguf::Value::u32(2));
    writer.metadata().add("general.file_type", gguf::Value::u32(preset->ftype));
    for (const char* k : {"split.no", "split.count", "split.tensors.count"}) writer.metadata().erase(k);
    if (imatrix) {  // the keys llama-quantize records
        writer.metadata().add("quantize.imatrix.file", gguf::Value::string(imatrix_path.substr(0, 127)));
        if (!imatrix->datasets.empty())
            writer.metadata().add("quantize.imatrix.dataset", gguf::Value::string(imatrix->datasets[0].substr(0, 127)));
        writer.metadata().add("quantize.imatrix.entries_count", gguf::Value::i32(static_cast<int32_t>(imatrix->entries.size())));
        if (imatrix->chunk_count > 0)
            writer.metadata().add("quantize.imatrix.chunks_count", gguf::Value::i32(static_cast<int32_t>(imatrix->chunk_count)));
    }
    std::vector<std::string> without_imatrix;
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const bool tty = isatty(STDERR_FILENO);
    const auto t0 = std::chrono::steady_clock::now();
    const size_t n = recipe.entries().size();
    for (size_t i = 0; i < n; ++i) {
        const QuantRecipe::Entry& e = recipe.entries()[i];
        const gguf::TensorInfo& t = *e.tensor;
        if (tty)  // a progress line; --dry-run lists every tensor
            std::fprintf(stderr, "\r\033[K[%4zu/%4zu] %-36s %6s -> %-6s %s", i + 1, n, t.name.c_str(),
                         std::string(ggml_type_name(t.type)).c_str(), std::string(ggml_type_name(e.type)).c_str(),
                         t.shape_string().c_str());
        if (e.type == t.type)
            writer.add_tensor_view(t.name, t.type, t.shape, file.tensor_data(t), t.bytes);
        else {
            std::vector<float> importance;
            if (imatrix) {
                importance = imatrix->importance(t.name);
                if (importance.size() != t.shape[0] * (t.shape.size() > 2 ? t.shape[2] : 1)) importance.clear();
                if (importance.empty() && quant::importance_use(e.type) == quant::ImportanceUse::Weighted) without_imatrix.push_back(t.name);
            }
            writer.add_tensor(t.name, e.type, t.shape, convert_tensor(file, t, e.type, threads, importance));
        }
    }
    if (tty) std::fprintf(stderr, "\n");
    writer.write(out_path, [tty](uint64_t done, uint64_t total) {
        if (tty) std::fprintf(stderr, "\r\033[Kwriting %3.0f%%", total ? 100.0 * done / total : 100.0);
    });
    if (tty) std::fprintf(stderr, "\r\033[K");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (imatrix) {
        std::string names;
        for (size_t i = 0; i < without_imatrix.size() && i < 8; ++i) names += (i ? ", " : "") + without_imatrix[i];
        if (without_imatrix.size() > 8) names += ", ...";
        std::fprintf(stderr, "quantize: imatrix %s (%zu entries, %u chunks); %zu quantized tensor%s had no entry%s%s\n",
                     imatrix_path.c_str(), imatrix->entries.size(), imatrix->chunk_count, without_imatrix.size(),
                     without_imatrix.size() == 1 ? "" : "s", names.empty() ? "" : ": ", names.c_str());
    }
    std::fprintf(stderr, "quantize: %s -> %s (%s): %s -> %s, %.2f bits per weight, %d fallback tensor%s, %.1f s\n", in_path.c_str(),
                 out_path.c_str(), std::string(preset->name).c_str(), human_bytes(bytes_in).c_str(), human_bytes(bytes_out).c_str(),
                 8.0 * bytes_out / std::max<uint64_t>(1, n_weights), n_fallback, n_fallback == 1 ? "" : "s", s);
    return 0;
}

}  // namespace kiln::cli
