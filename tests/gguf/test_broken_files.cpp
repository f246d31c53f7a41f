// Broken and hostile files: each one yields kiln::Error naming the path and the
// cause; none crashes, hangs or allocates wildly (run under ASan in the fuzz build).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"

using kiln::gguf::File;

TEST(GgufBroken, CommittedCorpus) {
    const std::string dir = kiln::test::data_path("broken/");
    nlohmann::json manifest = nlohmann::json::parse(kiln::test::read_file(dir + "MANIFEST.json"));
    ASSERT_GE(manifest.size(), 30u);
    for (const auto& [name, expect] : manifest.items()) {
        const std::string path = dir + name;
        try {
            File f = File::open(path);
            ADD_FAILURE() << name << ": opened without error";
        } catch (const kiln::Error& e) {
            std::string msg = e.what();
            EXPECT_NE(msg.find(expect.get<std::string>()), std::string::npos) << name << ": got '" << msg << "'";
            EXPECT_EQ(msg.rfind(path, 0), 0u) << name << ": error does not start with the path: " << msg;
        }
    }
}

TEST(GgufBroken, MissingFileAndDirectory) {
    EXPECT_THROW(File::open("/nonexistent/kiln/model.gguf"), kiln::Error);
    EXPECT_THROW(File::open(kiln::test::temp_dir()), kiln::Error);
}

namespace {

std::vector<uint8_t> small_model_bytes() {
    kiln::gguf::Writer w;
    w.metadata().add("general.architecture", kiln::gguf::Value::string("llama"));
    w.metadata().add("general.name", kiln::gguf::Value::string("tiny"));
    std::vector<kiln::gguf::Value> toks;
    for (int i = 0; i < 40; ++i) toks.push_back(kiln::gguf::Value::string("tok" + std::to_string(i)));
    w.metadata().add("tokenizer.ggml.tokens", kiln::gguf::Value::array(kiln::gguf::ValueType::String, toks));
    w.add_tensor("a", kiln::GgmlType::F32, {8, 2}, std::vector<uint8_t>(64, 1));
    w.add_tensor("b", kiln::GgmlType::Q4_0, {32}, std::vector<uint8_t>(18, 2));
    return w.write_to_memory();
}

}  // namespace

// Every truncation point of a valid file fails cleanly (or, past the front, at
// the tensor data check).
TEST(GgufBroken, TruncatedAtEveryByte) {
    std::vector<uint8_t> bytes = small_model_bytes();
    const std::string path = kiln::test::temp_dir() + "/truncated.gguf";
    size_t needed = 0;  // the file may lose its trailing padding and stay valid
    {
        std::string full(bytes.begin(), bytes.end());
        kiln::test::write_file(path, full);
        File f = File::open(path);
        for (const auto& t : f.tensors())
            needed = std::max<size_t>(needed, f.shards()[0].data_offset + t.offset + t.bytes);
    }
    ASSERT_GT(needed, 0u);
    for (size_t cut = 0; cut < needed; ++cut) {
        kiln::test::write_file(path, std::string(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)));
        kiln::gguf::OpenOptions opt;
        opt.lazy_array_min = cut % 2 ? 4 : 1024;  // both the lazy and the materialised path
        EXPECT_THROW(File::open(path, opt), kiln::Error) << "cut at " << cut;
    }
}

// Random byte flips in the front of a valid file never crash.
TEST(GgufBroken, ByteFlips) {
    std::vector<uint8_t> bytes = small_model_bytes();
    const std::string path = kiln::test::temp_dir() + "/flipped.gguf";
    uint64_t state = 12345;
    int opened = 0, refused = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        std::vector<uint8_t> b = bytes;
        for (int k = 0; k < 1 + iter % 4; ++k) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (state >> 33) % std::min<size_t>(b.size(), 600);
            b[pos] = static_cast<uint8_t>(state >> 17);
        }
        kiln::test::write_file(path, std::string(b.begin(), b.end()));
        try {
            File f = File::open(path);
            for (const auto& t : f.tensors()) (void)f.tensor_data(t)[t.bytes - 1];
            ++opened;
        } catch (const kiln::Error&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_EQ(opened + refused, 3000);
}
