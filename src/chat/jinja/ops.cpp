#include "chat/jinja/ops.h"

#include <cmath>
#include <limits>

#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

void fail_undefined(const Value& u) {
    const std::string* hint = u.undefined_hint();
    fail(hint ? *hint : std::string("value is undefined"));
}

namespace {

[[noreturn]] void overflow() { fail("integer overflow (kiln integers are 64-bit)"); }

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
    fail_type("unsupported operand type(s) for " + std::string(op) + ": '" + std::string(type_name(a)) + "' and '" +
              std::string(type_name(b)) + "'");
}

std::string_view op_text(BinOp op) {
    switch (op) {
        case BinOp::Add: return "+";
        case BinOp::Sub: return "-";
        case BinOp::Mul: return "*";
        case BinOp::Div: return "/";
        case BinOp::FloorDiv: return "//";
        case BinOp::Mod: return "%";
        case BinOp::Pow: return "** or pow()";
    }
    return "?";
}

// Python's float floor division and modulo (result takes the divisor's sign).
void float_divmod(double a, double b, double& div, double& mod) {
    if (b == 0.0) fail("float division by zero");
    mod = std::fmod(a, b);
    div = (a - mod) / b;
    if (mod != 0.0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, b);
    }
    if (div != 0.0) {
        double floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
        div = floordiv;
    } else {
        div = std::copysign(0.0, a / b);
    }
}

bool is_seq(const Value& v) {
    return v.is_list() && (v.list().seq == SeqKind::List || v.list().seq == SeqKind::Tuple || v.list().seq == SeqKind::Group);
}
bool is_tuple(const Value& v) { return v.list().seq == SeqKind::Tuple || v.list().seq == SeqKind::Group; }

Value repeat_string(Interp& in, const Value& s, int64_t n) {
    if (n <= 0 || s.str().empty()) return Value::string(std::string(), s.safe());
    const uint64_t total = static_cast<uint64_t>(s.str().size()) * static_cast<uint64_t>(n);
    if (total / static_cast<uint64_t>(n) != s.str().size()) overflow();
    in.check_size(total);
    std::string out;
    out.reserve(total);
    for (int64_t k = 0; k < n; ++k) out += s.str();
    return Value::string(std::move(out), s.safe());
}

Value repeat_list(Interp& in, const Value& l, int64_t n) {
    Value out = is_tuple(l) ? Value::new_tuple() : Value::new_list();
    if (n <= 0) return out;
    const auto& items = l.list().items;
    const uint64_t total = static_cast<uint64_t>(items.size()) * static_cast<uint64_t>(n);
    in.check_size(total * sizeof(Value));
    out.list().items.reserve(total);
    for (int64_t k = 0; k < n; ++k) out.list().items.insert(out.list().items.end(), items.begin(), items.end());
    return out;
}

int64_t ipow(int64_t base, int64_t exp) {
    int64_t result = 1;
    while (exp > 0) {
        if (exp & 1) {
            if (__builtin_mul_overflow(result, base, &result)) overflow();
        }
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
    }
    return result;
}

}  // namespace

Value markup_escape(const Value& v) {
    if (v.is_string()) {
        if (v.safe()) return v;
        return Value::string(text::html_escape(v.str()), true);
    }
    return Value::string(text::html_escape(to_str(v)), true);
}

Value string_add(Interp& in, const Value& a, const Value& b) {
    if (a.safe() || b.safe()) {
        Value x = markup_escape(a);
        Value y = markup_escape(b);
        in.check_size(x.str().size() + y.str().size());
        return Value::string(x.str() + y.str(), true);
    }
    in.check_size(a.str().size() + b.str().size());
    std::string out;
    out.reserve(a.str().size() + b.str().size());
    out += a.str();
    out += b.str();
    return Value::string(std::move(out));
}

Value binary_op(Interp& in, BinOp op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    const bool ints = a.is_integral() && b.is_integral();
    const bool nums = a.is_number() && b.is_number();
    switch (op) {
        case BinOp::Add:
            if (ints) {
                int64_t r;
                if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
                return Value::integer(r);
            }
            if (nums) return Value::floating(a.as_float() + b.as_float());
            if (a.is_string() && b.is_string()) return string_add(in, a, b);
            if (is_seq(a) && is_seq(b) && is_tuple(a) == is_tuple(b)) {
                Value out = is_tuple(a) ? Value::new_tuple() : Value::new_list();
                in.check_size((a.list().items.size() + b.list().items.size()) * sizeof(Value));
                out.list().items = a.list().items;
                out.list().items.insert(out.list().items.end(), b.list().items.begin(), b.list().items.end());
                return out;
            }
            if (a.is_string()) fail_type("can only concatenate str (not \"" + std::string(type_name(b)) + "\") to str");
            if (a.is_list() && a.list().seq == SeqKind::List)
                fail_type("can only concatenate list (not \"" + std::string(type_name(b)) + "\") to list");
            unsupported(op_text(op), a, b);
        case BinOp::Sub:
            if (ints) {
                int64_t r;
                if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
                return Value::integer(r);
            }
            if (nums) return Value::floating(a.as_float() - b.as_float());
            unsupported(op_text(op), a, b);
        case BinOp::Mul:
            if (ints) {
                int64_t r;
                if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
                return Value::integer(r);
            }
            if (nums) return Value::floating(a.as_float() * b.as_float());
            if (a.is_string() && b.is_integral()) return repeat_string(in, a, b.as_int());
            if (b.is_string() && a.is_integral()) return repeat_string(in, b, a.as_int());
            if (is_seq(a) && b.is_integral()) return repeat_list(in, a, b.as_int());
            if (is_seq(b) && a.is_integral()) return repeat_list(in, b, a.as_int());
            if ((a.is_string() || is_seq(a)) && b.is_number())
                fail_type("can't multiply sequence by non-int of type '" + std::string(type_name(b)) + "'");
            unsupported(op_text(op), a, b);
        case BinOp::Div:
            if (nums) {
                double y = b.as_float();
                if (y == 0.0) fail(ints ? "division by zero" : "float division by zero");
                if (ints) {
                    // exact for |values| < 2^53, as Python's correctly rounded int / int
                    return Value::floating(static_cast<double>(a.as_int()) / static_cast<double>(b.as_int()));
                }
                return Value::floating(a.as_float() / y);
            }
            unsupported(op_text(op), a, b);
        case BinOp::FloorDiv:
            if (ints) {
                int64_t x = a.as_int(), y = b.as_int();
                if (y == 0) fail("integer division or modulo by zero");
                if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow();
                int64_t q = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                return Value::integer(q);
            }
            if (nums) {
                double div, mod;
                float_divmod(a.as_float(), b.as_float(), div, mod);
                return Value::floating(div);
            }
            unsupported(op_text(op), a, b);
        case BinOp::Mod:
            if (ints) {
                int64_t x = a.as_int(), y = b.as_int();
                if (y == 0) fail("integer division or modulo by zero");
                if (y == -1) return Value::integer(0);
                int64_t r = x % y;
                if (r != 0 && ((r < 0) != (y < 0))) r += y;
                return Value::integer(r);
            }
            if (nums) {
                double div, mod;
                float_divmod(a.as_float(), b.as_float(), div, mod);
                return Value::floating(mod);
            }
            if (a.is_string()) {
                std::string s = percent_format(in, a.str(), b, a.safe());
                return Value::string(std::move(s), a.safe());
            }
            unsupported(op_text(op), a, b);
        case BinOp::Pow:
            if (ints) {
                int64_t x = a.as_int(), y = b.as_int();
                if (y >= 0) return Value::integer(ipow(x, y));
                if (x == 0) fail("0.0 cannot be raised to a negative power");
                return Value::floating(std::pow(static_cast<double>(x), static_cast<double>(y)));
            }
            if (nums) {
                double x = a.as_float(), y = b.as_float();
                if (x == 0.0 && y < 0) fail("0.0 cannot be raised to a negative power");
                if (x < 0 && y != std::floor(y)) fail("complex results are not supported");
                double r = std::pow(x, y);
                if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) fail("(34, 'Numerical result out of range')");
                return Value::floating(r);
            }
            unsupported(op_text(op), a, b);
    }
    unsupported(op_text(op), a, b);
}

Value unary_minus(const Value& v) {
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_integral()) {
        if (v.as_int() == std::numeric_limits<int64_t>::min()) overflow();
        return Value::integer(-v.as_int());
    }
    if (v.is_float()) return Value::floating(-v.as_float());
    fail_type("bad operand type for unary -: '" + std::string(type_name(v)) + "'");
}

Value unary_plus(const Value& v) {
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) return v;
    fail_type("bad operand type for unary +: '" + std::string(type_name(v)) + "'");
}

bool contains(Interp& in, const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::Undefined: return false;
        case Kind::String:
            if (!item.is_string())
                fail_type("'in <string>' requires string as left operand, not " + std::string(type_name(item)));
            return container.str().find(item.str()) != std::string::npos;
        case Kind::List:
            for (const Value& x : container.list().items)
                if (equal(x, item)) return true;
            return false;
        case Kind::Dict:
            hash_value(item);  // unhashable -> TypeError, as Python
            return container.dict().find(item) != nullptr;
        case Kind::Object:
            if (container.object().otype == ObjType::Iterator) {
                auto& it = static_cast<IteratorObj&>(container.object());
                Value x;
                while (it.next && it.next(in, x)) {
                    in.tick();
                    if (equal(x, item)) return true;
                }
                it.next = nullptr;
                return false;
            }
            break;
        default: break;
    }
    fail_type("argument of type '" + std::string(type_name(container)) + "' is not iterable");
}

namespace {

int64_t slice_index(const Value& v) {
    if (v.is_integral()) return v.as_int();
    if (v.is_undefined()) fail_undefined(v);
    fail_type("slice indices must be integers or None or have an __index__ method");
}

// Python's slice.indices(): the range of positions a slice selects.
void slice_positions(int64_t n, const Value& start_v, const Value& stop_v, const Value& step_v, std::vector<int64_t>& out) {
    int64_t step = step_v.is_none() ? 1 : slice_index(step_v);
    if (step == 0) fail("slice step cannot be zero");
    int64_t start, stop;
    if (step > 0) {
        start = start_v.is_none() ? 0 : slice_index(start_v);
        stop = stop_v.is_none() ? n : slice_index(stop_v);
        if (start < 0) start = std::max<int64_t>(0, start + n);
        if (stop < 0) stop = std::max<int64_t>(0, stop + n);
        start = std::min(start, n);
        stop = std::min(stop, n);
        for (int64_t i = start; i < stop; i += step) out.push_back(i);
    } else {
        start = start_v.is_none() ? n - 1 : slice_index(start_v);
        stop = stop_v.is_none() ? -1 : slice_index(stop_v);
        if (!start_v.is_none()) {
            if (start < 0) start = std::max<int64_t>(-1, start + n);
            start = std::min(start, n - 1);
        }
        if (!stop_v.is_none()) {
            if (stop < 0) stop = std::max<int64_t>(-1, stop + n);
            stop = std::min(stop, n - 1);
        }
        for (int64_t i = start; i > stop; i += step) out.push_back(i);
    }
}

}  // namespace

Value slice_value(Interp& in, const Value& obj, const Value& start, const Value& stop, const Value& step, bool folded) {
    if (obj.is_undefined()) fail_undefined(obj);
    std::vector<int64_t> pos;
    if (obj.is_string()) {
        const std::string& s = obj.str();
        if (obj.str_obj()->is_ascii()) {
            slice_positions(static_cast<int64_t>(s.size()), start, stop, step, pos);
            std::string out;
            out.reserve(pos.size());
            for (int64_t i : pos) out.push_back(s[static_cast<size_t>(i)]);
            return Value::string(std::move(out), obj.safe());
        }
        std::vector<size_t> b = text::boundaries(s);
        slice_positions(static_cast<int64_t>(b.size() - 1), start, stop, step, pos);
        std::string out;
        for (int64_t i : pos) out.append(s, b[static_cast<size_t>(i)], b[static_cast<size_t>(i) + 1] - b[static_cast<size_t>(i)]);
        return Value::string(std::move(out), obj.safe());
    }
    if (obj.is_list() && obj.list().seq != SeqKind::DictKeys && obj.list().seq != SeqKind::DictValues &&
        obj.list().seq != SeqKind::DictItems) {
        const auto& items = obj.list().items;
        slice_positions(static_cast<int64_t>(items.size()), start, stop, step, pos);
        const SeqKind sk = obj.list().seq;
        Value out = (sk == SeqKind::Tuple || sk == SeqKind::Group) ? Value::new_tuple() : Value::new_list();
        out.list().items.reserve(pos.size());
        for (int64_t i : pos) out.list().items.push_back(items[static_cast<size_t>(i)]);
        return out;
    }
    (void)in;
    // jinja2 compiles slicing to plain Python subscription (not its getitem with the
    // attribute fallback), so slicing anything else raises -- unless its optimizer
    // folded the expression, which goes through getitem and yields undefined.
    if (folded) return Value::undefined("'" + std::string(type_name(obj)) + " object' is not subscriptable");
    if (obj.is_dict()) fail_type("unhashable type: 'slice'");
    fail_type("'" + std::string(type_name(obj)) + "' object is not subscriptable");
}

Value index_value(const Value& obj, int64_t index) {
    if (obj.is_string()) {
        const std::string& s = obj.str();
        if (obj.str_obj()->is_ascii()) {
            const auto n = static_cast<int64_t>(s.size());
            if (index < 0) index += n;
            if (index < 0 || index >= n) return Value();
            return Value::string(std::string(1, s[static_cast<size_t>(index)]), obj.safe());
        }
        std::vector<size_t> b = text::boundaries(s);
        const auto n = static_cast<int64_t>(b.size() - 1);
        if (index < 0) index += n;
        if (index < 0 || index >= n) return Value();
        auto i = static_cast<size_t>(index);
        return Value::string(s.substr(b[i], b[i + 1] - b[i]), obj.safe());
    }
    if (obj.is_list()) {
        const ListObj& l = obj.list();
        if (l.seq == SeqKind::DictKeys || l.seq == SeqKind::DictValues || l.seq == SeqKind::DictItems) return Value();
        const auto n = static_cast<int64_t>(l.items.size());
        if (index < 0) index += n;
        if (index < 0 || index >= n) return Value();
        return l.items[static_cast<size_t>(index)];
    }
    return Value();
}

}  // namespace kiln::jinja
