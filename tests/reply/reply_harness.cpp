#include "reply/reply_harness.h"

#include <random>
#include <stdexcept>

#include "chat/reply_text.h"
#include "support/test_support.h"

namespace kiln::test {

using nlohmann::json;

json canonical(const std::vector<ReplyEvent>& events) {
    json out = json::array();
    auto append_text = [&](const char* key, const std::string& text) {
        if (!out.empty() && out.back().contains(key)) {
            out.back()[key] = out.back()[key].get<std::string>() + text;
        } else {
            out.push_back({{key, text}});
        }
    };
    for (const ReplyEvent& e : events) {
        if (auto* t = std::get_if<TextDelta>(&e)) {
            append_text("text", t->text);
        } else if (auto* th = std::get_if<ThinkingDelta>(&e)) {
            append_text("thinking", th->text);
        } else if (auto* c = std::get_if<ToolCall>(&e)) {
            out.push_back({{"call", {{"id", c->id}, {"name", c->name}, {"arguments", c->arguments}}}});
        } else if (auto* err = std::get_if<ReplyError>(&e)) {
            out.push_back({{"error", err->message}});
        } else if (auto* end = std::get_if<ReplyEnd>(&e)) {
            out.push_back({{"end", std::string(reply_finish_name(end->finish))}});
        }
    }
    return out;
}

std::vector<ReplyEvent> run_split(const ChatFormat& format, const ReplyOptions& options, std::string_view text,
                                  const std::vector<size_t>& cuts, ReplyFinish finish) {
    ReplyParser parser(format, options);
    std::vector<ReplyEvent> events;
    bool valid_input = reply_detail::valid_utf8(text) == text;
    auto take = [&](std::vector<ReplyEvent> evs) {
        for (ReplyEvent& e : evs) {
            const std::string* delta = nullptr;
            if (auto* t = std::get_if<TextDelta>(&e)) delta = &t->text;
            if (auto* t = std::get_if<ThinkingDelta>(&e)) delta = &t->text;
            if (delta && delta->empty()) throw std::runtime_error("empty delta");
            if (delta && valid_input && reply_detail::valid_utf8(*delta) != *delta)
                throw std::runtime_error("delta splits a UTF-8 character: " + *delta);
            events.push_back(std::move(e));
        }
    };
    size_t prev = 0;
    for (size_t cut : cuts) {
        take(parser.push(text.substr(prev, cut - prev)));
        prev = cut;
    }
    take(parser.push(text.substr(prev)));
    take(parser.finish(finish));
    return events;
}

json parse_whole(const ChatFormat& format, const ReplyOptions& options, std::string_view text, ReplyFinish finish) {
    ReplyOptions o = options;
    if (!o.id_seed) o.id_seed = 1234;
    return canonical(run_split(format, o, text, {}, finish));
}

std::string check_all_splits(const ChatFormat& format, const ReplyOptions& options, std::string_view text,
                             const json& expected, ReplyFinish finish) {
    ReplyOptions o = options;
    if (!o.id_seed) o.id_seed = 1234;
    auto check = [&](const std::vector<size_t>& cuts) -> std::string {
        json got;
        try {
            got = canonical(run_split(format, o, text, cuts, finish));
        } catch (const std::exception& e) {
            got = json{{"exception", e.what()}};
        }
        if (got == expected) return "";
        std::string where;
        for (size_t c : cuts) where += std::to_string(c) + " ";
        return "cuts [" + where + "] of " + std::to_string(text.size()) + " bytes:\n  expected " + expected.dump() +
               "\n  got      " + got.dump();
    };
    std::string err = check({});
    if (!err.empty()) return err;
    for (size_t i = 0; i <= text.size(); ++i)
        if (!(err = check({i})).empty()) return err;
    std::vector<size_t> bytes;
    for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
    if (!(err = check(bytes)).empty()) return err;
    if (text.size() <= 160)
        for (size_t i = 1; i < text.size(); ++i)
            for (size_t j = i + 1; j < text.size(); ++j)
                if (!(err = check({i, j})).empty()) return err;
    std::mt19937 rng(42);
    for (int round = 0; round < 60; ++round) {
        std::uniform_int_distribution<size_t> pos(0, text.size());
        std::uniform_int_distribution<int> count(2, 12);
        std::vector<size_t> cuts;
        for (int k = count(rng); k > 0; --k) cuts.push_back(pos(rng));
        std::sort(cuts.begin(), cuts.end());
        if (!(err = check(cuts)).empty()) return err;
    }
    return "";
}

ChatFormat format_of(const std::string& template_file) {
    return detect_chat_format(read_file(data_path("shared/templates/" + template_file)));
}

}  // namespace kiln::test
