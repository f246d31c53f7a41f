// libFuzzer target for the GGUF reader: any byte string must parse or fail with
// kiln::Error — never crash, hang or allocate unboundedly.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/model_card.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "/tmp/kiln-fuzz-gguf-" + std::to_string(::getpid()) + ".gguf";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
        kiln::gguf::OpenOptions opt;
        opt.follow_split = false;
        opt.lazy_array_min = 4;  // exercise the lazy path on small inputs too
        kiln::gguf::File file = kiln::gguf::File::open(path, opt);
        (void)kiln::describe_model(file);
        for (const auto& [key, value] : file.metadata().entries())
            if (value.type() == kiln::gguf::ValueType::Array) (void)file.read_array(value);
        for (const auto& t : file.tensors()) {
            const uint8_t* p = file.tensor_data(t);
            if (t.bytes) (void)(p[0] + p[t.bytes - 1]);  // in range, or ASan reports it
        }
    } catch (const kiln::Error&) {
    }
    return 0;
}
