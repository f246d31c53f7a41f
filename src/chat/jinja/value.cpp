#include "chat/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "chat/jinja/error.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

// --- lifetime -------------------------------------------------------------------

namespace {

thread_local RenderRegistry* t_registry = nullptr;

void unlink(HeapObject* o) {
    o->reg_prev->reg_next = o->reg_next;
    o->reg_next->reg_prev = o->reg_prev;
    o->reg_prev = o->reg_next = nullptr;
    o->serial = 0;
}

}  // namespace

HeapObject::~HeapObject() {
    if (serial) unlink(this);
}

namespace {

// Free lists per 16-byte size class. The state is trivially destructible so it
// stays usable for the whole thread; a separate object drains it at thread exit,
// after which frees go straight to the allocator.
constexpr size_t k_pool_classes = 16;  // 16 .. 256 bytes
constexpr size_t k_pool_depth = 128;

struct PoolState {
    void* free[k_pool_classes][k_pool_depth];
    uint16_t n[k_pool_classes];
    bool armed;
    bool dead;
};
thread_local PoolState t_pool;

struct PoolDrain {
    bool active = false;
    ~PoolDrain() {
        for (size_t c = 0; c < k_pool_classes; ++c) {
            for (size_t i = 0; i < t_pool.n[c]; ++i) ::operator delete(t_pool.free[c][i]);
            t_pool.n[c] = 0;
        }
        t_pool.dead = true;
    }
};
thread_local PoolDrain t_drain;

size_t pool_class(size_t bytes) { return (bytes + 15) / 16 - 1; }

}  // namespace

void* HeapObject::operator new(size_t bytes) {
    const size_t c = pool_class(bytes);
    if (c < k_pool_classes) {
        if (t_pool.n[c]) return t_pool.free[c][--t_pool.n[c]];
        return ::operator new((c + 1) * 16);
    }
    return ::operator new(bytes);
}

void HeapObject::operator delete(void* p, size_t bytes) {
    const size_t c = pool_class(bytes);
    if (c < k_pool_classes && !t_pool.dead && t_pool.n[c] < k_pool_depth) {
        if (!t_pool.armed) {
            t_drain.active = true;  // first use constructs the drain for this thread
            t_pool.armed = true;
        }
        t_pool.free[c][t_pool.n[c]++] = p;
        return;
    }
    ::operator delete(p);
}

void HeapObject::join_registry() {
    RenderRegistry* r = t_registry;
    if (!r) return;
    HeapObject* head = &r->head_;
    reg_next = head->reg_next;
    reg_prev = head;
    head->reg_next->reg_prev = this;
    head->reg_next = this;
    serial = r->serial_;
}

RenderRegistry::RenderRegistry() : previous_(t_registry) {
    thread_local uint32_t last_serial = 0;
    last_serial = (last_serial + 1) & 0x7FFFFFFFu;
    if (last_serial == 0) last_serial = 1;
    serial_ = last_serial;
    head_.refs = HeapObject::k_immortal;
    head_.reg_next = head_.reg_prev = &head_;
    t_registry = this;
}

RenderRegistry::~RenderRegistry() {
    sweep();
    t_registry = previous_;
}

void RenderRegistry::sweep() {
    while (head_.reg_next != &head_) {
        HeapObject* o = head_.reg_next;
        unlink(o);
        ref_inc(o);
        o->clear_refs();
        ref_dec(o);
    }
}

// Releasing a container releases its elements; doing that recursively would let a
// deeply nested value overflow the stack, so nested releases are queued.
void release_object(HeapObject* p) {
    if (p->leaf) {
        delete p;
        return;
    }
    thread_local bool active = false;
    thread_local std::vector<HeapObject*> pending;
    if (active) {
        pending.push_back(p);
        return;
    }
    active = true;
    delete p;
    while (!pending.empty()) {
        HeapObject* q = pending.back();
        pending.pop_back();
        delete q;
    }
    active = false;
}

void ListObj::clear_refs() {
    std::vector<Value> tmp;
    tmp.swap(items);
}

void DictObj::clear_refs() {
    std::vector<std::pair<Value, Value>> tmp;
    tmp.swap(entries);
    index_.clear();
}

void Object::repr(std::string& out) const {
    out += "<";
    out += type_name();
    out += " object>";
}

// --- construction ---------------------------------------------------------------

Value Value::undefined(std::string hint) {
    Value v;
    v.p_ = new StrObj(std::move(hint));
    return v;
}

Value Value::undefined_from(StrObj* hint) {
    Value v;
    v.p_ = hint;
    return v;
}

Value Value::string(std::string s, bool safe) {
    return from_obj(new StrObj(std::move(s)), safe);
}

Value Value::from_obj(StrObj* s, bool safe) {
    Value v;
    v.kind_ = Kind::String;
    v.safe_ = safe;
    v.p_ = s;
    return v;
}

Value Value::from_obj(ListObj* l) {
    Value v;
    v.kind_ = Kind::List;
    v.p_ = l;
    return v;
}

Value Value::from_obj(DictObj* d) {
    Value v;
    v.kind_ = Kind::Dict;
    v.p_ = d;
    return v;
}

Value Value::from_obj(Object* o) {
    Value v;
    v.kind_ = Kind::Object;
    v.p_ = o;
    return v;
}

Value Value::new_list() { return from_obj(new ListObj()); }

Value Value::new_tuple() {
    auto* l = new ListObj();
    l->seq = SeqKind::Tuple;
    return from_obj(l);
}

Value Value::new_dict() { return from_obj(new DictObj()); }

const std::string* Value::undefined_hint() const {
    if (kind_ != Kind::Undefined || !p_) return nullptr;
    return &reinterpret_cast<StrObj*>(p_)->s;
}

bool StrObj::is_ascii() const {
    if (ascii < 0) ascii = text::is_ascii(s) ? 1 : 0;
    return ascii == 1;
}

int64_t StrObj::length() const {
    if (n_cp < 0) n_cp = is_ascii() ? static_cast<int64_t>(s.size()) : text::length(s);
    return n_cp;
}

// --- dict -----------------------------------------------------------------------

namespace {

constexpr size_t k_linear_max = 8;

uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

}  // namespace

const Value* DictObj::find(const Value& key) const {
    if (key.is_string()) return find_str(key.str());
    if (index_.empty()) {
        for (const auto& e : entries)
            if (equal(e.first, key)) return &e.second;
        return nullptr;
    }
    int64_t slot = find_slot(key, hash_value(key));
    return slot >= 0 && index_[slot] >= 0 ? &entries[index_[slot]].second : nullptr;
}

const Value* DictObj::find_str_indexed(std::string_view key) const {
    const uint64_t h = hash_bytes(key);
    const size_t mask = index_.size() - 1;
    for (size_t i = mix(h) & mask;; i = (i + 1) & mask) {
        int32_t at = index_[i];
        if (at < 0) return nullptr;
        const Value& k = entries[at].first;
        if (k.is_string() && k.str() == key) return &entries[at].second;
    }
}

int64_t DictObj::find_slot(const Value& key, uint64_t h) const {
    const size_t mask = index_.size() - 1;
    for (size_t i = mix(h) & mask;; i = (i + 1) & mask) {
        int32_t at = index_[i];
        if (at < 0 || equal(entries[at].first, key)) return static_cast<int64_t>(i);
    }
}

void DictObj::rebuild_index() {
    size_t cap = 16;
    while (cap < entries.size() * 2) cap *= 2;
    index_.assign(cap, -1);
    for (size_t n = 0; n < entries.size(); ++n) {
        int64_t slot = find_slot(entries[n].first, hash_value(entries[n].first));
        index_[slot] = static_cast<int32_t>(n);
    }
}

void DictObj::append_unique(Value key, Value value) {
    entries.emplace_back(std::move(key), std::move(value));
    if (entries.size() > k_linear_max && entries.size() * 2 > index_.size()) rebuild_index();
    else if (!index_.empty()) index_[find_slot(entries.back().first, hash_value(entries.back().first))] = static_cast<int32_t>(entries.size() - 1);
}

void DictObj::set(Value key, Value value) {
    if (index_.empty()) {
        if (!key.is_string()) hash_value(key);  // rejects unhashable keys as Python does
        for (auto& e : entries) {
            if (equal(e.first, key)) {
                e.second = std::move(value);
                return;
            }
        }
        entries.emplace_back(std::move(key), std::move(value));
        if (entries.size() > k_linear_max) rebuild_index();
        return;
    }
    const uint64_t h = hash_value(key);
    int64_t slot = find_slot(key, h);
    if (index_[slot] >= 0) {
        entries[index_[slot]].second = std::move(value);
        return;
    }
    entries.emplace_back(std::move(key), std::move(value));
    if (entries.size() * 2 > index_.size()) rebuild_index();
    else index_[slot] = static_cast<int32_t>(entries.size() - 1);
}

bool DictObj::erase(const Value& key) {
    for (size_t n = 0; n < entries.size(); ++n) {
        if (equal(entries[n].first, key)) {
            entries.erase(entries.begin() + static_cast<ptrdiff_t>(n));
            if (!index_.empty()) {
                if (entries.size() > k_linear_max) rebuild_index();
                else index_.clear();
            }
            return true;
        }
    }
    return false;
}

// --- Python semantics -------------------------------------------------------------

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return v.as_bool();
        case Kind::Int: return v.as_int() != 0;
        case Kind::Float: return v.as_float() != 0.0;
        case Kind::String: return !v.str().empty();
        case Kind::List: return !v.list().items.empty();
        case Kind::Dict: return v.dict().size() != 0;
        case Kind::Object: return true;
    }
    return false;
}

std::string_view type_name(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return v.safe() ? "Markup" : "str";
        case Kind::List:
            switch (v.list().seq) {
                case SeqKind::List: return "list";
                case SeqKind::Tuple: return "tuple";
                case SeqKind::DictKeys: return "dict_keys";
                case SeqKind::DictValues: return "dict_values";
                case SeqKind::DictItems: return "dict_items";
                case SeqKind::Range: return "range";
                case SeqKind::Group: return "tuple";
            }
            return "list";
        case Kind::Dict: return "dict";
        case Kind::Object: return v.object().type_name();
    }
    return "object";
}

void append_float_repr(std::string& out, double f) {
    if (std::isnan(f)) {
        out += "nan";
        return;
    }
    if (std::isinf(f)) {
        out += f < 0 ? "-inf" : "inf";
        return;
    }
    // Shortest round-trip digits, then Python's layout: positional for exponents in
    // [-4, 16), scientific otherwise, always with a '.0' or an exponent.
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
    bool neg = false;
    if (!sci.empty() && sci[0] == '-') {
        neg = true;
        sci.remove_prefix(1);
    }
    size_t epos = sci.find('e');
    std::string digits;
    for (char c : sci.substr(0, epos))
        if (c != '.') digits.push_back(c);
    int exp10 = std::atoi(std::string(sci.substr(epos + 1)).c_str());
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
    if (neg) out.push_back('-');
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-decpt), '0');
            out += digits;
        } else if (static_cast<size_t>(decpt) >= digits.size()) {
            out += digits;
            out.append(static_cast<size_t>(decpt) - digits.size(), '0');
            out += ".0";
        } else {
            out.append(digits, 0, static_cast<size_t>(decpt));
            out.push_back('.');
            out.append(digits, static_cast<size_t>(decpt), std::string::npos);
        }
        return;
    }
    out.push_back(digits[0]);
    if (digits.size() > 1) {
        out.push_back('.');
        out.append(digits, 1, std::string::npos);
    }
    out.push_back('e');
    out.push_back(exp10 < 0 ? '-' : '+');
    int ae = exp10 < 0 ? -exp10 : exp10;
    if (ae < 10) out.push_back('0');
    out += std::to_string(ae);
}

namespace {

void append_int(std::string& out, int64_t i) {
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, i);
    out.append(buf, res.ptr);
}

void append_str_repr(std::string& out, std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    out.push_back(quote);
    for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        const uint32_t c = text::decode(s, i);
        if (c == static_cast<uint32_t>(quote) || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c >= 0xDC80 && c <= 0xDCFF) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\udc%02x", c - 0xDC00);
            out += buf;
        } else if (text::is_printable(c)) {
            out.append(s.substr(start, i - start));
        } else {
            char buf[16];
            if (c <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02x", c);
            else if (c <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04x", c);
            else std::snprintf(buf, sizeof buf, "\\U%08x", c);
            out += buf;
        }
    }
    out.push_back(quote);
}

void check_depth(int depth) {
    if (depth > k_max_nesting) fail("value nested too deeply (more than " + std::to_string(k_max_nesting) + " levels)");
}

void append_items_repr(std::string& out, const std::vector<Value>& items, int depth) {
    for (size_t n = 0; n < items.size(); ++n) {
        if (n) out += ", ";
        append_repr(out, items[n], depth + 1);
    }
}

}  // namespace

void append_repr(std::string& out, const Value& v, int depth) {
    check_depth(depth);
    switch (v.kind()) {
        case Kind::String:
            if (v.safe()) {
                out += "Markup(";
                append_str_repr(out, v.str());
                out += ")";
            } else {
                append_str_repr(out, v.str());
            }
            return;
        case Kind::List: {
            const ListObj& l = v.list();
            switch (l.seq) {
                case SeqKind::List:
                    out.push_back('[');
                    append_items_repr(out, l.items, depth);
                    out.push_back(']');
                    return;
                case SeqKind::Tuple:
                case SeqKind::Group:
                    out.push_back('(');
                    append_items_repr(out, l.items, depth);
                    if (l.items.size() == 1) out.push_back(',');
                    out.push_back(')');
                    return;
                case SeqKind::DictKeys:
                case SeqKind::DictValues:
                case SeqKind::DictItems:
                    out += type_name(v);
                    out += "([";
                    append_items_repr(out, l.items, depth);
                    out += "])";
                    return;
                case SeqKind::Range:
                    out += "range(";
                    append_int(out, l.range_start);
                    out += ", ";
                    append_int(out, l.range_stop);
                    if (l.range_step != 1) {
                        out += ", ";
                        append_int(out, l.range_step);
                    }
                    out.push_back(')');
                    return;
            }
            return;
        }
        case Kind::Dict: {
            out.push_back('{');
            bool first = true;
            for (const auto& [k, val] : v.dict().entries) {
                if (!first) out += ", ";
                first = false;
                append_repr(out, k, depth + 1);
                out += ": ";
                append_repr(out, val, depth + 1);
            }
            out.push_back('}');
            return;
        }
        case Kind::Undefined:
            out += "Undefined";
            return;
        default:
            append_str(out, v);
    }
}

void append_str(std::string& out, const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return;
        case Kind::None: out += "None"; return;
        case Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
        case Kind::Int: append_int(out, v.as_int()); return;
        case Kind::Float: append_float_repr(out, v.as_float()); return;
        case Kind::String: out += v.str(); return;
        case Kind::List:
        case Kind::Dict: append_repr(out, v); return;
        case Kind::Object: v.object().repr(out); return;
    }
}

std::string to_str(const Value& v) {
    if (v.is_string()) return v.str();
    std::string out;
    append_str(out, v);
    return out;
}

std::string to_repr(const Value& v) {
    std::string out;
    append_repr(out, v);
    return out;
}

namespace {

// Python compares int and float exactly; doubles hold every int64 of interest here
// except beyond 2^53, where the comparison is done on the integer side.
int compare_numbers(const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) {
        int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;  // unordered
    if (x < y) return -1;
    if (x > y) return 1;
    if (a.is_integral() != b.is_integral()) {
        // equal as doubles: refine when the integer is not exactly representable
        const Value& iv = a.is_integral() ? a : b;
        const double fv = a.is_integral() ? y : x;
        int64_t i = iv.as_int();
        if (fv >= 9223372036854775808.0) return a.is_integral() ? -1 : 1;
        int64_t fi = static_cast<int64_t>(fv);
        if (i != fi) {
            int c = i < fi ? -1 : 1;
            return a.is_integral() ? c : -c;
        }
    }
    return 0;
}

bool same_sequence_family(const ListObj& a, const ListObj& b) {
    auto family = [](SeqKind k) { return (k == SeqKind::Tuple || k == SeqKind::Group) ? 1 : 0; };
    return family(a.seq) == family(b.seq);
}

}  // namespace

bool equal(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return a.str_obj() == b.str_obj() || text::same(a.str(), b.str());
        case Kind::List: {
            const ListObj& x = a.list();
            const ListObj& y = b.list();
            if (&x == &y) return true;
            if (!same_sequence_family(x, y) || x.items.size() != y.items.size()) return false;
            for (size_t n = 0; n < x.items.size(); ++n)
                if (!equal(x.items[n], y.items[n], depth + 1)) return false;
            return true;
        }
        case Kind::Dict: {
            const DictObj& x = a.dict();
            const DictObj& y = b.dict();
            if (&x == &y) return true;
            if (x.size() != y.size()) return false;
            for (const auto& [k, v] : x.entries) {
                const Value* w = y.find(k);
                if (!w || !equal(v, *w, depth + 1)) return false;
            }
            return true;
        }
        case Kind::Object: return &a.object() == &b.object();
        default: return false;
    }
}

bool less(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) return compare_numbers(a, b) == -1;
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
    if (a.is_list() && b.is_list() && same_sequence_family(a.list(), b.list())) {
        const auto& x = a.list().items;
        const auto& y = b.list().items;
        for (size_t n = 0; n < x.size() && n < y.size(); ++n) {
            if (equal(x[n], y[n], depth + 1)) continue;
            return less(x[n], y[n], depth + 1);
        }
        return x.size() < y.size();
    }
    if (a.is_undefined() || b.is_undefined()) {
        const std::string* hint = a.is_undefined() ? a.undefined_hint() : b.undefined_hint();
        fail(hint ? *hint : "undefined value compared with '<'");
    }
    fail_type("'<' not supported between instances of '" + std::string(type_name(a)) + "' and '" +
              std::string(type_name(b)) + "'");
}

uint64_t hash_value(const Value& v, int depth) {
    check_depth(depth);
    switch (v.kind()) {
        case Kind::Undefined: return 0x5bd1e995;
        case Kind::None: return 0x9e3779b9;
        case Kind::Bool:
        case Kind::Int: return mix(static_cast<uint64_t>(v.as_int()));
        case Kind::Float: {
            double f = v.as_float();
            if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 9.2e18)
                return mix(static_cast<uint64_t>(static_cast<int64_t>(f)));
            uint64_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            return mix(bits);
        }
        case Kind::String: return hash_bytes(v.str());
        case Kind::List: {
            const ListObj& l = v.list();
            if (l.seq != SeqKind::Tuple && l.seq != SeqKind::Group)
                fail_type("unhashable type: '" + std::string(type_name(v)) + "'");
            uint64_t h = 0x345678;
            for (const Value& x : l.items) h = mix(h ^ hash_value(x, depth + 1)) + 0x9e3779b97f4a7c15ull;
            return h;
        }
        case Kind::Dict: fail_type("unhashable type: 'dict'");
        case Kind::Object: return mix(reinterpret_cast<uintptr_t>(&v.object()));
    }
    return 0;
}

// --- errors -----------------------------------------------------------------------

TemplateError::TemplateError(const std::string& message, uint32_t line, uint32_t column, bool raised)
    : kiln::Error(line ? "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message
                       : message),
      message_(message),
      line_(line),
      column_(column),
      raised_(raised) {}

void fail(const std::string& message) { throw TemplateError(message, 0, 0); }
void fail_type(const std::string& message) { throw TemplateError(message, 0, 0); }

}  // namespace kiln::jinja
