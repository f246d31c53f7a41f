// Small UTF-8 helpers shared by the reply parser and its value readers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::reply_detail {

void append_utf8(std::string& out, unsigned code_point);

// `s` with every invalid UTF-8 sequence replaced by U+FFFD, so values built from
// model text can always be serialized as JSON.
std::string valid_utf8(std::string_view s);

// Length of a trailing UTF-8 sequence that is still incomplete (0 to 3 bytes):
// streamed text is held back there so no delta splits a character.
size_t incomplete_utf8_tail(std::string_view s);

// At most `max_bytes` of `s` (cut on a character boundary), with "…" when cut.
std::string shorten(std::string_view s, size_t max_bytes);

}  // namespace kiln::reply_detail
