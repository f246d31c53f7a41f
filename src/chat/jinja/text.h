// UTF-8 and Python string helpers: code points, Python's notion of whitespace,
// case mapping and character classes. Standard library only, so Unicode coverage
// is approximate outside the common scripts (see docs/jinja.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jinja::text {

// Decodes the code point at s[i]; advances i. Invalid bytes decode as themselves
// (one byte, value 0xDC80 + byte, as Python's surrogateescape would) so that
// indexing and slicing never lose or invent bytes.
uint32_t decode_multibyte(std::string_view s, size_t& i);
inline uint32_t decode(std::string_view s, size_t& i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
        ++i;
        return b;
    }
    return decode_multibyte(s, i);
}
void encode(std::string& out, uint32_t cp);

// a == b for byte strings. Keys, roles and tags are short: compared with two
// overlapping loads instead of a library call.
inline bool same(std::string_view a, std::string_view b) {
    const size_t n = a.size();
    if (n != b.size()) return false;
    const char* x = a.data();
    const char* y = b.data();
    if (n >= 8) {
        if (n > 16) return std::memcmp(x, y, n) == 0;
        uint64_t p, q, r, s;
        std::memcpy(&p, x, 8);
        std::memcpy(&q, y, 8);
        std::memcpy(&r, x + n - 8, 8);
        std::memcpy(&s, y + n - 8, 8);
        return ((p ^ q) | (r ^ s)) == 0;
    }
    if (n >= 4) {
        uint32_t p, q, r, s;
        std::memcpy(&p, x, 4);
        std::memcpy(&q, y, 4);
        std::memcpy(&r, x + n - 4, 4);
        std::memcpy(&s, y + n - 4, 4);
        return ((p ^ q) | (r ^ s)) == 0;
    }
    if (n >= 2) {
        uint16_t p, q, r, s;
        std::memcpy(&p, x, 2);
        std::memcpy(&q, y, 2);
        std::memcpy(&r, x + n - 2, 2);
        std::memcpy(&s, y + n - 2, 2);
        return ((p ^ q) | (r ^ s)) == 0;
    }
    return n == 0 || x[0] == y[0];
}
bool is_ascii(std::string_view s);
int64_t length(std::string_view s);               // code points
std::vector<uint32_t> code_points(std::string_view s);
// Byte offsets of every code point boundary (size = length + 1).
std::vector<size_t> boundaries(std::string_view s);

bool is_space(uint32_t cp);       // str.isspace
bool is_alpha(uint32_t cp);       // str.isalpha (approximate outside common scripts)
bool is_digit(uint32_t cp);       // str.isdigit
bool is_decimal(uint32_t cp);     // str.isdecimal
bool is_numeric(uint32_t cp);     // str.isnumeric
bool is_upper_cp(uint32_t cp);
bool is_lower_cp(uint32_t cp);
bool is_cased(uint32_t cp);
bool is_printable(uint32_t cp);   // str.isprintable, for repr()
bool is_identifier_start(uint32_t cp);
bool is_identifier_char(uint32_t cp);
uint32_t to_upper_cp(uint32_t cp);
uint32_t to_lower_cp(uint32_t cp);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);   // str.capitalize
std::string title(std::string_view s);        // str.title
std::string swapcase(std::string_view s);

// str.strip family: chars == nullptr strips Python whitespace.
std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right);

// HTML escaping as markupsafe does: & < > ' "
std::string html_escape(std::string_view s);

}  // namespace kiln::jinja::text
