#include "support/requantize.h"

#include <vector>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/quant.h"

namespace kiln::test {

int requantize_layers(const std::string& src_path, const std::string& dst, GgmlType type) {
    if (!quant::can_quantize(type)) throw Error("requantize: kiln has no reference quantizer for " + std::string(ggml_type_name(type)));
    gguf::File src = gguf::File::open(src_path);
    gguf::Writer w;
    w.metadata() = gguf::materialize_metadata(src);
    const uint64_t block = ggml_type_info(type).block_size;
    int n = 0;
    for (const auto& t : src.tensors()) {
        if (t.name.rfind("blk.", 0) != 0 || t.shape.size() != 2 || t.shape[0] % block != 0 || t.type == type) {
            w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
            continue;
        }
        const int64_t n_in = static_cast<int64_t>(t.shape[0]), rows = static_cast<int64_t>(t.n_rows());
        const uint64_t src_rb = ggml_row_bytes(t.type, t.shape[0]), rb = ggml_row_bytes(type, t.shape[0]);
        std::vector<float> row(static_cast<size_t>(n_in));
        std::vector<uint8_t> bytes(static_cast<size_t>(rb * static_cast<uint64_t>(rows)));
        for (int64_t r = 0; r < rows; ++r) {
            quant::dequantize_row(t.type, src.tensor_data(t) + static_cast<uint64_t>(r) * src_rb, row.data(), n_in);
            quant::quantize_row(type, row.data(), bytes.data() + static_cast<uint64_t>(r) * rb, n_in);
        }
        w.add_tensor(t.name, type, t.shape, std::move(bytes));
        ++n;
    }
    w.write(dst);
    return n;
}

}  // namespace kiln::test
