// Unicode helpers of the tokenizer: lenient UTF-8 decoding, per-codepoint
// category flags, simple lowercase, first codepoint of NFD, and the GPT-2 byte
// alphabet.
//
// The category data comes from utf8proc (Unicode 15.0 in Debian 12's build),
// folded once into a two-stage table so a lookup is two loads. llama.cpp's own
// table is Unicode 15.1: the 627 codepoints added in 15.1 (CJK extension I and
// four ideographic description characters) are "unassigned" here and letters /
// symbols there. docs/tokenizer.md lists this gap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tok {

// One bit per general category group, plus whitespace (the White_Space property).
// "Undefined" is Cn (unassigned); a codepoint past U+10FFFF has no bits at all.
namespace cpt {
constexpr uint16_t k_undefined = 0x0001;
constexpr uint16_t k_number = 0x0002;       // \p{N}
constexpr uint16_t k_letter = 0x0004;       // \p{L}
constexpr uint16_t k_separator = 0x0008;    // \p{Z}
constexpr uint16_t k_mark = 0x0010;         // \p{M}
constexpr uint16_t k_punctuation = 0x0020;  // \p{P}
constexpr uint16_t k_symbol = 0x0040;       // \p{S}
constexpr uint16_t k_control = 0x0080;      // \p{C} (Cc, Cf, Co, Cs)
constexpr uint16_t k_categories = 0x00FF;
constexpr uint16_t k_whitespace = 0x0100;   // \s (Unicode White_Space)
}  // namespace cpt

constexpr uint32_t k_replacement_char = 0xFFFD;
constexpr uint32_t k_max_codepoint = 0x10FFFF;

// Flags of a codepoint (0 for values past U+10FFFF).
uint16_t codepoint_flags(uint32_t cp);

inline bool is_whitespace(uint32_t cp) { return codepoint_flags(cp) & cpt::k_whitespace; }

// Simple (one-to-one) lowercase mapping of UnicodeData.txt.
uint32_t to_lower(uint32_t cp);
// First codepoint of the canonical decomposition (NFD) of cp; cp itself when it
// does not decompose. WordPiece's accent stripping keeps only this one.
uint32_t nfd_first(uint32_t cp);
// CJK ideograph blocks (the Han script as the Kimi-K2 expression uses it).
bool is_han(uint32_t cp);

// Length of the UTF-8 sequence announced by a lead byte (1 for continuation and
// invalid bytes), as SentencePiece-style splitting uses it.
inline size_t utf8_sequence_length(uint8_t lead) {
    static constexpr uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[lead >> 4];
}

// Decodes one codepoint at text[pos] and advances pos. Lenient in the way the
// reference tokenizers are: overlong forms and surrogates decode to their value;
// a byte that cannot start a complete sequence, and a 4-byte form above U+10FFFF,
// consume one byte and give U+FFFD.
uint32_t decode_utf8(std::string_view text, size_t& pos);
// All codepoints of text (see decode_utf8).
void decode_utf8(std::string_view text, std::vector<uint32_t>& out);
// Appends the UTF-8 form of cp (cp <= U+10FFFF).
void append_utf8(std::string& out, uint32_t cp);
// Number of bytes append_utf8 writes for cp.
inline size_t utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }
// True when text is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool is_valid_utf8(std::string_view text);
// Strict check of the sequence starting at text[pos]: its length when it is a
// complete well-formed sequence, 0 when text ends inside a sequence that is
// well-formed so far, -1 when it is ill-formed (the streaming decoder replaces
// one byte with U+FFFD and goes on).
int utf8_sequence_status(std::string_view text, size_t pos);

// GPT-2 byte alphabet: every byte maps to one printable codepoint (bytes that are
// printable Latin-1 map to themselves, the other 68 to U+0100..U+0143).
uint32_t byte_to_gpt2_codepoint(uint8_t byte);
// Inverse; -1 when cp is not in the alphabet.
int gpt2_codepoint_to_byte(uint32_t cp);

}  // namespace kiln::tok
