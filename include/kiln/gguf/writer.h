// GGUF writer (version 3, little-endian): metadata in insertion order, tensors
// aligned to general.alignment (32 unless the metadata sets it). Used for the tiny
// random test models and for rewriting a file's metadata. Written to NAME.tmp and
// renamed, so a failed write never leaves a half file under the final name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/gguf/file.h"
#include "kiln/gguf/value.h"

namespace kiln::gguf {

class Writer {
public:
    Metadata& metadata() { return metadata_; }

    // The writer keeps a copy of the bytes.
    void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> shape, std::vector<uint8_t> data);
    // The bytes must stay valid until write() returns (e.g. another file's mapping).
    void add_tensor_view(std::string name, GgmlType type, std::vector<uint64_t> shape, const uint8_t* data,
                         uint64_t bytes);

    // progress(done_bytes, total_bytes) is called as tensor data is written.
    void write(const std::string& path,
               const std::function<void(uint64_t, uint64_t)>& progress = nullptr) const;
    std::vector<uint8_t> write_to_memory() const;

private:
    struct PendingTensor {
        std::string name;
        GgmlType type;
        std::vector<uint64_t> shape;
        std::vector<uint8_t> owned;
        const uint8_t* data = nullptr;
        uint64_t bytes = 0;
    };
    template <typename Sink>
    void emit(Sink& sink, const std::function<void(uint64_t, uint64_t)>& progress) const;

    Metadata metadata_;
    std::vector<PendingTensor> tensors_;
};

// A copy of `file`'s metadata with every lazy array read into memory, ready to be
// changed and handed to a Writer.
Metadata materialize_metadata(const File& file);

}  // namespace kiln::gguf
