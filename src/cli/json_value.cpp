#include "json_value.h"

#include <charconv>
#include <cstdlib>

namespace kiln::cli {

using gguf::Value;
using gguf::ValueType;

namespace {

double shortest_f32(double v) {
    float f = static_cast<float>(v);
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, f);
    *r.ptr = '\0';
    return std::strtod(buf, nullptr);
}

nlohmann::json scalar_json(const Value& v) {
    switch (v.type()) {
        case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64: return v.raw_u64();
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64: return v.raw_i64();
        case ValueType::F32: return shortest_f32(v.raw_f64());
        case ValueType::F64: return v.raw_f64();
        case ValueType::Bool: return v.raw_bool();
        case ValueType::String: return v.raw_string();
        case ValueType::Array: break;
    }
    return nullptr;
}

std::string scalar_text(const Value& v) {
    if (v.type() == ValueType::String) return "'" + v.raw_string() + "'";
    if (v.type() == ValueType::F32 || v.type() == ValueType::F64) {
        char buf[64];
        auto r = v.type() == ValueType::F32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v.raw_f64()))
                                            : std::to_chars(buf, buf + sizeof buf, v.raw_f64());
        return std::string(buf, r.ptr);
    }
    return scalar_json(v).dump();
}

}  // namespace

nlohmann::json value_to_json(const gguf::File& file, const Value& value) {
    if (value.type() != ValueType::Array) return scalar_json(value);
    nlohmann::json arr = nlohmann::json::array();
    for (const Value& item : file.read_array(value)) arr.push_back(value_to_json(file, item));
    return arr;
}

std::string value_to_text(const gguf::File& file, const Value& value, size_t max_items) {
    if (value.type() != ValueType::Array) {
        std::string s = scalar_text(value);
        if (value.type() == ValueType::String && s.size() > 200)
            return "'" + value.raw_string().substr(0, 120) + "...' (" + std::to_string(value.raw_string().size()) + " bytes)";
        return s;
    }
    std::string out = "[";
    if (value.count() > max_items)
        out += std::to_string(value.count()) + " x " + std::string(gguf::value_type_name(value.elem_type())) + ": ";
    std::vector<Value> items;
    if (!value.lazy()) {
        items.assign(value.items().begin(), value.items().begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(value.count(), max_items)));
    } else {
        items = file.read_array(value);
        items.resize(static_cast<size_t>(std::min<uint64_t>(value.count(), max_items)));
    }
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += value_to_text(file, items[i], max_items);
    }
    if (value.count() > max_items) out += ", ...";
    return out + "]";
}

}  // namespace kiln::cli
