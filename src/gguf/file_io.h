// POSIX file access for GGUF: an owned descriptor with positional reads, and a
// read-only memory mapping. Errors name the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::gguf {

class FileHandle {
public:
    FileHandle() = default;
    explicit FileHandle(const std::string& path);  // opens read-only; throws naming the path
    ~FileHandle();
    FileHandle(FileHandle&& o) noexcept;
    FileHandle& operator=(FileHandle&& o) noexcept;
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;

    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }
    int fd() const { return fd_; }
    // Reads exactly n bytes at offset; throws if the file is shorter.
    void read_at(uint64_t offset, void* dst, size_t n) const;

private:
    int fd_ = -1;
    uint64_t size_ = 0;
    std::string path_;
};

// Read-only shared mapping of a whole file: weights are used in place.
class Mapping {
public:
    Mapping() = default;
    explicit Mapping(const FileHandle& file);
    ~Mapping();
    Mapping(Mapping&& o) noexcept;
    Mapping& operator=(Mapping&& o) noexcept;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;

    const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
    size_t size() const { return size_; }
    bool mapped() const { return addr_ != nullptr; }

private:
    void* addr_ = nullptr;
    size_t size_ = 0;
};

}  // namespace kiln::gguf
