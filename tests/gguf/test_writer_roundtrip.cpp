// read(write(x)) == x for every value type (nested arrays too), for lazy and
// materialised arrays, for tensor bytes, alignment and splits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"

using namespace kiln::gguf;

namespace {

Metadata every_type() {
    Metadata md;
    md.add("general.architecture", Value::string("llama"));
    md.add("t.u8", Value::u8(250));
    md.add("t.i8", Value::i8(-120));
    md.add("t.u16", Value::u16(65000));
    md.add("t.i16", Value::i16(-32000));
    md.add("t.u32", Value::u32(4000000000u));
    md.add("t.i32", Value::i32(-2000000000));
    md.add("t.f32", Value::f32(1e-5f));
    md.add("t.f32_nan", Value::f32(std::numeric_limits<float>::quiet_NaN()));
    md.add("t.f32_inf", Value::f32(-std::numeric_limits<float>::infinity()));
    md.add("t.bool", Value::boolean(true));
    md.add("t.string", Value::string("héllo \xF0\x9F\x98\x80 with \0 inside"));
    md.add("t.empty_string", Value::string(""));
    md.add("t.u64", Value::u64(std::numeric_limits<uint64_t>::max()));
    md.add("t.i64", Value::i64(std::numeric_limits<int64_t>::min()));
    md.add("t.f64", Value::f64(3.141592653589793));
    md.add("t.arr_u8", Value::array(ValueType::U8, {Value::u8(1), Value::u8(2)}));
    md.add("t.arr_i8", Value::array(ValueType::I8, {Value::i8(-1)}));
    md.add("t.arr_u16", Value::array(ValueType::U16, {Value::u16(7)}));
    md.add("t.arr_i16", Value::array(ValueType::I16, {Value::i16(-7)}));
    md.add("t.arr_u32", Value::array(ValueType::U32, {Value::u32(1), Value::u32(2), Value::u32(3)}));
    md.add("t.arr_i32", Value::array(ValueType::I32, {Value::i32(-5), Value::i32(5)}));
    md.add("t.arr_f32", Value::array(ValueType::F32, {Value::f32(0.5f), Value::f32(-2.25f)}));
    md.add("t.arr_bool", Value::array(ValueType::Bool, {Value::boolean(true), Value::boolean(false)}));
    md.add("t.arr_string", Value::array(ValueType::String, {Value::string("a"), Value::string(""), Value::string("ccc")}));
    md.add("t.arr_u64", Value::array(ValueType::U64, {Value::u64(1ull << 60)}));
    md.add("t.arr_i64", Value::array(ValueType::I64, {Value::i64(-(1ll << 60))}));
    md.add("t.arr_f64", Value::array(ValueType::F64, {Value::f64(1e300)}));
    md.add("t.arr_empty", Value::array(ValueType::F32, {}));
    md.add("t.arr_nested",
           Value::array(ValueType::Array,
                        {Value::array(ValueType::U32, {Value::u32(1), Value::u32(2)}),
                         Value::array(ValueType::String, {Value::string("x")}),
                         Value::array(ValueType::Array, {Value::array(ValueType::I8, {Value::i8(3)})})}));
    std::vector<Value> many;
    for (int i = 0; i < 5000; ++i) many.push_back(Value::string("token_" + std::to_string(i)));
    md.add("t.arr_many_strings", Value::array(ValueType::String, many));
    std::vector<Value> floats;
    for (int i = 0; i < 3000; ++i) floats.push_back(Value::f32(static_cast<float>(i) * 0.25f));
    md.add("t.arr_many_f32", Value::array(ValueType::F32, floats));
    return md;
}

std::string write_tmp(const Writer& w, const std::string& name) {
    std::string path = kiln::test::temp_dir() + "/" + name;
    w.write(path);
    return path;
}

}  // namespace

TEST(GgufWriter, EveryValueTypeRoundTrips) {
    for (uint64_t lazy_min : {uint64_t{1}, uint64_t{1024}, uint64_t{1} << 40}) {
        Writer w;
        w.metadata() = every_type();
        std::string path = write_tmp(w, "values.gguf");
        OpenOptions opt;
        opt.lazy_array_min = lazy_min;
        File f = File::open(path, opt);
        EXPECT_EQ(f.version(), 3u);
        const Metadata expect = every_type();
        ASSERT_EQ(f.metadata().size(), expect.size());
        for (size_t i = 0; i < expect.size(); ++i) {
            const auto& [k, v] = expect.entries()[i];
            const auto& [rk, rv] = f.metadata().entries()[i];
            EXPECT_EQ(rk, k);
            if (rv.type() == ValueType::Array) {
                ASSERT_EQ(v.type(), ValueType::Array);
                EXPECT_EQ(rv.elem_type(), v.elem_type()) << k;
                EXPECT_EQ(rv.count(), v.count()) << k;
                EXPECT_EQ(f.read_array(rv), v.items()) << k;
            } else {
                EXPECT_EQ(rv, v) << k;
            }
        }
        // Rewriting a file read back gives identical bytes.
        Writer again;
        again.metadata() = materialize_metadata(f);
        EXPECT_EQ(again.write_to_memory(), w.write_to_memory());
    }
}

TEST(GgufWriter, TypedGettersNameKeyAndTypes) {
    Writer w;
    w.metadata() = every_type();
    File f = File::open(write_tmp(w, "getters.gguf"));
    const Metadata& md = f.metadata();
    EXPECT_EQ(md.get_u32("t.u32"), 4000000000u);
    EXPECT_EQ(md.get_i64("t.i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(md.get_string("general.architecture"), "llama");
    EXPECT_FLOAT_EQ(md.get_f32("t.f32"), 1e-5f);
    EXPECT_EQ(md.get_uint("t.u8"), 250u);
    EXPECT_EQ(md.get_int("t.i16"), -32000);
    try {
        md.get_u32("general.architecture");
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_STREQ(e.what(), "GGUF metadata 'general.architecture': expected u32, found string");
    }
    try {
        md.get_string("t.arr_string");
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_STREQ(e.what(), "GGUF metadata 't.arr_string': expected string, found array[string]");
    }
    try {
        md.get_u32("llama.block_count");
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_STREQ(e.what(), "GGUF metadata key 'llama.block_count' not found");
    }
    EXPECT_THROW(md.get_uint("t.i8"), kiln::Error);  // negative
    EXPECT_THROW(f.read_strings("t.arr_f32"), kiln::Error);
    EXPECT_EQ(f.read_strings("t.arr_many_strings")[4999], "token_4999");
    EXPECT_EQ(f.read_f32s("t.arr_many_f32")[2999], 2999 * 0.25f);
}

TEST(GgufWriter, TensorsAlignedAndBitExact) {
    for (uint32_t alignment : {32u, 64u, 256u}) {
        Writer w;
        w.metadata().add("general.alignment", Value::u32(alignment));
        std::vector<uint8_t> a(4 * 3 * 5), b(18 * 4), c(2 * 7);
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7);
        for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 13 + 1);
        for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<uint8_t>(255 - i);
        w.add_tensor("a", kiln::GgmlType::F32, {3, 5}, a);
        w.add_tensor("b", kiln::GgmlType::Q4_0, {64, 2}, b);
        w.add_tensor("c", kiln::GgmlType::F16, {7}, c);
        File f = File::open(write_tmp(w, "tensors.gguf"));
        EXPECT_EQ(f.alignment(), alignment);
        ASSERT_EQ(f.tensors().size(), 3u);
        for (const auto& [name, bytes] : {std::pair{"a", a}, std::pair{"b", b}, std::pair{"c", c}}) {
            const TensorInfo& t = f.tensor(name);
            EXPECT_EQ(t.offset % alignment, 0u);
            EXPECT_EQ(f.shards()[0].data_offset % alignment, 0u);
            ASSERT_EQ(t.bytes, bytes.size());
            EXPECT_EQ(std::memcmp(f.tensor_data(t), bytes.data(), bytes.size()), 0) << name;
        }
        EXPECT_EQ(f.tensor("b").shape, (std::vector<uint64_t>{64, 2}));
    }
}

TEST(GgufWriter, RefusesInconsistentTensors) {
    Writer w;
    w.add_tensor("a", kiln::GgmlType::Q4_0, {64}, std::vector<uint8_t>(10));
    EXPECT_THROW(w.write_to_memory(), kiln::Error);
    Writer dup;
    dup.add_tensor("a", kiln::GgmlType::F32, {1}, std::vector<uint8_t>(4));
    dup.add_tensor("a", kiln::GgmlType::F32, {1}, std::vector<uint8_t>(4));
    EXPECT_THROW(dup.write_to_memory(), kiln::Error);
}

TEST(GgufSplit, AnyShardOpensTheWholeModel) {
    const std::string prefix = kiln::test::temp_dir() + "/split";
    const int n = 3;
    for (int i = 0; i < n; ++i) {
        Writer w;
        if (i == 0) w.metadata().add("general.architecture", Value::string("llama"));
        w.metadata().add("split.no", Value::u16(static_cast<uint16_t>(i)));
        w.metadata().add("split.count", Value::u16(n));
        w.metadata().add("split.tensors.count", Value::i32(2 * n));
        for (int k = 0; k < 2; ++k) {
            std::vector<uint8_t> bytes(16, static_cast<uint8_t>(10 * i + k));
            w.add_tensor("t" + std::to_string(i) + "_" + std::to_string(k), kiln::GgmlType::F32, {4}, bytes);
        }
        w.write(make_split_name(prefix, i + 1, n));
    }
    for (int open_no = 1; open_no <= n; ++open_no) {
        File f = File::open(make_split_name(prefix, open_no, n));
        ASSERT_EQ(f.shards().size(), 3u);
        EXPECT_EQ(f.metadata().get_string("general.architecture"), "llama");
        ASSERT_EQ(f.tensors().size(), 6u);
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < 2; ++k) {
                const TensorInfo& t = f.tensor("t" + std::to_string(i) + "_" + std::to_string(k));
                EXPECT_EQ(t.shard, static_cast<uint32_t>(i));
                EXPECT_EQ(f.tensor_data(t)[0], 10 * i + k);
            }
    }
    // A missing sibling is an error naming it.
    std::remove(make_split_name(prefix, 2, n).c_str());
    try {
        File::open(make_split_name(prefix, 1, n));
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("split-00002-of-00003.gguf"), std::string::npos) << e.what();
    }
}

TEST(GgufSplit, NameParsing) {
    SplitName s;
    ASSERT_TRUE(parse_split_name("/m/Model-Q4-00002-of-00005.gguf", s));
    EXPECT_EQ(s.prefix, "/m/Model-Q4");
    EXPECT_EQ(s.no, 2);
    EXPECT_EQ(s.count, 5);
    EXPECT_FALSE(parse_split_name("model.gguf", s));
    EXPECT_FALSE(parse_split_name("m-00006-of-00005.gguf", s));
    EXPECT_EQ(make_split_name("x", 1, 3), "x-00001-of-00003.gguf");
}
