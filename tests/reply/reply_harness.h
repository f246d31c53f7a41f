// Feeds a reply to the ReplyParser in many splits and compares the events in a
// canonical form: adjacent deltas of one kind joined, usage left out (it counts
// pushes). The result must be the same for every split.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/reply.h"

namespace kiln::test {

// [{"text": …}, {"thinking": …}, {"call": {"id", "name", "arguments"}}, {"error": …}, {"end": "stop"}]
// with_arguments_text: each call also shows its arguments_text.
nlohmann::json canonical(const std::vector<ReplyEvent>& events, bool with_arguments_text = false);

// Runs the parser over `text` cut at `cuts` (sorted byte offsets). Also checks
// that every delta is valid UTF-8 when the text is, and that no delta is empty.
std::vector<ReplyEvent> run_split(const ChatFormat& format, const ReplyOptions& options, std::string_view text,
                                  const std::vector<size_t>& cuts, ReplyFinish finish = ReplyFinish::Stop);

// Whole text, every single cut, byte by byte, every pair of cuts for short
// texts, and random multi-cuts under a fixed seed: all must give `expected`.
// Returns an empty string on success, else a description of the first mismatch.
std::string check_all_splits(const ChatFormat& format, const ReplyOptions& options, std::string_view text,
                             const nlohmann::json& expected, ReplyFinish finish = ReplyFinish::Stop);

// The canonical events of the whole text in one push.
nlohmann::json parse_whole(const ChatFormat& format, const ReplyOptions& options, std::string_view text,
                           ReplyFinish finish = ReplyFinish::Stop);

ChatFormat format_of(const std::string& template_file);  // from tests/data/shared/templates

}  // namespace kiln::test
