#include "kiln/gguf/file.h"

#include "gguf/file_io.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <regex>
#include <set>

#include "kiln/error.h"

namespace kiln::gguf {

namespace {

constexpr uint32_t k_magic_le = 0x46554747;  // "GGUF" read as little-endian u32
constexpr size_t k_window = 256 * 1024;      // read granularity of the front parser
constexpr int k_max_array_depth = 8;         // nested arrays deeper than this are refused
constexpr uint64_t k_max_dims = 4;

// Reads the front of a file through a moving window. All positions are absolute
// file offsets; every read is checked against the file size first.
class FrontCursor {
public:
    explicit FrontCursor(const FileHandle& file) : file_(file) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return file_.size() - pos_; }
    uint64_t bytes_read() const { return bytes_read_; }

    // Error with the path prefix and the current offset.
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(file_.path() + ": " + what);
    }

    void need(uint64_t n, const char* what) {
        if (n > remaining())
            fail("truncated while reading " + std::string(what) + " at byte " + std::to_string(pos_) + " (needs " +
                 std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left)");
    }

    const uint8_t* take(uint64_t n, const char* what) {
        need(n, what);
        if (pos_ < win_start_ || pos_ + n > win_start_ + window_.size()) {
            size_t len = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(n, k_window), remaining()));
            window_.resize(len);
            file_.read_at(pos_, window_.data(), len);
            bytes_read_ += len;
            win_start_ = pos_;
        }
        const uint8_t* p = window_.data() + (pos_ - win_start_);
        pos_ += n;
        return p;
    }

    void skip(uint64_t n, const char* what) {
        need(n, what);
        pos_ += n;
    }

    template <typename T>
    T read(const char* what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }

    std::string read_string(const char* what) {
        uint64_t len = read<uint64_t>(what);
        if (len > remaining())
            fail("truncated or corrupt: " + std::string(what) + " length " + std::to_string(len) + " at byte " + std::to_string(pos_ - 8) +
                 " exceeds the " + std::to_string(remaining()) + " bytes left in the file");
        const uint8_t* p = take(len, what);
        return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    }

private:
    const FileHandle& file_;
    uint64_t pos_ = 0;
    std::vector<uint8_t> window_;
    uint64_t win_start_ = 0;
    uint64_t bytes_read_ = 0;
};

bool valid_value_type(uint32_t t) { return t < k_value_type_count; }

// Smallest encoding of one element, used to bound counts by the bytes left.
uint64_t min_encoded_size(ValueType t) {
    if (t == ValueType::String) return 8;
    if (t == ValueType::Array) return 12;
    return value_type_size(t);
}

Value read_scalar(FrontCursor& c, ValueType t, const std::string& key) {
    switch (t) {
        case ValueType::U8: return Value::u8(c.read<uint8_t>("a u8 value"));
        case ValueType::I8: return Value::i8(c.read<int8_t>("an i8 value"));
        case ValueType::U16: return Value::u16(c.read<uint16_t>("a u16 value"));
        case ValueType::I16: return Value::i16(c.read<int16_t>("an i16 value"));
        case ValueType::U32: return Value::u32(c.read<uint32_t>("a u32 value"));
        case ValueType::I32: return Value::i32(c.read<int32_t>("an i32 value"));
        case ValueType::F32: return Value::f32(c.read<float>("an f32 value"));
        case ValueType::U64: return Value::u64(c.read<uint64_t>("a u64 value"));
        case ValueType::I64: return Value::i64(c.read<int64_t>("an i64 value"));
        case ValueType::F64: return Value::f64(c.read<double>("an f64 value"));
        case ValueType::Bool: {
            uint8_t b = c.read<uint8_t>("a bool value");
            if (b > 1) c.fail("metadata '" + key + "': bool value " + std::to_string(b) + " is not 0 or 1");
            return Value::boolean(b != 0);
        }
        case ValueType::String: return Value::string(c.read_string("a string value"));
        case ValueType::Array: break;
    }
    c.fail("metadata '" + key + "': internal error reading a scalar");
}

Value read_value(FrontCursor& c, ValueType t, const std::string& key, const OpenOptions& opt, int depth) {
    if (t != ValueType::Array) return read_scalar(c, t, key);
    if (depth >= k_max_array_depth)
        c.fail("metadata '" + key + "': arrays nested deeper than " + std::to_string(k_max_array_depth));
    uint32_t et = c.read<uint32_t>("an array element type");
    if (!valid_value_type(et)) c.fail("metadata '" + key + "': unknown array element type " + std::to_string(et));
    auto elem = static_cast<ValueType>(et);
    uint64_t count = c.read<uint64_t>("an array length");
    uint64_t min_size = min_encoded_size(elem);
    if (count > c.remaining() / min_size)
        c.fail("metadata '" + key + "': array of " + std::to_string(count) + " " +
               std::string(value_type_name(elem)) + " elements cannot fit in the " + std::to_string(c.remaining()) +
               " bytes left in the file");
    if (depth == 0 && elem != ValueType::Array && count >= opt.lazy_array_min && count > 0) {
        uint64_t start = c.pos();
        if (elem == ValueType::String) {
            for (uint64_t i = 0; i < count; ++i) {
                uint64_t len = c.read<uint64_t>("a string length");
                if (len > c.remaining())
                    c.fail("metadata '" + key + "': string " + std::to_string(i) + " of length " +
                           std::to_string(len) + " runs past the end of the file");
                c.skip(len, "a string");
            }
        } else {
            c.skip(count * min_size, "array data");
        }
        return Value::lazy_array(elem, count, start, c.pos() - start);
    }
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(c, elem, key, opt, depth + 1));
    return Value::array(elem, std::move(items));
}

struct ParsedFront {
    uint32_t version = 0;
    uint32_t alignment = k_default_alignment;
    Metadata metadata;
    std::vector<TensorInfo> tensors;
    uint64_t data_offset = 0;
    uint64_t bytes_read = 0;
};

void check_header(FrontCursor& c, uint32_t& version) {
    c.need(8, "the header");
    uint32_t magic = c.read<uint32_t>("the magic");
    if (magic != k_magic_le) {
        if (magic == __builtin_bswap32(k_magic_le)) c.fail("big-endian GGUF files are not supported");
        c.fail("not a GGUF file (bad magic)");
    }
    version = c.read<uint32_t>("the version");
    if (version == 2 || version == 3) return;
    uint32_t swapped = __builtin_bswap32(version);
    if ((version & 0xFFFFu) == 0 && swapped >= 1 && swapped <= 3)
        c.fail("big-endian GGUF (version " + std::to_string(swapped) + ") is not supported");
    c.fail("GGUF version " + std::to_string(version) + " is not supported (only versions 2 and 3)");
}

void validate_tensors(FrontCursor& c, ParsedFront& p, uint64_t file_size) {
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(p.tensors.size());
    for (const TensorInfo& t : p.tensors) {
        const std::string where = "tensor '" + t.name + "'";
        if (t.offset % p.alignment != 0)
            c.fail(where + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                   std::to_string(p.alignment));
        uint64_t available = file_size - p.data_offset;
        if (t.offset > available || t.bytes > available - t.offset)
            c.fail(where + ": data [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.bytes) +
                   ") of the data section runs past the end of the file (" + std::to_string(available) +
                   " data bytes)");
        by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const TensorInfo* a = by_offset[i - 1];
        const TensorInfo* b = by_offset[i];
        if (a->offset + a->bytes > b->offset)
            c.fail("tensors '" + a->name + "' and '" + b->name + "' overlap in the data section");
    }
}

TensorInfo read_tensor_info(FrontCursor& c, uint64_t index) {
    TensorInfo t;
    t.name = c.read_string("a tensor name");
    const std::string where = "tensor " + std::to_string(index) + " '" + t.name + "'";
    if (t.name.empty()) c.fail("tensor " + std::to_string(index) + " has an empty name");
    uint32_t n_dims = c.read<uint32_t>("a tensor dimension count");
    if (n_dims < 1 || n_dims > k_max_dims)
        c.fail(where + ": " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
        uint64_t ne = c.read<uint64_t>("a tensor dimension");
        if (ne == 0) c.fail(where + ": dimension " + std::to_string(d) + " is zero");
        if (__builtin_mul_overflow(n_elements, ne, &n_elements) ||
            n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            c.fail(where + ": element count overflows");
        t.shape.push_back(ne);
    }
    uint32_t type_id = c.read<uint32_t>("a tensor type");
    const GgmlTypeInfo* info = find_ggml_type(type_id);
    if (!info) c.fail(where + ": unknown ggml type id " + std::to_string(type_id));
    t.type = info->type;
    if (t.shape[0] % info->block_size != 0)
        c.fail(where + ": row length " + std::to_string(t.shape[0]) + " is not a multiple of the " +
               std::string(info->name) + " block size " + std::to_string(info->block_size));
    uint64_t blocks = n_elements / info->block_size;
    if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info->block_bytes), &t.bytes))
        c.fail(where + ": byte size overflows");
    t.offset = c.read<uint64_t>("a tensor offset");
    return t;
}

ParsedFront parse_front(const FileHandle& file, const OpenOptions& opt) {
    FrontCursor c(file);
    ParsedFront p;
    check_header(c, p.version);
    uint64_t n_tensors = c.read<uint64_t>("the tensor count");
    uint64_t n_kv = c.read<uint64_t>("the metadata count");
    // Minimum encodings: a key/value is >= 13 bytes, a tensor entry >= 32 bytes.
    if (n_kv > c.remaining() / 13)
        c.fail("metadata count " + std::to_string(n_kv) + " is impossible for a file of " +
               std::to_string(file.size()) + " bytes");
    if (n_tensors > c.remaining() / 32)
        c.fail("tensor count " + std::to_string(n_tensors) + " is impossible for a file of " +
               std::to_string(file.size()) + " bytes");
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.read_string("a metadata key");
        if (key.empty()) c.fail("metadata entry " + std::to_string(i) + " has an empty key");
        if (p.metadata.has(key)) c.fail("duplicate metadata key '" + key + "'");
        uint32_t vt = c.read<uint32_t>("a metadata value type");
        if (!valid_value_type(vt))
            c.fail("metadata '" + key + "': unknown value type " + std::to_string(vt));
        Value v = read_value(c, static_cast<ValueType>(vt), key, opt, 0);
        p.metadata.add(std::move(key), std::move(v));
    }
    if (const Value* a = p.metadata.find("general.alignment")) {
        if (a->type() != ValueType::U32) Metadata::type_error("general.alignment", "u32", *a);
        uint64_t al = a->raw_u64();
        if (al == 0 || (al & (al - 1)) != 0)
            c.fail("general.alignment " + std::to_string(al) + " is not a power of two");
        p.alignment = static_cast<uint32_t>(al);
    }
    std::set<std::string, std::less<>> names;
    p.tensors.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        TensorInfo t = read_tensor_info(c, i);
        if (!names.insert(t.name).second) c.fail("duplicate tensor name '" + t.name + "'");
        p.tensors.push_back(std::move(t));
    }
    uint64_t end = c.pos();
    uint64_t pad = (p.alignment - end % p.alignment) % p.alignment;
    p.data_offset = end + pad;
    if (p.data_offset > file.size()) {
        if (!p.tensors.empty())
            c.fail("truncated: the data section would start at byte " + std::to_string(p.data_offset) +
                   " but the file has " + std::to_string(file.size()));
        // A file without tensors (vocab-only) may end before the padding; the data
        // section is empty and its nominal start stays aligned, as the gguf package reports it.
    }
    validate_tensors(c, p, file.size());
    p.bytes_read = c.bytes_read();
    return p;
}

}  // namespace

struct File::Shard {
    FileHandle handle;
    mutable std::once_flag map_once;
    mutable Mapping mapping;
    uint64_t data_offset = 0;
    mutable std::atomic<uint64_t> lazy_bytes_read{0};
};

uint64_t TensorInfo::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
}

std::string TensorInfo::shape_string() const {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

bool parse_split_name(const std::string& path, SplitName& out) {
    static const std::regex pattern(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)");
    std::smatch m;
    if (!std::regex_match(path, m, pattern)) return false;
    out.prefix = m[1];
    out.no = std::stoi(m[2]);
    out.count = std::stoi(m[3]);
    return out.no >= 1 && out.count >= 1 && out.no <= out.count;
}

std::string make_split_name(const std::string& prefix, int no, int count) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", no, count);
    return prefix + buf;
}

File::File() = default;
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const std::string& path, const OpenOptions& options) {
    try {
        return open_impl(path, options);
    } catch (const Error& e) {
        // Every error names a file: errors from typed getters get the path prefixed.
        std::string_view msg = e.what();
        SplitName split;
        bool named = msg.starts_with(path) || (parse_split_name(path, split) && msg.starts_with(split.prefix));
        if (named) throw;
        throw Error(path + ": " + std::string(msg));
    }
}

File File::open_impl(const std::string& path, const OpenOptions& options) {
    File f;
    f.path_ = path;
    auto add_shard = [&](const std::string& shard_path) -> ParsedFront {
        auto shard = std::make_unique<Shard>();
        shard->handle = FileHandle(shard_path);
        ParsedFront p;
        try {
            p = parse_front(shard->handle, options);
        } catch (const Error& e) {
            // Errors raised below the cursor (typed metadata getters) do not know the path.
            if (std::string_view(e.what()).starts_with(shard_path)) throw;
            throw Error(shard_path + ": " + e.what());
        }
        shard->data_offset = p.data_offset;
        ShardInfo info;
        info.path = shard_path;
        info.file_size = shard->handle.size();
        info.data_offset = p.data_offset;
        info.front_bytes_read = p.bytes_read;
        info.n_tensors = static_cast<uint32_t>(p.tensors.size());
        f.shard_info_.push_back(info);
        f.shards_.push_back(std::move(shard));
        return p;
    };

    ParsedFront first = add_shard(path);
    uint64_t split_count = 1;
    if (const Value* sc = first.metadata.find("split.count")) {
        if (!sc->is_integer()) Metadata::type_error("split.count", "u16", *sc);
        split_count = sc->raw_u64();
    }
    if (split_count <= 1 || !options.follow_split) {
        f.version_ = first.version;
        f.alignment_ = first.alignment;
        f.metadata_ = std::move(first.metadata);
        f.tensors_ = std::move(first.tensors);
    } else {
        SplitName name;
        if (!parse_split_name(path, name))
            throw Error(path + ": split.count is " + std::to_string(split_count) +
                        " but the file name does not have the form NAME-00001-of-" + std::to_string(split_count) +
                        ".gguf");
        if (static_cast<uint64_t>(name.count) != split_count)
            throw Error(path + ": file name says " + std::to_string(name.count) + " shards but split.count is " +
                        std::to_string(split_count));
        uint64_t own_no = first.metadata.get_uint("split.no");
        if (own_no != static_cast<uint64_t>(name.no - 1))
            throw Error(path + ": split.no is " + std::to_string(own_no) + " but the file name says shard " +
                        std::to_string(name.no));
        // Reorder so that shard 0 comes first; keep the already-parsed shard.
        std::vector<ParsedFront> parsed(split_count);
        std::vector<std::unique_ptr<Shard>> shards(split_count);
        std::vector<ShardInfo> infos(split_count);
        parsed[own_no] = std::move(first);
        shards[own_no] = std::move(f.shards_[0]);
        infos[own_no] = f.shard_info_[0];
        f.shards_.clear();
        f.shard_info_.clear();
        for (uint64_t i = 0; i < split_count; ++i) {
            if (i == own_no) continue;
            std::string sibling = make_split_name(name.prefix, static_cast<int>(i + 1), name.count);
            ParsedFront p = add_shard(sibling);
            uint64_t no = p.metadata.get_uint("split.no");
            uint64_t count = p.metadata.get_uint("split.count");
            if (no != i || count != split_count)
                throw Error(sibling + ": split.no/split.count are " + std::to_string(no) + "/" + std::to_string(count) +
                            ", expected " + std::to_string(i) + "/" + std::to_string(split_count));
            parsed[i] = std::move(p);
            shards[i] = std::move(f.shards_.back());
            infos[i] = f.shard_info_.back();
            f.shards_.pop_back();
            f.shard_info_.pop_back();
        }
        f.shards_ = std::move(shards);
        f.shard_info_ = std::move(infos);
        f.version_ = parsed[0].version;
        f.alignment_ = parsed[0].alignment;
        f.metadata_ = std::move(parsed[0].metadata);
        std::set<std::string, std::less<>> names;
        for (uint64_t i = 0; i < split_count; ++i) {
            for (TensorInfo& t : parsed[i].tensors) {
                t.shard = static_cast<uint32_t>(i);
                if (!names.insert(t.name).second)
                    throw Error(f.shard_info_[i].path + ": tensor '" + t.name + "' also appears in another shard");
                f.tensors_.push_back(std::move(t));
            }
        }
        if (const Value* tc = f.metadata_.find("split.tensors.count")) {
            if (!tc->is_integer()) Metadata::type_error("split.tensors.count", "i32", *tc);
            if (tc->raw_u64() != f.tensors_.size())
                throw Error(path + ": split.tensors.count is " + std::to_string(tc->raw_i64()) + " but the shards hold " +
                            std::to_string(f.tensors_.size()) + " tensors");
        }
    }
    for (size_t i = 0; i < f.tensors_.size(); ++i) f.tensor_index_.emplace(f.tensors_[i].name, i);
    return f;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
    const TensorInfo* t = find_tensor(name);
    if (!t) throw Error(path_ + ": tensor '" + std::string(name) + "' not found");
    return *t;
}

uint64_t File::total_file_size() const {
    uint64_t s = 0;
    for (const auto& i : shard_info_) s += i.file_size;
    return s;
}

uint64_t File::front_bytes_read() const {
    uint64_t s = 0;
    for (const auto& i : shard_info_) s += i.front_bytes_read;
    return s;
}

uint64_t File::bytes_read() const {
    uint64_t s = front_bytes_read();
    for (const auto& sh : shards_) s += sh->lazy_bytes_read.load();
    return s;
}

const uint8_t* File::tensor_data(const TensorInfo& t) const {
    const Shard& s = *shards_.at(t.shard);
    std::call_once(s.map_once, [&] { s.mapping = Mapping(s.handle); });
    return s.mapping.data() + s.data_offset + t.offset;
}

File::FileLocation File::tensor_location(const TensorInfo& t) const {
    const Shard& s = *shards_.at(t.shard);
    return {s.handle.fd(), s.data_offset + t.offset};
}

void File::map_all() const {
    for (const auto& s : shards_) std::call_once(s->map_once, [&] { s->mapping = Mapping(s->handle); });
}

uint64_t File::mapped_bytes() const {
    uint64_t n = 0;
    for (const auto& s : shards_) n += s->mapping.size();
    return n;
}

std::vector<uint8_t> File::read_lazy_bytes(const Value& array) const {
    std::vector<uint8_t> bytes(static_cast<size_t>(array.byte_size()));
    shards_.at(0)->handle.read_at(array.file_offset(), bytes.data(), bytes.size());
    shards_.at(0)->lazy_bytes_read += bytes.size();
    return bytes;
}

namespace {

// Decodes `count` elements of a scalar / string type from a byte span that the
// front parser has already walked (so lengths are known to be in range).
std::vector<Value> decode_elements(const std::vector<uint8_t>& b, ValueType t, uint64_t count) {
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(count));
    size_t pos = 0;
    auto rd = [&](auto& v) {
        if (pos + sizeof v > b.size()) throw Error("GGUF array changed on disk while reading");
        std::memcpy(&v, b.data() + pos, sizeof v);
        pos += sizeof v;
    };
    for (uint64_t i = 0; i < count; ++i) {
        switch (t) {
            case ValueType::U8: { uint8_t v; rd(v); out.push_back(Value::u8(v)); break; }
            case ValueType::I8: { int8_t v; rd(v); out.push_back(Value::i8(v)); break; }
            case ValueType::U16: { uint16_t v; rd(v); out.push_back(Value::u16(v)); break; }
            case ValueType::I16: { int16_t v; rd(v); out.push_back(Value::i16(v)); break; }
            case ValueType::U32: { uint32_t v; rd(v); out.push_back(Value::u32(v)); break; }
            case ValueType::I32: { int32_t v; rd(v); out.push_back(Value::i32(v)); break; }
            case ValueType::F32: { float v; rd(v); out.push_back(Value::f32(v)); break; }
            case ValueType::U64: { uint64_t v; rd(v); out.push_back(Value::u64(v)); break; }
            case ValueType::I64: { int64_t v; rd(v); out.push_back(Value::i64(v)); break; }
            case ValueType::F64: { double v; rd(v); out.push_back(Value::f64(v)); break; }
            case ValueType::Bool: { uint8_t v; rd(v); out.push_back(Value::boolean(v != 0)); break; }
            case ValueType::String: {
                uint64_t len;
                rd(len);
                if (len > b.size() - pos) throw Error("GGUF array changed on disk while reading");
                out.push_back(Value::string(std::string(reinterpret_cast<const char*>(b.data() + pos), len)));
                pos += static_cast<size_t>(len);
                break;
            }
            case ValueType::Array: throw Error("lazy arrays of arrays are not produced by the reader");
        }
    }
    return out;
}

}  // namespace

std::vector<Value> File::read_array(const Value& array) const {
    if (array.type() != ValueType::Array) throw Error("read_array: value is a " + array.type_description());
    if (!array.lazy()) return array.items();
    return decode_elements(read_lazy_bytes(array), array.elem_type(), array.count());
}

std::vector<std::string> File::read_strings(std::string_view key) const {
    const Value& a = metadata_.get_array(key);
    if (a.elem_type() != ValueType::String) Metadata::type_error(key, "array[string]", a);
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(a.count()));
    if (!a.lazy()) {
        for (const Value& v : a.items()) out.push_back(v.raw_string());
        return out;
    }
    std::vector<uint8_t> b = read_lazy_bytes(a);
    size_t pos = 0;
    for (uint64_t i = 0; i < a.count(); ++i) {
        uint64_t len;
        if (pos + 8 > b.size()) throw Error(path_ + ": metadata '" + std::string(key) + "' changed on disk");
        std::memcpy(&len, b.data() + pos, 8);
        pos += 8;
        if (len > b.size() - pos) throw Error(path_ + ": metadata '" + std::string(key) + "' changed on disk");
        out.emplace_back(reinterpret_cast<const char*>(b.data() + pos), static_cast<size_t>(len));
        pos += static_cast<size_t>(len);
    }
    return out;
}

std::vector<float> File::read_f32s(std::string_view key) const {
    const Value& a = metadata_.get_array(key);
    if (a.elem_type() != ValueType::F32) Metadata::type_error(key, "array[f32]", a);
    std::vector<float> out(static_cast<size_t>(a.count()));
    if (!a.lazy()) {
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(a.items()[i].raw_f64());
        return out;
    }
    std::vector<uint8_t> b = read_lazy_bytes(a);
    std::memcpy(out.data(), b.data(), out.size() * sizeof(float));
    return out;
}

std::vector<int32_t> File::read_i32s(std::string_view key) const {
    const Value& a = metadata_.get_array(key);
    if (a.elem_type() != ValueType::I32 && a.elem_type() != ValueType::U32)
        Metadata::type_error(key, "array[i32]", a);
    std::vector<int32_t> out(static_cast<size_t>(a.count()));
    if (!a.lazy()) {
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(a.items()[i].raw_i64());
        return out;
    }
    std::vector<uint8_t> b = read_lazy_bytes(a);
    std::memcpy(out.data(), b.data(), out.size() * sizeof(int32_t));
    return out;
}

}  // namespace kiln::gguf
