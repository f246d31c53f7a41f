#include "kiln/gguf/value.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/error.h"

namespace kiln::gguf {

std::string_view value_type_name(ValueType type) {
    switch (type) {
        case ValueType::U8: return "u8";
        case ValueType::I8: return "i8";
        case ValueType::U16: return "u16";
        case ValueType::I16: return "i16";
        case ValueType::U32: return "u32";
        case ValueType::I32: return "i32";
        case ValueType::F32: return "f32";
        case ValueType::Bool: return "bool";
        case ValueType::String: return "string";
        case ValueType::Array: return "array";
        case ValueType::U64: return "u64";
        case ValueType::I64: return "i64";
        case ValueType::F64: return "f64";
    }
    return "unknown";
}

uint32_t value_type_size(ValueType type) {
    switch (type) {
        case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
        case ValueType::U16: case ValueType::I16: return 2;
        case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
        case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
        case ValueType::String: case ValueType::Array: return 0;
    }
    return 0;
}

Value Value::f32(float v) {
    Value x;
    x.type_ = ValueType::F32;
    x.f_ = v;
    return x;
}

Value Value::f64(double v) {
    Value x;
    x.type_ = ValueType::F64;
    x.f_ = v;
    return x;
}

Value Value::string(std::string v) {
    Value x;
    x.type_ = ValueType::String;
    x.s_ = std::move(v);
    return x;
}

Value Value::array(ValueType elem_type, std::vector<Value> items) {
    Value x;
    x.type_ = ValueType::Array;
    x.elem_type_ = elem_type;
    x.count_ = items.size();
    x.items_ = std::move(items);
    return x;
}

Value Value::lazy_array(ValueType elem_type, uint64_t count, uint64_t file_offset, uint64_t byte_size) {
    Value x;
    x.type_ = ValueType::Array;
    x.elem_type_ = elem_type;
    x.count_ = count;
    x.lazy_ = true;
    x.file_offset_ = file_offset;
    x.byte_size_ = byte_size;
    return x;
}

bool Value::is_integer() const {
    switch (type_) {
        case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
        case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64: return true;
        default: return false;
    }
}

std::string Value::type_description() const {
    if (type_ != ValueType::Array) return std::string(value_type_name(type_));
    return "array[" + std::string(value_type_name(elem_type_)) + "]";
}

bool Value::operator==(const Value& o) const {
    if (type_ != o.type_) return false;
    switch (type_) {
        case ValueType::F32: case ValueType::F64:
            // Bitwise equality, so NaN payloads round-trip too.
            return std::memcmp(&f_, &o.f_, sizeof f_) == 0 || f_ == o.f_;
        case ValueType::String: return s_ == o.s_;
        case ValueType::Array:
            return elem_type_ == o.elem_type_ && count_ == o.count_ && lazy_ == o.lazy_ && items_ == o.items_ &&
                   (!lazy_ || (file_offset_ == o.file_offset_ && byte_size_ == o.byte_size_));
        default: return u_ == o.u_;
    }
}

void Metadata::add(std::string key, Value value) {
    auto it = index_.find(key);
    if (it != index_.end()) {
        entries_[it->second].second = std::move(value);
        return;
    }
    index_.emplace(key, entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
}

bool Metadata::erase(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
    index_.clear();
    for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
    return true;
}

const Value* Metadata::find(std::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value& Metadata::at(std::string_view key) const {
    const Value* v = find(key);
    if (!v) throw Error("GGUF metadata key '" + std::string(key) + "' not found");
    return *v;
}

void Metadata::type_error(std::string_view key, std::string_view expected, const Value& found) {
    throw Error("GGUF metadata '" + std::string(key) + "': expected " + std::string(expected) + ", found " +
                found.type_description());
}

const Value& Metadata::expect(std::string_view key, ValueType type) const {
    const Value& v = at(key);
    if (v.type() != type) type_error(key, value_type_name(type), v);
    return v;
}

uint8_t Metadata::get_u8(std::string_view key) const { return static_cast<uint8_t>(expect(key, ValueType::U8).raw_u64()); }
int8_t Metadata::get_i8(std::string_view key) const { return static_cast<int8_t>(expect(key, ValueType::I8).raw_i64()); }
uint16_t Metadata::get_u16(std::string_view key) const { return static_cast<uint16_t>(expect(key, ValueType::U16).raw_u64()); }
int16_t Metadata::get_i16(std::string_view key) const { return static_cast<int16_t>(expect(key, ValueType::I16).raw_i64()); }
uint32_t Metadata::get_u32(std::string_view key) const { return static_cast<uint32_t>(expect(key, ValueType::U32).raw_u64()); }
int32_t Metadata::get_i32(std::string_view key) const { return static_cast<int32_t>(expect(key, ValueType::I32).raw_i64()); }
uint64_t Metadata::get_u64(std::string_view key) const { return expect(key, ValueType::U64).raw_u64(); }
int64_t Metadata::get_i64(std::string_view key) const { return expect(key, ValueType::I64).raw_i64(); }
float Metadata::get_f32(std::string_view key) const { return static_cast<float>(expect(key, ValueType::F32).raw_f64()); }
double Metadata::get_f64(std::string_view key) const { return expect(key, ValueType::F64).raw_f64(); }
bool Metadata::get_bool(std::string_view key) const { return expect(key, ValueType::Bool).raw_bool(); }
const std::string& Metadata::get_string(std::string_view key) const { return expect(key, ValueType::String).raw_string(); }
const Value& Metadata::get_array(std::string_view key) const { return expect(key, ValueType::Array); }

static bool is_signed_type(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

uint64_t Metadata::get_uint(std::string_view key) const {
    const Value& v = at(key);
    if (!v.is_integer()) type_error(key, "an unsigned integer", v);
    if (is_signed_type(v.type()) && v.raw_i64() < 0)
        throw Error("GGUF metadata '" + std::string(key) + "': expected a non-negative integer, found " +
                    std::to_string(v.raw_i64()));
    return v.raw_u64();
}

int64_t Metadata::get_int(std::string_view key) const {
    const Value& v = at(key);
    if (!v.is_integer()) type_error(key, "an integer", v);
    if (v.type() == ValueType::U64 && v.raw_u64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error("GGUF metadata '" + std::string(key) + "': value " + std::to_string(v.raw_u64()) +
                    " does not fit in i64");
    return v.raw_i64();
}

double Metadata::get_float(std::string_view key) const {
    const Value& v = at(key);
    if (!v.is_float()) type_error(key, "f32 or f64", v);
    return v.raw_f64();
}

std::optional<uint64_t> Metadata::find_uint(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_uint(key);
}
std::optional<double> Metadata::find_float(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_float(key);
}
std::optional<bool> Metadata::find_bool(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_bool(key);
}
std::optional<std::string> Metadata::find_string(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_string(key);
}

}  // namespace kiln::gguf
