// Argument binding shared by the built-ins, and the global functions of Hugging
// Face's environment: range (the sandbox's, capped at 100000 items), dict,
// namespace, cycler, joiner, raise_exception and strftime_now.
#include <chrono>
#include <ctime>

#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/ops.h"

namespace kiln::jinja {

void Params::bind(const Args& args, std::string_view func, std::initializer_list<std::string_view> names,
                  size_t n_required) {
    if (n_ > k_max) fail("internal: too many parameters for " + std::string(func));
    if (args.n_pos > n_)
        fail_type(std::string(func) + "() takes at most " + std::to_string(n_) + " argument(s) (" +
                  std::to_string(args.n_pos) + " given)");
    for (size_t i = 0; i < args.n_pos; ++i) bound_[i] = &args.pos[i];
    if (args.n_kw == 0 && args.n_pos >= n_required) return;  // the common case: nothing else to check
    for (size_t k = 0; k < args.n_kw; ++k) {
        size_t j = 0;
        for (std::string_view n : names) {
            if (n == args.kw[k].name) break;
            ++j;
        }
        if (j == n_) fail_type(std::string(func) + "() got an unexpected keyword argument '" + std::string(args.kw[k].name) + "'");
        if (bound_[j]) fail_type(std::string(func) + "() got multiple values for argument '" + std::string(args.kw[k].name) + "'");
        bound_[j] = &args.kw[k].value;
    }
    size_t i = 0;
    for (std::string_view n : names) {
        if (i >= n_required) break;
        if (!bound_[i]) fail_type(std::string(func) + "() missing required argument '" + std::string(n) + "'");
        ++i;
    }
}

int64_t arg_int(const Value& v, std::string_view what) {
    if (v.is_integral()) return v.as_int();
    if (v.is_undefined()) fail_undefined(v);
    fail_type("'" + std::string(type_name(v)) + "' object cannot be interpreted as an integer (" + std::string(what) + ")");
}

bool arg_bool(const Value& v) { return truthy(v); }

const std::string& arg_str(const Value& v, std::string_view what) {
    if (v.is_string()) return v.str();
    if (v.is_undefined()) fail_undefined(v);
    fail_type("expected a string for " + std::string(what) + ", got " + std::string(type_name(v)));
}

namespace {

constexpr int64_t k_max_range = 100000;  // jinja2's sandbox MAX_RANGE

Value g_range(Interp& in, Args& a) {
    if (a.n_kw) fail_type("range() takes no keyword arguments");
    if (a.n_pos < 1 || a.n_pos > 3) fail_type("range expected at most 3 arguments, got " + std::to_string(a.n_pos));
    int64_t start = 0, stop, step = 1;
    if (a.n_pos == 1) {
        stop = arg_int(a.pos[0], "range");
    } else {
        start = arg_int(a.pos[0], "range");
        stop = arg_int(a.pos[1], "range");
        if (a.n_pos == 3) step = arg_int(a.pos[2], "range");
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    // length of the range, computed without overflow
    __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
    __int128 st = step > 0 ? step : -static_cast<__int128>(step);
    __int128 len = span <= 0 ? 0 : (span + st - 1) / st;
    if (len > k_max_range)
        fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(k_max_range) + ").");
    Value out = Value::new_list();
    ListObj& l = out.list();
    l.seq = SeqKind::Range;
    l.range_start = start;
    l.range_stop = stop;
    l.range_step = step;
    l.items.reserve(static_cast<size_t>(len));
    for (int64_t k = 0; k < static_cast<int64_t>(len); ++k) l.items.push_back(Value::integer(start + k * step));
    in.tick(static_cast<uint64_t>(len) / 16);
    return out;
}

// dict(*args, **kwargs) as Python builds it.
Value build_dict(Interp& in, Args& a, std::string_view func) {
    if (a.n_pos > 1) fail_type(std::string(func) + " expected at most 1 argument, got " + std::to_string(a.n_pos));
    Value out = Value::new_dict();
    if (a.n_pos == 1) {
        const Value& src = a.pos[0];
        if (src.is_dict()) {
            for (const auto& [k, v] : src.dict().entries) out.dict().set(k, v);
        } else if (src.is_object() && src.object().otype == ObjType::Namespace) {
            fail_type("'Namespace' object is not iterable");
        } else {
            std::vector<Value> items = in.to_list(src);
            for (size_t n = 0; n < items.size(); ++n) {
                std::vector<Value> kv = in.to_list(items[n]);
                if (kv.size() != 2)
                    fail("dictionary update sequence element #" + std::to_string(n) + " has length " +
                         std::to_string(kv.size()) + "; 2 is required");
                out.dict().set(kv[0], kv[1]);
            }
        }
    }
    for (size_t k = 0; k < a.n_kw; ++k) out.dict().set_str(a.kw[k].name, a.kw[k].value);
    return out;
}

Value g_dict(Interp& in, Args& a) { return build_dict(in, a, "dict"); }

Value g_namespace(Interp& in, Args& a) {
    Value attrs = build_dict(in, a, "namespace");
    for (const auto& [k, v] : attrs.dict().entries) {
        if (k.is_string() && !k.str().empty() && k.str()[0] == '_')
            fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got " + to_repr(k) +
                 ". Please rename the attribute.");
    }
    auto* ns = new NamespaceObj();
    ns->attrs = attrs;
    return Value::from_obj(ns);
}

Value g_cycler(Interp&, Args& a) {
    if (a.n_kw) fail_type("cycler() takes no keyword arguments");
    if (a.n_pos == 0) fail_type("at least one item has to be provided");
    auto* c = new CyclerObj();
    for (size_t k = 0; k < a.n_pos; ++k) c->items.push_back(a.pos[k]);
    return Value::from_obj(c);
}

Value g_joiner(Interp&, Args& a) {
    Params p(a, "joiner", {"sep"});
    auto* j = new JoinerObj();
    j->sep = p.has(0) ? to_str(*p.get(0)) : ", ";
    return Value::from_obj(j);
}

Value g_raise_exception(Interp&, Args& a) {
    Params p(a, "raise_exception", {"message"}, 1);
    throw TemplateError(to_str(*p.get(0)), 0, 0, true);
}

Value g_strftime_now(Interp& in, Args& a) {
    Params p(a, "strftime_now", {"format"}, 1);
    const std::string& fmt = arg_str(*p.get(0), "format");
    std::tm t{};
    long micro = 0;
    if (in.options().now) {
        t = *in.options().now;
    } else {
        auto now = std::chrono::system_clock::now();
        std::time_t tt = std::chrono::system_clock::to_time_t(now);
        localtime_r(&tt, &t);
        micro = static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000);
    }
    return Value::string(format_time(fmt, t, micro));
}

Value g_lipsum(Interp&, Args&) { fail("lipsum() is not supported (random text)"); }

struct GlobalEntry {
    std::string_view name;
    GlobalFn fn;
};

const GlobalEntry k_globals[] = {
    {"range", g_range},
    {"dict", g_dict},
    {"namespace", g_namespace},
    {"cycler", g_cycler},
    {"joiner", g_joiner},
    {"raise_exception", g_raise_exception},
    {"strftime_now", g_strftime_now},
    {"lipsum", g_lipsum},
};

}  // namespace

Value find_global(std::string_view name) {
    // Immortal singletons: shared by every render and thread, never counted.
    static BuiltinObj* objects = [] {
        auto* arr = static_cast<BuiltinObj*>(::operator new(sizeof(BuiltinObj) * std::size(k_globals)));
        for (size_t i = 0; i < std::size(k_globals); ++i) {
            auto* b = ::new (static_cast<void*>(&arr[i])) BuiltinObj(k_globals[i].name, k_globals[i].fn);
            b->refs = HeapObject::k_immortal;
        }
        return arr;
    }();
    for (size_t i = 0; i < std::size(k_globals); ++i)
        if (k_globals[i].name == name) return Value::from_obj(static_cast<Object*>(&objects[i]));
    return Value();
}

}  // namespace kiln::jinja
