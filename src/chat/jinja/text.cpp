#include "chat/jinja/text.h"

#include <cstring>

namespace kiln::jinja::text {

uint32_t decode_multibyte(std::string_view s, size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if ((b0 & 0xE0) == 0xC0) n = 1, cp = b0 & 0x1F, min = 0x80;
    else if ((b0 & 0xF0) == 0xE0) n = 2, cp = b0 & 0x0F, min = 0x800;
    else if ((b0 & 0xF8) == 0xF0) n = 3, cp = b0 & 0x07, min = 0x10000;
    if (n == 0 || i + n >= s.size()) {
        ++i;
        return 0xDC00 + b0;
    }
    for (size_t k = 1; k <= n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) {
            ++i;
            return 0xDC00 + b0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++i;
        return 0xDC00 + b0;
    }
    i += n + 1;
    return cp;
}

void encode(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
        out.push_back(static_cast<char>(cp - 0xDC00));  // an undecodable byte, restored
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool is_ascii(std::string_view s) {
    // eight bytes at a time
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        if (w & 0x8080808080808080ull) return false;
    }
    for (; i < s.size(); ++i)
        if (static_cast<unsigned char>(s[i]) >= 0x80) return false;
    return true;
}

int64_t length(std::string_view s) {
    int64_t n = 0;
    for (size_t i = 0; i < s.size();) {
        // runs of ASCII, then one (possibly invalid) multi-byte code point
        while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i, ++n;
        if (i < s.size()) {
            decode_multibyte(s, i);
            ++n;
        }
    }
    return n;
}

std::vector<uint32_t> code_points(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) out.push_back(decode(s, i));
    return out;
}

std::vector<size_t> boundaries(std::string_view s) {
    std::vector<size_t> out;
    out.reserve(s.size() + 1);
    size_t i = 0;
    while (i < s.size()) {
        out.push_back(i);
        decode(s, i);
    }
    out.push_back(s.size());
    return out;
}

bool is_space(uint32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

struct Range {
    uint32_t lo, hi;
};

bool in_ranges(uint32_t c, const Range* r, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (c >= r[i].lo && c <= r[i].hi) return true;
    return false;
}

// Letters of the common scripts (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic,
// Indic, Thai, CJK, kana, Hangul). Python's full Unicode database is not needed
// by real chat templates; this covers what user text is likely to contain.
constexpr Range k_alpha[] = {
    {0xAA, 0xAA},       {0xB5, 0xB5},       {0xBA, 0xBA},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x2C1},      {0x2C6, 0x2D1},     {0x2E0, 0x2E4},     {0x370, 0x374},     {0x376, 0x377},
    {0x37A, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x3FF},     {0x400, 0x481},
    {0x48A, 0x52F},     {0x531, 0x556},     {0x560, 0x588},     {0x5D0, 0x5EA},     {0x5EF, 0x5F2},
    {0x620, 0x64A},     {0x66E, 0x66F},     {0x671, 0x6D3},     {0x6D5, 0x6D5},     {0x6FA, 0x6FC},
    {0x904, 0x939},     {0x93D, 0x93D},     {0x950, 0x950},     {0x958, 0x961},     {0x971, 0x980},
    {0x985, 0x9B9},     {0xA05, 0xA39},     {0xA85, 0xAB9},     {0xB05, 0xB39},     {0xB83, 0xBB9},
    {0xC05, 0xC39},     {0xC85, 0xCB9},     {0xD05, 0xD3A},     {0xE01, 0xE30},     {0xE32, 0xE33},
    {0xE40, 0xE46},     {0x10A0, 0x10FF},   {0x1100, 0x11FF},   {0x1E00, 0x1FBC},   {0x1FC2, 0x1FCC},
    {0x1FD0, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FFC},   {0x2C00, 0x2CE4},   {0x3041, 0x3096},
    {0x309D, 0x309F},   {0x30A1, 0x30FA},   {0x30FC, 0x30FF},   {0x3105, 0x312F},   {0x3131, 0x318E},
    {0x31A0, 0x31BF},   {0x31F0, 0x31FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA48C},
    {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0xFF66, 0xFFDC},
    {0x20000, 0x2FA1F},
};

constexpr Range k_decimal[] = {
    {0x30, 0x39},   {0x660, 0x669}, {0x6F0, 0x6F9}, {0x966, 0x96F}, {0x9E6, 0x9EF},
    {0xE50, 0xE59}, {0xFF10, 0xFF19},
};

// Python's str.isprintable is false for categories Cc, Cf, Cs, Co, Cn, Zl, Zp and
// Zs other than the ASCII space: the ones repr() escapes.
constexpr Range k_not_printable[] = {
    {0x7F, 0xA0},       {0xAD, 0xAD},       {0x378, 0x379},     {0x600, 0x605},     {0x61C, 0x61C},
    {0x6DD, 0x6DD},     {0x70F, 0x70F},     {0x8E2, 0x8E2},     {0x1680, 0x1680},   {0x180E, 0x180E},
    {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x2064},   {0x2066, 0x206F},   {0x3000, 0x3000},
    {0xD800, 0xF8FF},   {0xFEFF, 0xFEFF},   {0xFFF0, 0xFFFB},   {0xFFFE, 0xFFFF},   {0x110BD, 0x110BD},
    {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF}, {0xF0000, 0x10FFFF},
};

// Case pairs laid out as alternating upper/lower code points.
bool alternating_pair(uint32_t c, uint32_t lo, uint32_t hi, bool even_upper) {
    return c >= lo && c <= hi && ((c % 2 == 0) == even_upper);
}

}  // namespace

bool is_alpha(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return in_ranges(c, k_alpha, std::size(k_alpha));
}

bool is_decimal(uint32_t c) { return in_ranges(c, k_decimal, std::size(k_decimal)); }
bool is_digit(uint32_t c) { return is_decimal(c) || c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x2070 && c <= 0x2079 && c != 0x2071 && c != 0x2072 && c != 0x2073) || (c >= 0x2080 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468); }
bool is_numeric(uint32_t c) {
    return is_digit(c) || (c >= 0xBC && c <= 0xBE) || (c >= 0x2150 && c <= 0x2189) || c == 0x3007 ||
           c == 0x4E00 || c == 0x4E8C || c == 0x4E09 || c == 0x56DB || c == 0x4E94 || c == 0x516D ||
           c == 0x4E03 || c == 0x516B || c == 0x4E5D || c == 0x5341;
}

bool is_printable(uint32_t c) {
    if (c < 0x20) return false;
    if (c < 0x7F) return true;
    return !in_ranges(c, k_not_printable, std::size(k_not_printable));
}

uint32_t to_upper_cp(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    if (c == 0xB5) return 0x39C;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (alternating_pair(c, 0x100, 0x137, false) || alternating_pair(c, 0x14A, 0x177, false)) return c - 1;
    if (alternating_pair(c, 0x139, 0x148, true) || alternating_pair(c, 0x179, 0x17E, true)) return c - 1;
    if (c == 0x3C2) return 0x3A3;
    if (c >= 0x3B1 && c <= 0x3C9) return c - 32;
    if (c == 0x3AC) return 0x386;
    if (c >= 0x3AD && c <= 0x3AF) return c - 37;
    if (c == 0x3CC) return 0x38C;
    if (c == 0x3CD || c == 0x3CE) return c - 63;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    if (alternating_pair(c, 0x460, 0x481, false) || alternating_pair(c, 0x48A, 0x4BF, false) ||
        alternating_pair(c, 0x4D0, 0x52F, false))
        return c - 1;
    if (alternating_pair(c, 0x4C1, 0x4CE, true)) return c - 1;
    if (c == 0x4CF) return 0x4C0;
    if (c >= 0x561 && c <= 0x586) return c - 48;
    if (alternating_pair(c, 0x1E00, 0x1E95, false) || alternating_pair(c, 0x1EA0, 0x1EFF, false)) return c - 1;
    if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
    return c;
}

uint32_t to_lower_cp(uint32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c == 0x178) return 0xFF;
    if (c == 0x130) return 'i';
    if (alternating_pair(c, 0x100, 0x137, true) || alternating_pair(c, 0x14A, 0x177, true)) return c + 1;
    if (alternating_pair(c, 0x139, 0x148, false) || alternating_pair(c, 0x179, 0x17E, false)) return c + 1;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if (alternating_pair(c, 0x460, 0x481, true) || alternating_pair(c, 0x48A, 0x4BF, true) ||
        alternating_pair(c, 0x4D0, 0x52F, true))
        return c + 1;
    if (alternating_pair(c, 0x4C1, 0x4CE, false)) return c + 1;
    if (c == 0x4C0) return 0x4CF;
    if (c >= 0x531 && c <= 0x556) return c + 48;
    if (alternating_pair(c, 0x1E00, 0x1E95, true) || alternating_pair(c, 0x1EA0, 0x1EFF, true)) return c + 1;
    if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
    return c;
}

bool is_upper_cp(uint32_t c) { return to_lower_cp(c) != c; }
bool is_lower_cp(uint32_t c) { return to_upper_cp(c) != c || c == 0xDF || c == 0x138 || c == 0x149; }
bool is_cased(uint32_t c) { return is_upper_cp(c) || is_lower_cp(c); }

bool is_identifier_start(uint32_t c) { return c == '_' || is_alpha(c); }
bool is_identifier_char(uint32_t c) { return is_identifier_start(c) || is_decimal(c); }

namespace {

template <typename F>
std::string map_cps(std::string_view s, F f) {
    std::string out;
    out.reserve(s.size());
    if (is_ascii(s)) {
        for (char c : s) f(out, static_cast<uint32_t>(static_cast<unsigned char>(c)));
        return out;
    }
    for (size_t i = 0; i < s.size();) f(out, decode(s, i));
    return out;
}

void put_upper(std::string& out, uint32_t c) {
    if (c == 0xDF) {
        out += "SS";  // Python: 'ß'.upper() == 'SS'
        return;
    }
    encode(out, to_upper_cp(c));
}

}  // namespace

std::string upper(std::string_view s) {
    return map_cps(s, [](std::string& out, uint32_t c) { put_upper(out, c); });
}

std::string lower(std::string_view s) {
    return map_cps(s, [](std::string& out, uint32_t c) { encode(out, to_lower_cp(c)); });
}

std::string swapcase(std::string_view s) {
    return map_cps(s, [](std::string& out, uint32_t c) {
        if (is_upper_cp(c)) encode(out, to_lower_cp(c));
        else if (is_lower_cp(c)) put_upper(out, c);
        else encode(out, c);
    });
}

std::string capitalize(std::string_view s) {
    bool first = true;
    return map_cps(s, [&](std::string& out, uint32_t c) {
        if (first) put_upper(out, c);
        else encode(out, to_lower_cp(c));
        first = false;
    });
}

std::string title(std::string_view s) {
    bool prev_cased = false;
    return map_cps(s, [&](std::string& out, uint32_t c) {
        if (prev_cased) encode(out, to_lower_cp(c));
        else put_upper(out, c);
        prev_cased = is_cased(c);
    });
}

std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right) {
    std::vector<uint32_t> set;
    if (chars) set = code_points(*chars);
    auto in_set = [&](uint32_t c) {
        if (!chars) return is_space(c);
        for (uint32_t x : set)
            if (x == c) return true;
        return false;
    };
    // Forward from the left; backward from the right one code point at a time (a
    // lead byte with exactly its continuation bytes, else a lone byte: how the
    // forward decoder splits the same bytes). Only the stripped ends are read.
    size_t b = 0, e = s.size();
    if (left) {
        while (b < e) {
            size_t j = b;
            if (!in_set(decode(s, j))) break;
            b = j;
        }
    }
    if (right) {
        while (e > b) {
            size_t k = e - 1;
            while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80 && e - k < 4) --k;
            size_t j = k;
            uint32_t c = decode(s, j);
            if (j != e) {
                k = e - 1;
                j = k;
                c = decode(s, j);
            }
            if (!in_set(c)) break;
            e = k;
        }
    }
    return s.substr(b, e - b);
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '\'': out += "&#39;"; break;
            case '"': out += "&#34;"; break;
            default: out.push_back(c);
        }
    }
    return out;
}

}  // namespace kiln::jinja::text
