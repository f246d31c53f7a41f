// JSON building blocks: see json_basics.h.
#include "constrain/json_basics.h"

#include <string>

#include "kiln/error.h"

namespace kiln::constrain {

namespace {

Expr digit() { return e_class({{'0', '9'}}); }
Expr digit19() { return e_class({{'1', '9'}}); }
Expr hex() { return e_class({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }
Expr digits(uint32_t n) { return e_repeat(digit(), n, n); }

// Decimal strings of one length n between a and b (both n digits).
Expr same_length_range(const std::string& a, const std::string& b) {
    const size_t n = a.size();
    if (n == 0) return e_empty();
    if (a == b) return e_lit(a);
    if (a[0] == b[0]) return e_seq({e_lit(a.substr(0, 1)), same_length_range(a.substr(1), b.substr(1))});
    const std::string rest_lo = a.substr(1), rest_hi = b.substr(1);
    const bool lo_full = rest_lo.find_first_not_of('0') == std::string::npos;
    const bool hi_full = rest_hi.find_first_not_of('9') == std::string::npos;
    std::vector<Expr> alts;
    const char first_any = lo_full ? a[0] : static_cast<char>(a[0] + 1);
    const char last_any = hi_full ? b[0] : static_cast<char>(b[0] - 1);
    if (!lo_full) alts.push_back(e_seq({e_lit(a.substr(0, 1)), same_length_range(rest_lo, std::string(n - 1, '9'))}));
    if (first_any <= last_any)
        alts.push_back(e_seq({e_class({{static_cast<uint32_t>(first_any), static_cast<uint32_t>(last_any)}}), digits(static_cast<uint32_t>(n - 1))}));
    if (!hi_full) alts.push_back(e_seq({e_lit(b.substr(0, 1)), same_length_range(std::string(n - 1, '0'), rest_hi)}));
    return e_alt(std::move(alts));
}

// Non-negative integers in [lo, hi] (hi absent: unbounded), no leading zeros.
Expr uint_range(uint64_t lo, std::optional<uint64_t> hi) {
    if (hi && *hi < lo) return e_nothing();
    const std::string slo = std::to_string(lo);
    std::vector<Expr> alts;
    const size_t max_len = hi ? std::to_string(*hi).size() : slo.size();
    for (size_t len = slo.size(); len <= max_len; ++len) {
        std::string a = len == slo.size() ? slo : "1" + std::string(len - 1, '0');
        if (len == 1 && len != slo.size()) a = "0";
        std::string b = std::string(len, '9');
        if (hi && len == max_len) b = std::to_string(*hi);
        alts.push_back(same_length_range(a, b));
    }
    if (!hi) alts.push_back(e_seq({digit19(), e_repeat(digit(), static_cast<uint32_t>(slo.size()), k_unbounded)}));
    return e_alt(std::move(alts));
}

enum class Frac { Any, Zero, NonZero };

Expr frac(Frac f) {
    switch (f) {
        case Frac::Any: return e_opt(e_seq({e_lit("."), e_plus(digit())}));
        case Frac::Zero: return e_opt(e_seq({e_lit("."), e_plus(e_lit("0"))}));
        case Frac::NonZero: return e_seq({e_lit("."), e_star(digit()), digit19(), e_star(digit())});
    }
    return e_empty();
}

// A piece of a non-negative magnitude w = I + f: I in [lo, hi], with f per `frac`.
struct Piece {
    uint64_t lo;
    std::optional<uint64_t> hi;
    Frac frac;
};

// Pieces of w >= b (or > b) for a magnitude w >= 0.
std::vector<Piece> lower_pieces(std::optional<NumberBound> b) {
    if (!b || b->value < 0 || (b->value == 0 && !b->exclusive)) return {{0, std::nullopt, Frac::Any}};
    const auto v = static_cast<uint64_t>(b->value);
    if (!b->exclusive) return {{v, std::nullopt, Frac::Any}};
    return {{v + 1, std::nullopt, Frac::Any}, {v, v, Frac::NonZero}};
}

// Pieces of w <= b (or < b) for w >= 0; empty when none.
std::vector<Piece> upper_pieces(std::optional<NumberBound> b) {
    if (!b) return {{0, std::nullopt, Frac::Any}};
    if (b->value < 0 || (b->value == 0 && b->exclusive)) return {};
    const auto v = static_cast<uint64_t>(b->value);
    std::vector<Piece> out;
    if (v > 0) out.push_back({0, v - 1, Frac::Any});
    if (!b->exclusive) out.push_back({v, v, Frac::Zero});
    return out;
}

std::optional<Frac> meet(Frac a, Frac b) {
    if (a == Frac::Any) return b;
    if (b == Frac::Any || a == b) return a;
    return std::nullopt;
}

// Magnitudes satisfying both bound sets.
Expr magnitude(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
    std::vector<Expr> alts;
    for (const Piece& a : lower_pieces(lo)) {
        for (const Piece& b : upper_pieces(hi)) {
            const std::optional<Frac> f = meet(a.frac, b.frac);
            if (!f) continue;
            const uint64_t l = std::max(a.lo, b.lo);
            std::optional<uint64_t> h = a.hi;
            if (b.hi) h = h ? std::min(*h, *b.hi) : *b.hi;
            if (h && *h < l) continue;
            alts.push_back(e_seq({uint_range(l, h), frac(*f)}));
        }
    }
    return e_alt(std::move(alts));
}

std::optional<NumberBound> negate(std::optional<NumberBound> b) {
    if (!b) return std::nullopt;
    return NumberBound{-b->value, b->exclusive};
}

}  // namespace

JsonBasics::JsonBasics(GrammarIR& ir, const JsonSchemaOptions& options) : ir_(ir), options_(options) {}

uint32_t JsonBasics::rule(const char* name, uint32_t& slot, Expr (JsonBasics::*body)()) {
    if (slot == UINT32_MAX) {
        slot = ir_.add_rule(name);
        ir_.define(slot, (this->*body)());
    }
    return slot;
}

Expr JsonBasics::ws() { return e_ref(rule("ws", ws_, &JsonBasics::ws_body)); }
Expr JsonBasics::value() { return e_ref(rule("value", value_, &JsonBasics::value_body)); }
Expr JsonBasics::object() { return e_ref(rule("object", object_, &JsonBasics::object_body)); }
Expr JsonBasics::array() { return e_ref(rule("array", array_, &JsonBasics::array_body)); }
Expr JsonBasics::string() { return e_ref(rule("string", string_, &JsonBasics::string_body)); }
Expr JsonBasics::string_char() { return e_ref(rule("char", char_, &JsonBasics::char_body)); }
Expr JsonBasics::number() { return e_ref(rule("number", number_, &JsonBasics::number_body)); }
Expr JsonBasics::integer() { return e_seq({e_opt(e_lit("-")), e_alt({e_lit("0"), e_seq({digit19(), e_star(digit())})})}); }
Expr JsonBasics::boolean() { return e_alt({e_lit("true"), e_lit("false")}); }
Expr JsonBasics::null() { return e_lit("null"); }

Expr JsonBasics::ws_body() {
    if (options_.any_whitespace) return e_star(e_class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}));
    return e_repeat(e_class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}}), 0, options_.max_whitespace);
}

Expr JsonBasics::value_body() {
    return e_alt({object(), array(), string(), number(), e_lit("true"), e_lit("false"), e_lit("null")});
}

// Members are followed by their whitespace, so "," or "}" comes next unambiguously.
Expr JsonBasics::object_body() {
    Expr member = e_seq({string(), ws(), e_lit(":"), ws(), value(), ws()});
    Expr more = e_star(e_seq({e_lit(","), ws(), member}));
    return e_seq({e_lit("{"), ws(), e_opt(e_seq({member, more})), e_lit("}")});
}

Expr JsonBasics::array_body() {
    Expr item = e_seq({value(), ws()});
    Expr more = e_star(e_seq({e_lit(","), ws(), item}));
    return e_seq({e_lit("["), ws(), e_opt(e_seq({item, more})), e_lit("]")});
}

Expr JsonBasics::string_body() { return e_seq({e_lit("\""), e_star(string_char()), e_lit("\"")}); }

// \uXXXX escapes of surrogates are left out: Python reads a lone one as a
// character but a pair as one, which would make length counts disagree.
Expr JsonBasics::char_body() {
    Expr raw = e_class(negate_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
    Expr simple = e_class({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}});
    Expr not_d = e_seq({e_class({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}}), hex(), hex(), hex()});
    Expr d = e_seq({e_class({{'D', 'D'}, {'d', 'd'}}), e_class({{'0', '7'}}), hex(), hex()});
    return e_alt({raw, e_seq({e_lit("\\"), e_alt({simple, e_seq({e_lit("u"), e_alt({not_d, d})})})})});
}

Expr JsonBasics::number_body() {
    return e_seq({integer(), frac(Frac::Any), e_opt(e_seq({e_class({{'E', 'E'}, {'e', 'e'}}), e_opt(e_class({{'+', '+'}, {'-', '-'}})), e_plus(digit())}))});
}

Expr JsonBasics::integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    std::optional<NumberBound> l, h;
    if (lo) l = NumberBound{*lo, false};
    if (hi) h = NumberBound{*hi, false};
    std::vector<Expr> alts;
    // Non-negative: I in range; negative: "-" I with -I in range, I >= 1.
    if (!hi || *hi >= 0) {
        const uint64_t a = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
        std::optional<uint64_t> b;
        if (hi) b = static_cast<uint64_t>(*hi);
        alts.push_back(uint_range(a, b));
    }
    if (!lo || *lo < 0) {
        const uint64_t a = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
        std::optional<uint64_t> b;
        if (lo) b = static_cast<uint64_t>(-*lo);
        alts.push_back(e_seq({e_lit("-"), uint_range(a, b)}));
    }
    return e_alt(std::move(alts));
}

Expr JsonBasics::number_range(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
    // v = w for "w", v = -w for "-w": bounds on v become bounds on w.
    Expr pos = magnitude(lo, hi);
    Expr neg = magnitude(negate(hi), negate(lo));
    return e_alt({pos, e_seq({e_lit("-"), neg})});
}

// YYYY-MM-DD, a real calendar date in years 0001-9999 (Python's date.fromisoformat;
// rfc3339-validator for date-time checks the day against the month the same way).
Expr JsonBasics::date_body() {
    Expr year = e_alt({e_seq({e_lit("000"), digit19()}), e_seq({e_lit("00"), digit19(), digit()}),
                       e_seq({e_lit("0"), digit19(), digit(), digit()}), e_seq({digit19(), digits(3)})});
    // Leap years: the last two digits a non-zero multiple of 4, or "00" after a
    // multiple of 4 other than 00 (year 0000 does not exist).
    Expr mult4 = e_alt({e_seq({e_class({{'0', '0'}, {'2', '2'}, {'4', '4'}, {'6', '6'}, {'8', '8'}}), e_class({{'4', '4'}, {'8', '8'}})}),
                        e_seq({e_class({{'1', '1'}, {'3', '3'}, {'5', '5'}, {'7', '7'}, {'9', '9'}}), e_class({{'2', '2'}, {'6', '6'}})}),
                        e_seq({e_class({{'2', '2'}, {'4', '4'}, {'6', '6'}, {'8', '8'}}), e_lit("0")})});
    Expr leap = e_alt({e_seq({digit(), digit(), mult4}), e_seq({mult4, e_lit("00")})});
    Expr d28 = e_alt({e_seq({e_lit("0"), digit19()}), e_seq({e_lit("1"), digit()}), e_seq({e_lit("2"), e_class({{'0', '8'}})})});
    Expr d30 = e_alt({d28, e_lit("29"), e_lit("30")});
    Expr d31 = e_alt({d30, e_lit("31")});
    Expr m31 = e_alt({e_lit("01"), e_lit("03"), e_lit("05"), e_lit("07"), e_lit("08"), e_lit("10"), e_lit("12")});
    Expr m30 = e_alt({e_lit("04"), e_lit("06"), e_lit("09"), e_lit("11")});
    return e_alt({e_seq({year, e_lit("-"), e_alt({e_seq({m31, e_lit("-"), d31}), e_seq({m30, e_lit("-"), d30}),
                                                    e_seq({e_lit("02-"), d28})})}),
                  e_seq({leap, e_lit("-02-29")})});
}

std::optional<Expr> JsonBasics::format_content(const std::string& format) {
    auto ci = [](char c) { return e_class({{static_cast<uint32_t>(c), static_cast<uint32_t>(c)}, {static_cast<uint32_t>(c - 32), static_cast<uint32_t>(c - 32)}}); };
    // rfc3339-validator: HH:MM:SS(.d+)?(Z|±HH:MM), case-insensitive T and Z.
    Expr hour = e_alt({e_seq({e_class({{'0', '1'}}), digit()}), e_seq({e_lit("2"), e_class({{'0', '3'}})})});
    Expr minute = e_seq({e_class({{'0', '5'}}), digit()});
    Expr offset = e_alt({ci('z'), e_seq({e_class({{'+', '+'}, {'-', '-'}}), hour, e_lit(":"), minute})});
    Expr time = e_seq({hour, e_lit(":"), minute, e_lit(":"), minute, e_opt(e_seq({e_lit("."), e_plus(digit())})), offset});
    if (format == "date") return e_ref(rule("date", date_, &JsonBasics::date_body));
    if (format == "time") return time;
    if (format == "date-time") return e_seq({e_ref(rule("date", date_, &JsonBasics::date_body)), ci('t'), time});
    if (format == "uuid")
        return e_seq({e_repeat(hex(), 8, 8), e_lit("-"), e_repeat(hex(), 4, 4), e_lit("-"), e_repeat(hex(), 4, 4), e_lit("-"),
                      e_repeat(hex(), 4, 4), e_lit("-"), e_repeat(hex(), 12, 12)});
    // jsonschema's email check is only that the text contains "@".
    if (format == "email") return e_seq({e_star(string_char()), e_lit("@"), e_star(string_char())});
    return std::nullopt;
}

}  // namespace kiln::constrain
