#include "gguf/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kiln/error.h"

namespace kiln::gguf {

FileHandle::FileHandle(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        int e = errno;
        ::close(fd_);
        fd_ = -1;
        throw Error(path + ": cannot stat: " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw Error(path + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
}

FileHandle::~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
}

FileHandle::FileHandle(FileHandle&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), size_(o.size_), path_(std::move(o.path_)) {}

FileHandle& FileHandle::operator=(FileHandle&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(o.fd_, -1);
        size_ = o.size_;
        path_ = std::move(o.path_);
    }
    return *this;
}

void FileHandle::read_at(uint64_t offset, void* dst, size_t n) const {
    if (offset > size_ || n > size_ - offset)
        throw Error(path_ + ": truncated: needs bytes up to " + std::to_string(offset + n) + " but the file has " +
                    std::to_string(size_));
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
        ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
        if (got < 0) {
            if (errno == EINTR) continue;
            throw Error(path_ + ": read error: " + std::strerror(errno));
        }
        if (got == 0) throw Error(path_ + ": unexpected end of file at byte " + std::to_string(offset));
        out += got;
        offset += static_cast<uint64_t>(got);
        n -= static_cast<size_t>(got);
    }
}

Mapping::Mapping(const FileHandle& file) : size_(file.size()) {
    if (size_ == 0) return;
    addr_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, file.fd(), 0);
    if (addr_ == MAP_FAILED) {
        addr_ = nullptr;
        throw Error(file.path() + ": mmap failed: " + std::strerror(errno));
    }
}

Mapping::~Mapping() {
    if (addr_) ::munmap(addr_, size_);
}

Mapping::Mapping(Mapping&& o) noexcept : addr_(std::exchange(o.addr_, nullptr)), size_(std::exchange(o.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
    if (this != &o) {
        if (addr_) ::munmap(addr_, size_);
        addr_ = std::exchange(o.addr_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

}  // namespace kiln::gguf
