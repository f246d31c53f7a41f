// SHA-256 of files (presets' pins, `kiln pull`'s check), through OpenSSL's
// libcrypto: the Debian package kiln already needs for https, and it uses the
// CPU's SHA instructions (a multi-GB model hashes in seconds).
#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "kiln/catalog.h"
#include "kiln/error.h"

namespace kiln {

namespace {

struct Digest {
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
    Digest() {
        if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("SHA-256: cannot start a digest", ErrorKind::Internal);
    }
    void update(const void* p, size_t n) {
        if (EVP_DigestUpdate(ctx.get(), p, n) != 1) throw Error("SHA-256: digest update failed", ErrorKind::Internal);
    }
    std::string hex() {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) throw Error("SHA-256: digest failed", ErrorKind::Internal);
        static const char* k_hex = "0123456789abcdef";
        std::string s;
        for (unsigned int i = 0; i < len; ++i) s += k_hex[md[i] >> 4], s += k_hex[md[i] & 15];
        return s;
    }
};

}  // namespace

std::string sha256_hex(const void* data, size_t n) {
    Digest d;
    d.update(data, n);
    return d.hex();
}

std::string sha256_file(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
    Digest d;
    std::vector<unsigned char> buf(size_t{4} << 20);
    for (;;) {
        const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
        if (n > 0) d.update(buf.data(), n);
        if (n < buf.size()) {
            if (std::ferror(f.get())) throw Error(path + ": read error while hashing");
            break;
        }
    }
    return d.hex();
}

}  // namespace kiln
