// Calling convention of the built-in filters, tests, globals and methods, and the
// tables that name them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "chat/jinja/value.h"

namespace kiln::jinja {

class Interp;

struct KwArg {
    std::string_view name;
    Value value;
    Value keep;  // owns the name's storage when it comes from a **kwargs dict
};

// Evaluated call arguments: positional then keyword, as Python passes them.
struct Args {
    Value* pos = nullptr;
    size_t n_pos = 0;
    KwArg* kw = nullptr;
    size_t n_kw = 0;
};

// Binds Args to a Python-style signature (names in order; the first n_required
// must be given) and reports misuse with Python's TypeError wording.
class Params {
public:
    Params(const Args& args, std::string_view func, std::initializer_list<std::string_view> names,
           size_t n_required = 0)
        : n_(names.size()) {
        if (args.n_kw == 0 && args.n_pos <= n_ && args.n_pos >= n_required && n_ <= k_max) {
            // the common call: positional arguments only, nothing to check
            for (size_t i = 0; i < args.n_pos; ++i) bound_[i] = &args.pos[i];
            return;
        }
        bind(args, func, names, n_required);
    }
    // The argument bound to parameter i, or nullptr when not given.
    const Value* get(size_t i) const { return i < n_ ? bound_[i] : nullptr; }
    Value get_or(size_t i, const Value& fallback) const {
        const Value* v = get(i);
        return v ? *v : fallback;
    }
    bool has(size_t i) const { return get(i) != nullptr; }

private:
    static constexpr size_t k_max = 8;
    void bind(const Args& args, std::string_view func, std::initializer_list<std::string_view> names,
              size_t n_required);
    const Value* bound_[k_max] = {};
    size_t n_ = 0;
};

using FilterFn = Value (*)(Interp&, const Value& subject, Args& args);
using TestFn = bool (*)(Interp&, const Value& subject, Args& args);
using GlobalFn = Value (*)(Interp&, Args& args);

FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
// The built-in global functions (range, dict, namespace, cycler, joiner,
// raise_exception, strftime_now) as immortal callable Values; undefined if none.
Value find_global(std::string_view name);

// Methods of Python's str, list and dict that templates may call.
enum class MethodOwner : uint8_t { Str, List, Dict };
// A method id >= 0, or -1 when `name` is not a method of that type.
int find_method(MethodOwner owner, std::string_view name);
Value call_method(Interp& in, const Value& self, MethodOwner owner, int id, Args& args);
std::string_view method_name(MethodOwner owner, int id);

// Python argument helpers shared by the built-ins.
int64_t arg_int(const Value& v, std::string_view what);
bool arg_bool(const Value& v);
const std::string& arg_str(const Value& v, std::string_view what);

}  // namespace kiln::jinja
