#include "reply/reply_harness.h"

#include <map>
#include <random>
#include <stdexcept>

#include "chat/reply_text.h"
#include "support/test_support.h"

namespace kiln::test {

using nlohmann::json;

json canonical(const std::vector<ReplyEvent>& events, bool with_arguments_text) {
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
            if (with_arguments_text) out.back()["call"]["arguments_text"] = c->arguments_text;
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
    // Every call comes as ToolCallStart, its ToolCallArguments pieces, then the
    // ToolCall, whose arguments_text is the pieces joined and parses to its arguments.
    std::map<std::string, std::pair<std::string, std::string>> open_calls;  // id -> (name, text so far)
    auto check_call_stream = [&](const ReplyEvent& e) {
        if (auto* st = std::get_if<ToolCallStart>(&e)) {
            if (st->id.empty() || open_calls.count(st->id)) throw std::runtime_error("ToolCallStart id reused: " + st->id);
            open_calls[st->id] = {st->name, ""};
        } else if (auto* a = std::get_if<ToolCallArguments>(&e)) {
            auto it = open_calls.find(a->id);
            if (it == open_calls.end()) throw std::runtime_error("ToolCallArguments without a start: " + a->id);
            if (a->text.empty()) throw std::runtime_error("empty ToolCallArguments");
            if (valid_input && reply_detail::valid_utf8(a->text) != a->text)
                throw std::runtime_error("arguments piece splits a UTF-8 character: " + a->text);
            it->second.second += a->text;
        } else if (auto* c = std::get_if<ToolCall>(&e)) {
            auto it = open_calls.find(c->id);
            if (it == open_calls.end()) throw std::runtime_error("ToolCall without a start: " + c->id);
            if (it->second.first != c->name) throw std::runtime_error("ToolCall name differs from its start: " + c->name);
            if (it->second.second != c->arguments_text)
                throw std::runtime_error("streamed arguments '" + it->second.second + "' are not arguments_text '" +
                                         c->arguments_text + "'");
            if (json::parse(c->arguments_text, nullptr, false) != c->arguments)
                throw std::runtime_error("arguments_text does not parse to the arguments: " + c->arguments_text);
            open_calls.erase(it);
            // Started calls that ended in an error stay open; ids are never reused.
            open_calls[c->id + "#done"] = {};
        }
    };
    auto take = [&](std::vector<ReplyEvent> evs) {
        for (ReplyEvent& e : evs) {
            check_call_stream(e);
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
    // The expected events, and the calls' arguments_text as the unsplit reply gives them.
    json whole_texts;
    try {
        whole_texts = canonical(run_split(format, o, text, {}, finish), true);
    } catch (const std::exception& e) {
        whole_texts = json{{"exception", e.what()}};
    }
    auto check = [&](const std::vector<size_t>& cuts) -> std::string {
        json got, got_texts;
        try {
            auto events = run_split(format, o, text, cuts, finish);
            got = canonical(events);
            got_texts = canonical(events, true);
        } catch (const std::exception& e) {
            got = got_texts = json{{"exception", e.what()}};
        }
        if (got == expected && got_texts == whole_texts) return "";
        std::string where;
        for (size_t c : cuts) where += std::to_string(c) + " ";
        if (got == expected)
            return "cuts [" + where + "] of " + std::to_string(text.size()) +
                   " bytes: arguments_text differs from the unsplit reply's:\n  unsplit " + whole_texts.dump() +
                   "\n  got     " + got_texts.dump();
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
