// GGUF reader: front-only parsing, validation, split files, mapped tensor data.
//
// Opening a file reads only its front (header, metadata, tensor table) through a
// small moving window, never the tensor data, so inspecting a multi-GB model takes
// milliseconds. Every count, length and offset is checked against the file size
// before it drives an allocation or a read. Tensor data is memory-mapped read-only
// on first use and used in place.
//
// A split model (NAME-00001-of-00003.gguf, keys split.count / split.no /
// split.tensors.count) is presented as one tensor table: opening any shard finds
// its siblings. Metadata comes from the first shard.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/gguf/ggml_type.h"
#include "kiln/gguf/value.h"

namespace kiln::gguf {

constexpr uint32_t k_default_alignment = 32;

struct TensorInfo {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<uint64_t> shape;  // ggml order: ne0 (fastest-varying) first; 1 to 4 dims
    uint64_t offset = 0;          // bytes from the start of its shard's data section
    uint64_t bytes = 0;           // size of the data
    uint32_t shard = 0;           // index of the shard holding the data

    uint64_t ne(size_t i) const { return i < shape.size() ? shape[i] : 1; }
    uint64_t n_elements() const;
    uint64_t n_rows() const { return shape.empty() ? 0 : n_elements() / shape[0]; }
    std::string shape_string() const;  // "[576, 49152]"
};

struct OpenOptions {
    bool follow_split = true;          // open the sibling shards of a split model
    uint64_t lazy_array_min = 1024;    // arrays of scalars / strings with more elements stay in the file
};

struct ShardInfo {
    std::string path;
    uint64_t file_size = 0;
    uint64_t data_offset = 0;   // start of the tensor data section (= size of the front)
    uint64_t front_bytes_read = 0;  // bytes actually read while parsing the front
    uint32_t n_tensors = 0;
};

class File {
public:
    // Parses the front of `path` (and its sibling shards). Throws kiln::Error
    // naming the path and the cause on anything malformed.
    static File open(const std::string& path, const OpenOptions& options = {});

    File(File&&) noexcept;
    File& operator=(File&&) noexcept;
    ~File();

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    const Metadata& metadata() const { return metadata_; }

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;
    const TensorInfo& tensor(std::string_view name) const;  // missing: error naming it

    const std::vector<ShardInfo>& shards() const { return shard_info_; }
    uint64_t total_file_size() const;
    uint64_t front_bytes_read() const;  // summed over shards
    uint64_t bytes_read() const;        // front plus lazy arrays read since (not mapped tensor data)

    // Pointer to a tensor's bytes inside the read-only mapping (mapped on first use).
    const uint8_t* tensor_data(const TensorInfo& t) const;
    // Where a tensor's bytes lie for pread: its shard's descriptor (open while the
    // File lives) and the byte offset in that shard (lookup tables read rows this
    // way, so that no page of theirs is mapped; compute/matmul.h matrix_row_f32).
    struct FileLocation {
        int fd = -1;
        uint64_t offset = 0;
    };
    FileLocation tensor_location(const TensorInfo& t) const;
    // Maps every shard now (the engine does this at load so first-token latency is flat).
    void map_all() const;
    // Bytes of mappings created so far.
    uint64_t mapped_bytes() const;

    // Elements of an array value, reading them from the file if it was left lazy.
    std::vector<Value> read_array(const Value& array) const;
    // Typed array helpers (the tokenizer's tokens, scores, token types, merges).
    // Errors name the key and the found element type.
    std::vector<std::string> read_strings(std::string_view key) const;
    std::vector<float> read_f32s(std::string_view key) const;
    std::vector<int32_t> read_i32s(std::string_view key) const;

private:
    File();
    static File open_impl(const std::string& path, const OpenOptions& options);
    struct Shard;
    std::vector<uint8_t> read_lazy_bytes(const Value& array) const;

    std::string path_;
    uint32_t version_ = 0;
    uint32_t alignment_ = k_default_alignment;
    Metadata metadata_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
    std::vector<ShardInfo> shard_info_;
    std::vector<std::unique_ptr<Shard>> shards_;
};

// "model-00002-of-00005.gguf" -> {prefix "model", no 2, count 5}; false if not that form.
struct SplitName {
    std::string prefix;
    int no = 0;
    int count = 0;
};
bool parse_split_name(const std::string& path, SplitName& out);
std::string make_split_name(const std::string& prefix, int no, int count);

}  // namespace kiln::gguf
