// The built-in tests ("x is defined", "x is divisibleby 3", ...), as jinja2's tests.py.
#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

namespace {

const Value& one_arg(const Args& a, std::string_view name) {
    Params p(a, name, {"other"}, 1);
    return *p.get(0);
}

void no_args(const Args& a, std::string_view name) { Params p(a, name, {}); }

bool t_defined(Interp&, const Value& v, Args& a) { return no_args(a, "test_defined"), !v.is_undefined(); }
bool t_undefined(Interp&, const Value& v, Args& a) { return no_args(a, "test_undefined"), v.is_undefined(); }
bool t_none(Interp&, const Value& v, Args& a) { return no_args(a, "test_none"), v.is_none(); }
bool t_boolean(Interp&, const Value& v, Args& a) { return no_args(a, "test_boolean"), v.is_bool(); }
bool t_false(Interp&, const Value& v, Args& a) { return no_args(a, "test_false"), v.is_bool() && !v.as_bool(); }
bool t_true(Interp&, const Value& v, Args& a) { return no_args(a, "test_true"), v.is_bool() && v.as_bool(); }
bool t_integer(Interp&, const Value& v, Args& a) { return no_args(a, "test_integer"), v.is_int(); }
bool t_float(Interp&, const Value& v, Args& a) { return no_args(a, "test_float"), v.is_float(); }
bool t_number(Interp&, const Value& v, Args& a) { return no_args(a, "test_number"), v.is_number(); }
bool t_string(Interp&, const Value& v, Args& a) { return no_args(a, "test_string"), v.is_string(); }
bool t_mapping(Interp&, const Value& v, Args& a) { return no_args(a, "test_mapping"), v.is_dict(); }
bool t_escaped(Interp&, const Value& v, Args& a) { return no_args(a, "test_escaped"), v.is_string() && v.safe(); }

bool t_sequence(Interp&, const Value& v, Args& a) {
    no_args(a, "test_sequence");
    switch (v.kind()) {
        case Kind::Undefined:  // has __len__ and __getitem__
        case Kind::String:
        case Kind::Dict: return true;
        case Kind::List: {
            SeqKind k = v.list().seq;
            return k != SeqKind::DictKeys && k != SeqKind::DictValues && k != SeqKind::DictItems;
        }
        default: return false;
    }
}

bool t_iterable(Interp&, const Value& v, Args& a) {
    no_args(a, "test_iterable");
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::String:
        case Kind::List:
        case Kind::Dict: return true;
        case Kind::Object: return v.object().otype == ObjType::Iterator || v.object().otype == ObjType::Loop;
        default: return false;
    }
}

bool t_callable(Interp&, const Value& v, Args& a) {
    no_args(a, "callable");
    if (v.is_undefined()) return true;  // jinja2's Undefined defines __call__
    if (!v.is_object()) return false;
    switch (v.object().otype) {
        case ObjType::Builtin:
        case ObjType::BoundMethod:
        case ObjType::Macro:
        case ObjType::Joiner:
        case ObjType::Loop: return true;
        default: return false;
    }
}

bool mod_equals(Interp& in, const Value& v, const Value& num, int64_t want) {
    Value r = binary_op(in, BinOp::Mod, v, num);
    return equal(r, Value::integer(want));
}

bool t_odd(Interp& in, const Value& v, Args& a) { return no_args(a, "test_odd"), mod_equals(in, v, Value::integer(2), 1); }
bool t_even(Interp& in, const Value& v, Args& a) { return no_args(a, "test_even"), mod_equals(in, v, Value::integer(2), 0); }
bool t_divisibleby(Interp& in, const Value& v, Args& a) {
    Params p(a, "test_divisibleby", {"num"}, 1);
    return mod_equals(in, v, *p.get(0), 0);
}

bool all_cased(const Value& v, bool upper) {
    const std::string s = to_str(v);
    bool any = false;
    for (size_t i = 0; i < s.size();) {
        uint32_t c = text::decode(s, i);
        if (upper ? text::is_lower_cp(c) : text::is_upper_cp(c)) return false;
        if (text::is_cased(c)) any = true;
    }
    return any;
}

bool t_lower(Interp&, const Value& v, Args& a) { return no_args(a, "test_lower"), all_cased(v, false); }
bool t_upper(Interp&, const Value& v, Args& a) { return no_args(a, "test_upper"), all_cased(v, true); }

bool t_eq(Interp&, const Value& v, Args& a) { return equal(v, one_arg(a, "eq")); }
bool t_ne(Interp&, const Value& v, Args& a) { return !equal(v, one_arg(a, "ne")); }
bool t_lt(Interp&, const Value& v, Args& a) { return less(v, one_arg(a, "lt")); }
bool t_gt(Interp&, const Value& v, Args& a) { return less(one_arg(a, "gt"), v); }
bool t_le(Interp&, const Value& v, Args& a) {
    const Value& o = one_arg(a, "le");
    return less(v, o) || equal(v, o);
}
bool t_ge(Interp&, const Value& v, Args& a) {
    const Value& o = one_arg(a, "ge");
    return less(o, v) || equal(v, o);
}
bool t_in(Interp& in, const Value& v, Args& a) {
    Params p(a, "test_in", {"seq"}, 1);
    return contains(in, *p.get(0), v);
}

bool t_sameas(Interp&, const Value& v, Args& a) {
    const Value& o = one_arg(a, "test_sameas");
    if (v.kind() != o.kind()) return false;
    switch (v.kind()) {
        case Kind::Undefined: return v.heap() == o.heap();
        case Kind::None: return true;
        case Kind::Bool: return v.as_bool() == o.as_bool();
        case Kind::Int: return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;  // CPython's small ints
        case Kind::Float: return false;
        default: return v.heap() == o.heap();
    }
}

bool t_filter(Interp&, const Value& v, Args& a) {
    no_args(a, "test_filter");
    return v.is_string() && find_filter(v.str()) != nullptr;
}

bool t_test(Interp&, const Value& v, Args& a) {
    no_args(a, "test_test");
    return v.is_string() && find_test(v.str()) != nullptr;
}

struct TestEntry {
    std::string_view name;
    TestFn fn;
};

const TestEntry k_tests[] = {
    {"odd", t_odd},           {"even", t_even},         {"divisibleby", t_divisibleby}, {"defined", t_defined},
    {"undefined", t_undefined}, {"filter", t_filter},   {"test", t_test},               {"none", t_none},
    {"boolean", t_boolean},   {"false", t_false},       {"true", t_true},               {"integer", t_integer},
    {"float", t_float},       {"lower", t_lower},       {"upper", t_upper},             {"string", t_string},
    {"mapping", t_mapping},   {"number", t_number},     {"sequence", t_sequence},       {"iterable", t_iterable},
    {"callable", t_callable}, {"sameas", t_sameas},     {"escaped", t_escaped},         {"in", t_in},
    {"==", t_eq},             {"eq", t_eq},             {"equalto", t_eq},              {"!=", t_ne},
    {"ne", t_ne},             {">", t_gt},              {"gt", t_gt},                   {"greaterthan", t_gt},
    {"ge", t_ge},             {">=", t_ge},             {"<", t_lt},                    {"lt", t_lt},
    {"lessthan", t_lt},       {"<=", t_le},             {"le", t_le},
};

}  // namespace

TestFn find_test(std::string_view name) {
    for (const auto& t : k_tests)
        if (t.name == name) return t.fn;
    return nullptr;
}

}  // namespace kiln::jinja
