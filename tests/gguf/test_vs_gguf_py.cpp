// The reader against the `gguf` Python package: every metadata key and value and
// every tensor's name, type, shape, offset and size, on both real models and the
// vocab-only files (fixtures from tools/gguf_fixtures.py).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kiln/gguf/file.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using kiln::gguf::File;
using kiln::gguf::Value;
using kiln::gguf::ValueType;

namespace {

uint64_t fnv1a64(const std::string& bytes, uint64_t h = 0xCBF29CE484222325ull) {
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001B3ull;
    }
    return h;
}

// Canonical bytes of an array, as tools/gguf_fixtures.py defines them.
std::string canonical_bytes(const std::vector<Value>& items, ValueType et) {
    std::string out;
    for (const Value& v : items) {
        auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
        switch (et) {
            case ValueType::U8: case ValueType::I8: case ValueType::Bool: { uint8_t x = static_cast<uint8_t>(v.raw_u64()); put(&x, 1); break; }
            case ValueType::U16: case ValueType::I16: { uint16_t x = static_cast<uint16_t>(v.raw_u64()); put(&x, 2); break; }
            case ValueType::U32: case ValueType::I32: { uint32_t x = static_cast<uint32_t>(v.raw_u64()); put(&x, 4); break; }
            case ValueType::U64: case ValueType::I64: { uint64_t x = v.raw_u64(); put(&x, 8); break; }
            case ValueType::F32: { float x = static_cast<float>(v.raw_f64()); put(&x, 4); break; }
            case ValueType::F64: { double x = v.raw_f64(); put(&x, 8); break; }
            case ValueType::String: { uint64_t n = v.raw_string().size(); put(&n, 8); out += v.raw_string(); break; }
            case ValueType::Array: ADD_FAILURE() << "nested arrays are not in the fixtures"; break;
        }
    }
    return out;
}

void expect_scalar(const std::string& key, const Value& v, const nlohmann::json& expected) {
    switch (v.type()) {
        case ValueType::String: EXPECT_EQ(v.raw_string(), expected.get<std::string>()) << key; break;
        case ValueType::Bool: EXPECT_EQ(v.raw_bool(), expected.get<bool>()) << key; break;
        case ValueType::F32: EXPECT_EQ(static_cast<float>(v.raw_f64()), expected.get<float>()) << key; break;
        case ValueType::F64: EXPECT_EQ(v.raw_f64(), expected.get<double>()) << key; break;
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
            EXPECT_EQ(v.raw_i64(), expected.get<int64_t>()) << key; break;
        default: EXPECT_EQ(v.raw_u64(), expected.get<uint64_t>()) << key; break;
    }
}

void compare_with_fixture(const std::string& gguf_path, const std::string& fixture_path) {
    nlohmann::json fx = nlohmann::json::parse(kiln::test::read_file(fixture_path));
    File f = File::open(gguf_path);
    EXPECT_EQ(f.version(), fx["version"].get<uint32_t>());
    ASSERT_EQ(f.shards().size(), 1u);
    EXPECT_EQ(f.shards()[0].data_offset, fx["data_offset"].get<uint64_t>());

    const auto& entries = f.metadata().entries();
    ASSERT_EQ(entries.size(), fx["metadata"].size());
    for (size_t i = 0; i < entries.size(); ++i) {
        const auto& [key, value] = entries[i];
        const auto& e = fx["metadata"][i];
        ASSERT_EQ(key, e["key"].get<std::string>()) << "key order differs at " << i;
        const std::string type = e["type"];
        if (type == "array") {
            ASSERT_EQ(value.type(), ValueType::Array) << key;
            EXPECT_EQ(std::string(kiln::gguf::value_type_name(value.elem_type())), e["elem_type"].get<std::string>()) << key;
            EXPECT_EQ(value.count(), e["count"].get<uint64_t>()) << key;
            std::vector<Value> items = f.read_array(value);
            ASSERT_EQ(items.size(), value.count()) << key;
            char hex[17];
            std::snprintf(hex, sizeof hex, "%016llx",
                          static_cast<unsigned long long>(fnv1a64(canonical_bytes(items, value.elem_type()))));
            EXPECT_EQ(std::string(hex), e["fnv1a64"].get<std::string>()) << key;
            if (e.contains("items"))
                for (size_t k = 0; k < items.size(); ++k) expect_scalar(key, items[k], e["items"][k]);
        } else {
            EXPECT_EQ(std::string(kiln::gguf::value_type_name(value.type())), type) << key;
            expect_scalar(key, value, e["value"]);
        }
    }

    const auto& tensors = f.tensors();
    ASSERT_EQ(tensors.size(), fx["tensors"].size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& t = tensors[i];
        const auto& e = fx["tensors"][i];
        EXPECT_EQ(t.name, e["name"].get<std::string>());
        EXPECT_EQ(std::string(kiln::ggml_type_name(t.type)), e["type"].get<std::string>()) << t.name;
        EXPECT_EQ(t.shape, e["shape"].get<std::vector<uint64_t>>()) << t.name;
        EXPECT_EQ(t.offset, e["offset"].get<uint64_t>()) << t.name;
        EXPECT_EQ(t.bytes, e["bytes"].get<uint64_t>()) << t.name;
    }
}

}  // namespace

TEST(GgufVsPython, SmolLM2) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    compare_with_fixture(kiln::test::smollm2_path(), kiln::test::golden_path("gguf/SmolLM2-135M-Instruct.Q4_1.gguf.json"));
}

TEST(GgufVsPython, Gemma3) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    compare_with_fixture(kiln::test::gemma3_path(), kiln::test::golden_path("gguf/gemma-3-270m-q4_k_m.gguf.json"));
}

TEST(GgufVsPython, VocabFiles) {
    int n = 0;
    for (const auto& entry : fs::directory_iterator(kiln::test::data_path("shared/tokenizer"))) {
        if (entry.path().extension() != ".gguf") continue;
        std::string fixture = kiln::test::golden_path("gguf/" + entry.path().filename().string() + ".json");
        ASSERT_TRUE(fs::exists(fixture)) << "no fixture for " << entry.path() << " (run tools/gguf_fixtures.py)";
        SCOPED_TRACE(entry.path().filename().string());
        compare_with_fixture(entry.path().string(), fixture);
        ++n;
    }
    EXPECT_GE(n, 12);
}

TEST(GgufVsPython, TypeTable) {
    nlohmann::json fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("gguf/ggml_types.json")));
    size_t n = 0;
    for (const auto& e : fx) {
        const kiln::GgmlTypeInfo* info = kiln::find_ggml_type(e["id"].get<uint32_t>());
        ASSERT_NE(info, nullptr) << "type " << e["name"] << " missing from kiln's table";
        EXPECT_EQ(std::string(info->name), e["name"].get<std::string>());
        EXPECT_EQ(info->block_size, e["block_size"].get<uint32_t>()) << info->name;
        // The gguf package 0.19 lists Q8_1 at 40 bytes; ggml's type_size and its
        // quantizer write 36 (f16 d, f16 s, 32 x int8), which is what files hold.
        if (info->type == kiln::GgmlType::Q8_1)
            EXPECT_EQ(info->block_bytes, 36u);
        else
            EXPECT_EQ(info->block_bytes, e["block_bytes"].get<uint32_t>()) << info->name;
        ++n;
    }
    EXPECT_EQ(n, kiln::ggml_types().size()) << "kiln knows types the gguf package does not";
}
