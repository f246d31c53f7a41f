// Hand-written pre-tokenizer splitters (see pretokenizer.h). Each cuts the piece
// [begin, end) of a codepoint sequence and appends the end offset of every
// non-empty sub-piece to `ends`. They run in time linear in the piece.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::tok {

struct SplitInput {
    const uint32_t* cps;
    const uint16_t* flags;
};

// The GPT-2 expression as llama.cpp runs it: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|
// ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (a codepoint no branch takes alone).
void split_gpt2(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);
// The Llama 3 expression; max_digits 3 (\p{N}{1,3}) or 1 (Qwen 2's \p{N}).
void split_llama3(const SplitInput& in, uint32_t begin, uint32_t end, uint32_t max_digits,
                  std::vector<uint32_t>& ends);
// Qwen 3.5: as Qwen 2 with combining marks inside letter runs.
void split_qwen35(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);
// Kimi-K2: Han runs, letter runs without Han with optional contraction, \p{N}{1,3}, ...
void split_kimi_k2(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);
// Digit runs cut in groups of three from the right (the leading 1-2 digits first);
// like llama.cpp, the text before the first group of a run stays glued to it.
void split_digit_groups(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);
// [^\n]+|[\n]+
void split_newlines(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);

// Isolates codepoints of a class, as an expression CLASS / CLASS+ / CLASS{1,max}
// does: matches are cut out, the runs between them become pieces.
// PunctSymbols: [\p{P}\$\+<=>\^~\|]; PunctSymbolsTick adds the backtick (Falcon).
enum class ClassKind : uint8_t { Number, AsciiDigit, PunctSymbols, PunctSymbolsTick, LineBreak };
void split_class(const SplitInput& in, uint32_t begin, uint32_t end, ClassKind cls, uint32_t min_run,
                 uint32_t max_run, std::vector<uint32_t>& ends);
// \s+$ : the trailing whitespace of the piece.
void split_trailing_space(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);
// (?=(\d{3})+(?!\d)) : cut before every group of three ASCII digits counted from
// the end of a digit run.
void split_digit_lookahead(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends);

}  // namespace kiln::tok
