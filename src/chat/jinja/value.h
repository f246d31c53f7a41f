// The interpreter's value model: Python's types as Jinja templates see them.
//
// A Value is 16 bytes: a kind, a "safe" bit (markupsafe's Markup for strings)
// and either an immediate (bool, int, float) or a pointer to a reference-counted
// heap object (string, list, dict, object). Counts are not atomic: Values belong
// to one render on one thread. Literal strings of a parsed template are
// "immortal" (never counted), which is what makes a Template shareable across
// threads.
//
// Lists, dicts and objects are mutable and shared by reference, as in Python
// (list.append is visible through every name). Two mechanisms keep hostile
// templates from hurting the process:
//   - objects that can hold references join the active render's registry; at the
//     end of the render every survivor (a reference cycle) is cleared, so cycles
//     never leak;
//   - releasing the last reference of a container never recurses: nested
//     containers are queued and freed iteratively, so a list nested a million
//     deep does not overflow the stack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja/text.h"

namespace kiln::jinja {

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

struct HeapObject {
    static constexpr uint32_t k_immortal = 0xFFFFFFFFu;
    uint32_t refs = 1;
    // The serial of the render registry the object joined (0: none). A render that
    // shares its caller's context modifies in place only what it made itself.
    uint32_t serial : 31 = 0;
    uint32_t leaf : 1 = 0;  // holds no references (strings): released without the queue
    HeapObject* reg_prev = nullptr;
    HeapObject* reg_next = nullptr;

    HeapObject() = default;
    HeapObject(const HeapObject&) = delete;
    HeapObject& operator=(const HeapObject&) = delete;
    virtual ~HeapObject();
    // Drops every reference this object holds (breaks cycles at the end of a render).
    virtual void clear_refs() {}

    // Objects come from small per-thread free lists: a render allocates and frees
    // many short-lived strings, dicts and scopes.
    static void* operator new(size_t bytes);
    static void operator delete(void* p, size_t bytes);

protected:
    void join_registry();  // containers call this from their constructor
};

void release_object(HeapObject* p);  // refs reached zero

inline void ref_inc(HeapObject* p) {
    if (p->refs != HeapObject::k_immortal) ++p->refs;
}
inline void ref_dec(HeapObject* p) {
    if (p->refs != HeapObject::k_immortal && --p->refs == 0) release_object(p);
}

struct StrObj;
struct ListObj;
struct DictObj;
struct Object;

class Value {
public:
    Value() noexcept : kind_(Kind::Undefined), safe_(false), p_(nullptr) {}
    Value(const Value& o) noexcept : kind_(o.kind_), safe_(o.safe_), i_(o.i_) {
        if (o.has_ptr()) ref_inc(p_);
    }
    Value(Value&& o) noexcept : kind_(o.kind_), safe_(o.safe_), i_(o.i_) {
        o.kind_ = Kind::None;
    }
    Value& operator=(const Value& o) noexcept {
        if (this != &o) {
            Value tmp(o);
            swap(tmp);
        }
        return *this;
    }
    Value& operator=(Value&& o) noexcept {
        if (this != &o) {
            Value tmp(std::move(o));
            swap(tmp);
        }
        return *this;
    }
    ~Value() {
        if (has_ptr()) ref_dec(p_);
    }
    void swap(Value& o) noexcept {
        std::swap(kind_, o.kind_);
        std::swap(safe_, o.safe_);
        std::swap(i_, o.i_);
    }

    // --- construction ---------------------------------------------------------
    static Value undefined() { return Value(); }
    static Value undefined(std::string hint);  // remembers what was missing, for error messages
    static Value undefined_from(StrObj* hint);  // takes one reference (or an immortal hint)
    static Value none() { Value v; v.kind_ = Kind::None; v.i_ = 0; return v; }
    static Value boolean(bool b) { Value v; v.kind_ = Kind::Bool; v.i_ = 0; v.b_ = b; return v; }
    static Value integer(int64_t i) { Value v; v.kind_ = Kind::Int; v.i_ = i; return v; }
    static Value floating(double f) { Value v; v.kind_ = Kind::Float; v.f_ = f; return v; }
    static Value string(std::string s, bool safe = false);
    static Value string(std::string_view s, bool safe = false) { return string(std::string(s), safe); }
    static Value string(const char* s) { return string(std::string(s)); }
    static Value from_obj(StrObj* s, bool safe = false);  // takes one reference
    static Value from_obj(ListObj* l);
    static Value from_obj(DictObj* d);
    static Value from_obj(Object* o);
    static Value new_list();
    static Value new_tuple();
    static Value new_dict();

    // --- inspection -------------------------------------------------------------
    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_integral() const { return kind_ == Kind::Int || kind_ == Kind::Bool; }  // Python: isinstance(x, int)
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_object() const { return kind_ == Kind::Object; }
    bool safe() const { return safe_; }  // a Markup string
    void set_safe(bool s) { safe_ = s; }

    bool as_bool() const { return b_; }
    int64_t as_int() const { return kind_ == Kind::Bool ? (b_ ? 1 : 0) : i_; }  // Int or Bool
    double as_float() const { return kind_ == Kind::Float ? f_ : static_cast<double>(as_int()); }
    inline const std::string& str() const;  // String only
    StrObj* str_obj() const { return reinterpret_cast<StrObj*>(p_); }
    ListObj& list() const { return *reinterpret_cast<ListObj*>(p_); }
    DictObj& dict() const { return *reinterpret_cast<DictObj*>(p_); }
    Object& object() const { return *reinterpret_cast<Object*>(p_); }
    HeapObject* heap() const { return has_ptr() ? p_ : nullptr; }
    const std::string* undefined_hint() const;  // nullptr when none

    bool has_ptr() const { return kind_ >= Kind::String || (kind_ == Kind::Undefined && p_ != nullptr); }

private:
    Kind kind_;
    bool safe_;
    union {
        bool b_;
        int64_t i_;
        double f_;
        HeapObject* p_;
    };
    static_assert(sizeof(int64_t) == sizeof(void*), "Value copies the payload through i_");
};

// --- heap objects ----------------------------------------------------------------

struct StrObj final : HeapObject {
    std::string s;
    mutable int8_t ascii = -1;     // -1 unknown, 0 no, 1 yes (cached)
    mutable int64_t n_cp = -1;     // code points (cached)
    explicit StrObj(std::string v) : s(std::move(v)) { leaf = 1; }
    bool is_ascii() const;
    int64_t length() const;  // in code points, as Python's len()
};

inline const std::string& Value::str() const { return reinterpret_cast<StrObj*>(p_)->s; }

// What a list prints as: Python has several sequence types templates can see.
// Group: groupby's (grouper, list) named tuple.
enum class SeqKind : uint8_t { List, Tuple, DictKeys, DictValues, DictItems, Range, Group };

// Marks an object owned by a parsed template (a folded constant): never counted,
// never registered, shared by every render.
struct Permanent {};

struct ListObj final : HeapObject {
    std::vector<Value> items;
    SeqKind seq = SeqKind::List;
    int64_t range_start = 0, range_stop = 0, range_step = 1;  // SeqKind::Range
    ListObj() { join_registry(); }
    explicit ListObj(Permanent) { refs = k_immortal; }
    void clear_refs() override;
};

// Insertion-ordered dict with Python key semantics (1 == 1.0 == True).
struct DictObj final : HeapObject {
    std::vector<std::pair<Value, Value>> entries;
    DictObj() { join_registry(); }
    void clear_refs() override;

    const Value* find(const Value& key) const;
    inline const Value* find_str(std::string_view key) const;
    Value* find_mut(const Value& key) { return const_cast<Value*>(find(key)); }
    void set(Value key, Value value);
    void set_str(std::string_view key, Value value) { set(Value::string(key), std::move(value)); }
    // Appends a key known to be absent and hashable (building a dict from unique keys).
    void append_unique(Value key, Value value);
    bool erase(const Value& key);
    size_t size() const { return entries.size(); }

private:
    // Open-addressed index of entry positions, built once a dict outgrows a linear scan.
    std::vector<int32_t> index_;
    const Value* find_str_indexed(std::string_view key) const;
    void rebuild_index();
    int64_t find_slot(const Value& key, uint64_t h) const;
};

// Small dicts (chat messages, tool calls) are scanned: the sizes rule out most keys.
inline const Value* DictObj::find_str(std::string_view key) const {
    if (!index_.empty()) return find_str_indexed(key);
    for (const auto& e : entries)
        if (e.first.is_string() && text::same(e.first.str(), key)) return &e.second;
    return nullptr;
}

enum class ObjType : uint8_t { Builtin, BoundMethod, Macro, Namespace, Loop, Cycler, Joiner, Iterator, Scope };

struct Object : HeapObject {
    ObjType otype;
    explicit Object(ObjType t) : otype(t) {}
    // Python's type name, for error messages ("'int' object is not iterable").
    virtual std::string_view type_name() const = 0;
    // Python's repr (and str) of the object.
    virtual void repr(std::string& out) const;
};

// Marks the objects created while it lives; on destruction clears the survivors
// (reference cycles) so that no render leaks memory. One per render, per thread.
class RenderRegistry {
public:
    RenderRegistry();
    ~RenderRegistry();
    RenderRegistry(const RenderRegistry&) = delete;
    RenderRegistry& operator=(const RenderRegistry&) = delete;
    void sweep();
    // Nonzero, distinct from the serials of the last 2^31 - 1 registries of this thread.
    uint32_t serial() const { return serial_; }

private:
    struct Head final : HeapObject {};
    Head head_;
    RenderRegistry* previous_;
    uint32_t serial_;
    friend struct HeapObject;
};

// --- Python semantics --------------------------------------------------------------

bool truthy(const Value& v);
std::string_view type_name(const Value& v);

// str(v) appended to out (None -> "None", True -> "True", [1, 'a'] -> "[1, 'a']").
void append_str(std::string& out, const Value& v);
std::string to_str(const Value& v);
// repr(v): strings quoted as Python does.
void append_repr(std::string& out, const Value& v, int depth = 0);
std::string to_repr(const Value& v);
// Python float repr: shortest round trip, "1.0", "1e+16", "1e-05", "inf", "nan".
void append_float_repr(std::string& out, double f);

bool equal(const Value& a, const Value& b, int depth = 0);
// Python's a < b; throws a TypeError-style error for unorderable types.
bool less(const Value& a, const Value& b, int depth = 0);
// Python's hash for dict keys / unique; throws for unhashable values (list, dict).
uint64_t hash_value(const Value& v, int depth = 0);

// The limit on nesting depth for repr, equality and JSON of self-referencing data.
constexpr int k_max_nesting = 512;

}  // namespace kiln::jinja
