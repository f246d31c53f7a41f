// GGUF metadata values and the ordered key/value table.
//
// A value is one of the 13 GGUF value types. Arrays hold their elements, except
// large arrays of scalars or strings (tokenizer.ggml.tokens, scores, merges ...),
// which the reader leaves "lazy": element type, count and the file offset of the
// first element, read on demand by gguf::File::read_array. That keeps parsing the
// front of a file cheap and its memory bounded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::gguf {

enum class ValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
    String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
constexpr uint32_t k_value_type_count = 13;

// "u32", "string", "array", ... as used in error messages and `kiln metadata`.
std::string_view value_type_name(ValueType type);
// Encoded size of one element of a fixed-size type; 0 for string and array.
uint32_t value_type_size(ValueType type);

class Value {
public:
    Value() = default;
    static Value u8(uint8_t v) { return scalar(ValueType::U8, v); }
    static Value i8(int8_t v) { return signed_scalar(ValueType::I8, v); }
    static Value u16(uint16_t v) { return scalar(ValueType::U16, v); }
    static Value i16(int16_t v) { return signed_scalar(ValueType::I16, v); }
    static Value u32(uint32_t v) { return scalar(ValueType::U32, v); }
    static Value i32(int32_t v) { return signed_scalar(ValueType::I32, v); }
    static Value u64(uint64_t v) { return scalar(ValueType::U64, v); }
    static Value i64(int64_t v) { return signed_scalar(ValueType::I64, v); }
    static Value f32(float v);
    static Value f64(double v);
    static Value boolean(bool v) { return scalar(ValueType::Bool, v ? 1 : 0); }
    static Value string(std::string v);
    static Value array(ValueType elem_type, std::vector<Value> items);
    // An array whose elements stay in the file (see gguf::File::read_array).
    static Value lazy_array(ValueType elem_type, uint64_t count, uint64_t file_offset, uint64_t byte_size);

    ValueType type() const { return type_; }
    bool is_integer() const;
    bool is_float() const { return type_ == ValueType::F32 || type_ == ValueType::F64; }

    // Raw accessors: the caller has checked type(). Integers are widened.
    uint64_t raw_u64() const { return u_; }
    int64_t raw_i64() const { return static_cast<int64_t>(u_); }
    double raw_f64() const { return f_; }
    bool raw_bool() const { return u_ != 0; }
    const std::string& raw_string() const { return s_; }

    // Arrays.
    ValueType elem_type() const { return elem_type_; }
    uint64_t count() const { return count_; }
    bool lazy() const { return lazy_; }
    const std::vector<Value>& items() const { return items_; }  // empty when lazy
    uint64_t file_offset() const { return file_offset_; }       // lazy arrays only
    uint64_t byte_size() const { return byte_size_; }           // lazy arrays only

    // Type description for errors: "u32", "string", "array[string]".
    std::string type_description() const;

    bool operator==(const Value& o) const;

private:
    static Value scalar(ValueType t, uint64_t v) {
        Value x;
        x.type_ = t;
        x.u_ = v;
        return x;
    }
    static Value signed_scalar(ValueType t, int64_t v) { return scalar(t, static_cast<uint64_t>(v)); }

    ValueType type_ = ValueType::U8;
    uint64_t u_ = 0;  // integers and bool (signed ones sign-extended)
    double f_ = 0;    // f32 and f64
    std::string s_;
    ValueType elem_type_ = ValueType::U8;
    uint64_t count_ = 0;
    bool lazy_ = false;
    uint64_t file_offset_ = 0;
    uint64_t byte_size_ = 0;
    std::vector<Value> items_;
};

// Metadata in file order with lookup by key. Typed getters are strict about the
// stored type and name the key in their errors:
//   GGUF metadata 'llama.block_count': expected u32, found string
class Metadata {
public:
    void add(std::string key, Value value);  // replaces an existing key in place
    bool erase(std::string_view key);

    bool has(std::string_view key) const { return find(key) != nullptr; }
    const Value* find(std::string_view key) const;
    const Value& at(std::string_view key) const;  // missing key: error naming it
    size_t size() const { return entries_.size(); }
    const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

    uint8_t get_u8(std::string_view key) const;
    int8_t get_i8(std::string_view key) const;
    uint16_t get_u16(std::string_view key) const;
    int16_t get_i16(std::string_view key) const;
    uint32_t get_u32(std::string_view key) const;
    int32_t get_i32(std::string_view key) const;
    uint64_t get_u64(std::string_view key) const;
    int64_t get_i64(std::string_view key) const;
    float get_f32(std::string_view key) const;
    double get_f64(std::string_view key) const;
    bool get_bool(std::string_view key) const;
    const std::string& get_string(std::string_view key) const;
    const Value& get_array(std::string_view key) const;

    // Lenient getters for hyperparameters, which converters store with varying
    // integer widths: any integer type whose value fits; floats accept f32 or f64.
    uint64_t get_uint(std::string_view key) const;
    int64_t get_int(std::string_view key) const;
    double get_float(std::string_view key) const;

    std::optional<uint64_t> find_uint(std::string_view key) const;
    std::optional<double> find_float(std::string_view key) const;
    std::optional<bool> find_bool(std::string_view key) const;
    std::optional<std::string> find_string(std::string_view key) const;

    [[noreturn]] static void type_error(std::string_view key, std::string_view expected, const Value& found);

private:
    const Value& expect(std::string_view key, ValueType type) const;

    std::vector<std::pair<std::string, Value>> entries_;
    std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace kiln::gguf
