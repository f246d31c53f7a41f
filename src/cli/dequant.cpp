// kiln dequant FILE TENSOR [--rows N] [--npy OUT]: a tensor's values as f32.
#include <cstdio>
#include <cstring>
#include <vector>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/quant.h"

namespace kiln::cli {

namespace {

// Writes a float32 .npy (format 1.0) with the tensor's shape in numpy order
// (outermost first, i.e. ggml's ne reversed).
void write_npy(const std::string& path, const std::vector<uint64_t>& np_shape, const std::vector<float>& data) {
    std::string shape = "(";
    for (size_t i = 0; i < np_shape.size(); ++i) shape += std::to_string(np_shape[i]) + (np_shape.size() == 1 || i + 1 < np_shape.size() ? "," : "");
    shape += ")";
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw Error(path + ": cannot create: " + std::strerror(errno));
    const char magic[] = "\x93NUMPY\x01\x00";
    uint16_t hlen = static_cast<uint16_t>(header.size());
    bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(&hlen, 2, 1, f) == 1 &&
              std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
              std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
    if (std::fclose(f) != 0 || !ok) throw Error(path + ": write failed");
}

}  // namespace

int cmd_dequant(int argc, char** argv) {
    CLI::App app{"Dequantize a tensor to f32", "dequant"};
    std::string path, name, npy;
    int64_t rows = -1;
    app.add_option("file", path, "GGUF file or model name")->required();
    app.add_option("tensor", name, "tensor name")->required();
    app.add_option("--rows", rows, "only the first N rows (default: all for --npy, 4 for text)");
    app.add_option("--npy", npy, "write a float32 .npy file instead of text");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    path = resolve_model(path);  // a file, or any name of the catalog
    gguf::File file = gguf::File::open(path);
    const gguf::TensorInfo& t = file.tensor(name);
    if (!quant::can_dequantize(t.type))
        throw Error("tensor '" + name + "': no dequantizer for type " + std::string(ggml_type_name(t.type)));
    const uint64_t row_len = t.shape[0];
    const uint64_t n_rows_total = t.n_rows();
    uint64_t n_rows = rows < 0 ? (npy.empty() ? std::min<uint64_t>(4, n_rows_total) : n_rows_total)
                               : std::min<uint64_t>(static_cast<uint64_t>(rows), n_rows_total);
    const uint64_t row_bytes = ggml_row_bytes(t.type, row_len);
    std::vector<float> out(static_cast<size_t>(n_rows * row_len));
    const uint8_t* base = file.tensor_data(t);
    for (uint64_t r = 0; r < n_rows; ++r)
        quant::dequantize_row(t.type, base + r * row_bytes, out.data() + r * row_len, static_cast<int64_t>(row_len));

    if (!npy.empty()) {
        std::vector<uint64_t> np_shape;
        if (n_rows == n_rows_total) np_shape.assign(t.shape.rbegin(), t.shape.rend());
        else np_shape = {n_rows, row_len};
        write_npy(npy, np_shape, out);
        std::fprintf(stderr, "wrote %llu x %llu f32 values to %s\n", static_cast<unsigned long long>(n_rows),
                     static_cast<unsigned long long>(row_len), npy.c_str());
        return 0;
    }
    std::printf("%s %s %s\n", t.name.c_str(), std::string(ggml_type_name(t.type)).c_str(), t.shape_string().c_str());
    for (uint64_t r = 0; r < n_rows; ++r) {
        std::printf("row %llu:", static_cast<unsigned long long>(r));
        for (uint64_t i = 0; i < row_len; ++i) std::printf(" %.9g", static_cast<double>(out[r * row_len + i]));
        std::printf("\n");
    }
    return 0;
}

}  // namespace kiln::cli
