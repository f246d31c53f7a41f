#include "kiln/gguf/writer.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "kiln/error.h"

namespace kiln::gguf {

namespace {

struct MemorySink {
    std::vector<uint8_t> bytes;
    void put(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes.insert(bytes.end(), b, b + n);
    }
    uint64_t size() const { return bytes.size(); }
};

struct FileSink {
    std::FILE* f = nullptr;
    std::string path;
    uint64_t written = 0;
    void put(const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, f) != n) throw Error(path + ": write failed");
        written += n;
    }
    uint64_t size() const { return written; }
};

template <typename Sink, typename T>
void put_raw(Sink& s, T v) {
    s.put(&v, sizeof v);
}

template <typename Sink>
void put_string(Sink& s, const std::string& str) {
    put_raw<Sink, uint64_t>(s, str.size());
    s.put(str.data(), str.size());
}

template <typename Sink>
void put_value_body(Sink& s, const Value& v, const std::string& key) {
    switch (v.type()) {
        case ValueType::U8: put_raw<Sink, uint8_t>(s, static_cast<uint8_t>(v.raw_u64())); break;
        case ValueType::I8: put_raw<Sink, int8_t>(s, static_cast<int8_t>(v.raw_i64())); break;
        case ValueType::U16: put_raw<Sink, uint16_t>(s, static_cast<uint16_t>(v.raw_u64())); break;
        case ValueType::I16: put_raw<Sink, int16_t>(s, static_cast<int16_t>(v.raw_i64())); break;
        case ValueType::U32: put_raw<Sink, uint32_t>(s, static_cast<uint32_t>(v.raw_u64())); break;
        case ValueType::I32: put_raw<Sink, int32_t>(s, static_cast<int32_t>(v.raw_i64())); break;
        case ValueType::F32: put_raw<Sink, float>(s, static_cast<float>(v.raw_f64())); break;
        case ValueType::U64: put_raw<Sink, uint64_t>(s, v.raw_u64()); break;
        case ValueType::I64: put_raw<Sink, int64_t>(s, v.raw_i64()); break;
        case ValueType::F64: put_raw<Sink, double>(s, v.raw_f64()); break;
        case ValueType::Bool: put_raw<Sink, uint8_t>(s, v.raw_bool() ? 1 : 0); break;
        case ValueType::String: put_string(s, v.raw_string()); break;
        case ValueType::Array:
            if (v.lazy())
                throw Error("GGUF writer: metadata '" + key +
                            "' is a lazy array; call materialize_metadata on the source file first");
            put_raw<Sink, uint32_t>(s, static_cast<uint32_t>(v.elem_type()));
            put_raw<Sink, uint64_t>(s, v.items().size());
            for (const Value& item : v.items()) {
                if (item.type() != v.elem_type())
                    throw Error("GGUF writer: metadata '" + key + "': array of " +
                                std::string(value_type_name(v.elem_type())) + " holds a " + item.type_description());
                put_value_body(s, item, key);
            }
            break;
    }
}

template <typename Sink>
void pad_to(Sink& s, uint64_t alignment) {
    static const uint8_t zeros[256] = {};
    uint64_t pad = (alignment - s.size() % alignment) % alignment;
    while (pad > 0) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof zeros));
        s.put(zeros, n);
        pad -= n;
    }
}

}  // namespace

void Writer::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> shape, std::vector<uint8_t> data) {
    PendingTensor t{std::move(name), type, std::move(shape), std::move(data), nullptr, 0};
    t.bytes = t.owned.size();
    tensors_.push_back(std::move(t));
}

void Writer::add_tensor_view(std::string name, GgmlType type, std::vector<uint64_t> shape, const uint8_t* data,
                             uint64_t bytes) {
    tensors_.push_back(PendingTensor{std::move(name), type, std::move(shape), {}, data, bytes});
}

template <typename Sink>
void Writer::emit(Sink& s, const std::function<void(uint64_t, uint64_t)>& progress) const {
    uint64_t alignment = k_default_alignment;
    if (const Value* a = metadata_.find("general.alignment")) {
        if (a->type() != ValueType::U32 || a->raw_u64() == 0 || (a->raw_u64() & (a->raw_u64() - 1)))
            throw Error("GGUF writer: general.alignment must be a u32 power of two");
        alignment = a->raw_u64();
    }
    // Validate tensors and lay out their offsets.
    std::set<std::string> names;
    std::vector<uint64_t> offsets;
    uint64_t offset = 0, total = 0;
    for (const PendingTensor& t : tensors_) {
        if (!names.insert(t.name).second) throw Error("GGUF writer: duplicate tensor '" + t.name + "'");
        if (t.shape.empty() || t.shape.size() > 4)
            throw Error("GGUF writer: tensor '" + t.name + "' must have 1 to 4 dimensions");
        uint64_t n = 1;
        for (uint64_t d : t.shape) n *= d;
        uint64_t expect = ggml_row_bytes(t.type, t.shape[0]) * (n / t.shape[0]);
        if (expect != t.bytes)
            throw Error("GGUF writer: tensor '" + t.name + "' has " + std::to_string(t.bytes) + " bytes, its shape and " +
                        std::string(ggml_type_name(t.type)) + " need " + std::to_string(expect));
        offsets.push_back(offset);
        offset += t.bytes;
        offset += (alignment - offset % alignment) % alignment;
        total += t.bytes;
    }

    put_raw<Sink, uint32_t>(s, 0x46554747);
    put_raw<Sink, uint32_t>(s, 3);
    put_raw<Sink, uint64_t>(s, tensors_.size());
    put_raw<Sink, uint64_t>(s, metadata_.size());
    for (const auto& [key, value] : metadata_.entries()) {
        put_string(s, key);
        put_raw<Sink, uint32_t>(s, static_cast<uint32_t>(value.type()));
        put_value_body(s, value, key);
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const PendingTensor& t = tensors_[i];
        put_string(s, t.name);
        put_raw<Sink, uint32_t>(s, static_cast<uint32_t>(t.shape.size()));
        for (uint64_t d : t.shape) put_raw<Sink, uint64_t>(s, d);
        put_raw<Sink, uint32_t>(s, static_cast<uint32_t>(t.type));
        put_raw<Sink, uint64_t>(s, offsets[i]);
    }
    pad_to(s, alignment);
    uint64_t done = 0;
    for (const PendingTensor& t : tensors_) {
        const uint8_t* p = t.data ? t.data : t.owned.data();
        // Write in slices so progress moves on large tensors.
        constexpr uint64_t k_slice = 16u << 20;
        for (uint64_t at = 0; at < t.bytes; at += k_slice) {
            uint64_t n = std::min(k_slice, t.bytes - at);
            s.put(p + at, static_cast<size_t>(n));
            done += n;
            if (progress) progress(done, total);
        }
        pad_to(s, alignment);
    }
}

void Writer::write(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress) const {
    std::string tmp = path + ".tmp";
    FileSink sink;
    sink.path = tmp;
    sink.f = std::fopen(tmp.c_str(), "wb");
    if (!sink.f) throw Error(tmp + ": cannot create: " + std::strerror(errno));
    try {
        emit(sink, progress);
    } catch (...) {
        std::fclose(sink.f);
        std::remove(tmp.c_str());
        throw;
    }
    if (std::fclose(sink.f) != 0) {
        std::remove(tmp.c_str());
        throw Error(tmp + ": write failed");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw Error(path + ": cannot rename from " + tmp + ": " + ec.message());
}

std::vector<uint8_t> Writer::write_to_memory() const {
    MemorySink sink;
    emit(sink, nullptr);
    return std::move(sink.bytes);
}

Metadata materialize_metadata(const File& file) {
    Metadata out;
    for (const auto& [key, value] : file.metadata().entries()) {
        if (value.type() == ValueType::Array && value.lazy())
            out.add(key, Value::array(value.elem_type(), file.read_array(value)));
        else
            out.add(key, value);
    }
    return out;
}

}  // namespace kiln::gguf
