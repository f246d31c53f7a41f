// The reply stream parser. Text arrives in arbitrary pieces; the parser keeps
// what it has not decided yet in one buffer and, in each mode, looks for the
// earliest complete marker. Text before it is released; text at the end that
// could still become a marker (a proper prefix of one) is held back, as is an
// incomplete UTF-8 character. A decision is only taken once no earlier position
// can still start a marker, so every split of the text gives the same events.
//
// Modes: Text and Reasoning stream; Section buffers one tool call (or block of
// calls) whole until its closing marker, the end of its JSON, or the end of the
// reply, then parses it; BareJson is Llama 3's call written as the whole reply;
// Header and Body read message-framed replies (GPT-OSS, Glimmer, Functionary).
#include <algorithm>

#include "chat/reply_call_preview.h"
#include "chat/reply_text.h"
#include "chat/reply_tool_bodies.h"
#include "chat/reply_values.h"
#include "kiln/reply.h"

namespace kiln {

using namespace reply_detail;
using nlohmann::json;

namespace {

constexpr size_t k_npos = std::string::npos;
// A message header longer than this is not a header: the reply is read as text.
constexpr size_t k_max_header = 256;

enum class Action {
    OpenReasoning, CloseReasoning, Drop, End,  // text and reasoning
    OpenSection, CloseSection, Args, Fence,    // tool calls
    HeaderEnd, MessageEnd, HeaderStart,        // message framings
};

struct Marker {
    std::string text;
    Action action = Action::Drop;
    int index = 0;  // OpenSection: which section; End: k_stop_string for the caller's stop strings
};
constexpr int k_stop_string = 1;

struct MarkerSet {
    std::vector<Marker> list;
    size_t max_len = 0;
    void add(std::string text, Action action, int index = 0) {
        if (text.empty()) return;
        for (const Marker& m : list)
            if (m.text == text) return;  // the first role wins (e.g. a stop string that is also a marker)
        max_len = std::max(max_len, text.size());
        list.push_back({std::move(text), action, index});
    }
    void add_all(const MarkerSet& other) {
        for (const Marker& m : other.list) add(m.text, m.action, m.index);
    }
};

struct Found {
    bool found = false;
    size_t pos = 0;
    const Marker* marker = nullptr;
    size_t safe = 0;  // when not found: bytes before this cannot start a marker
};

// Earliest complete marker at or after `from` (longest on a tie), unless an
// earlier or equal position could still grow into one.
Found find_marker(std::string_view text, size_t from, const MarkerSet& set, bool final) {
    Found r;
    size_t best = k_npos;
    const Marker* best_marker = nullptr;
    for (const Marker& m : set.list) {
        size_t p = text.find(m.text, from);
        if (p == k_npos) continue;
        if (p < best || (p == best && m.text.size() > best_marker->text.size())) {
            best = p;
            best_marker = &m;
        }
    }
    size_t partial = k_npos;
    if (!final && set.max_len > 0) {
        size_t q = text.size() >= set.max_len ? text.size() - set.max_len + 1 : 0;
        for (q = std::max(q, from); q < text.size() && partial == k_npos; ++q) {
            std::string_view tail = text.substr(q);
            for (const Marker& m : set.list)
                if (m.text.size() > tail.size() && m.text.compare(0, tail.size(), tail) == 0) {
                    partial = q;
                    break;
                }
        }
    }
    if (best != k_npos && (partial == k_npos || partial > best)) {
        r.found = true;
        r.pos = best;
        r.marker = best_marker;
        return r;
    }
    r.safe = std::min({partial, best, text.size()});
    return r;
}

enum class SectionEnd { Close, Json, Mistral, ToEnd };

struct SectionSpec {
    std::string open;
    SectionEnd end = SectionEnd::Close;
    std::string close;
    BodyKind body = BodyKind::JsonCalls;
    std::string name;  // Code / PythonTag: the tool's name
};

enum class Mode { Text, Reasoning, Section, BareJson, Header, Body, Done };
enum class Role { Text, Thinking, Tool };

// One stream of text (answer or thinking): leading whitespace of a segment is
// dropped, trailing whitespace is held until more text follows, so blocks come
// out trimmed whatever the split.
struct Segment {
    bool at_start = true;
    std::string pending_space;
};

}  // namespace

struct ReplyParser::Impl {
    ChatFormat format;
    ReplyOptions options;
    ToolCallIds ids;

    std::vector<SectionSpec> sections;
    bool bare_json = false;
    bool framed = false;
    std::string header_start, header_end;
    std::vector<std::string> message_ends;

    MarkerSet ends;  // end markers and stop strings
    MarkerSet text_markers, reasoning_markers, header_markers, body_markers, fence_markers, args_markers;
    std::vector<MarkerSet> section_markers;

    std::string buf;
    size_t base = 0;  // absolute offset of buf[0] in the reply
    size_t scan_from = 0;
    Mode mode = Mode::Text;
    Segment text_seg, think_seg;
    ReplyMessage message;
    bool done = false;
    bool finished = false;
    // The last end marker found: the one end_reply acts on, which every path
    // calls right after finding it. A stop string's text is reported in ReplyEnd.
    const Marker* last_end = nullptr;
    std::string ended_by_stop;
    Found find_end_aware(std::string_view text, size_t from, const MarkerSet& set, bool final) {
        Found f = find_marker(text, from, set, final);
        if (f.found && f.marker->action == Action::End) last_end = f.marker;
        return f;
    }
    std::vector<ReplyEvent>* out = nullptr;

    // Section / BareJson state.
    int section = -1;
    struct StreamedCall {
        std::string id;   // the id its ToolCallStart announced (empty: not announced)
        size_t sent = 0;  // bytes of its arguments sent
    };
    std::vector<StreamedCall> streamed;  // the open section's calls, in body order
    size_t scanned = 0;                  // body bytes the last stream_calls scan read
    // Mistral's models write their own call ids, after the arguments: those calls
    // are sent whole, with the model's ids, once complete.
    bool previews_on() const { return format.id_style != ToolCallIdStyle::Alnum9; }
    JsonValueScanner json;
    int phase = 0;  // Json sections: 0 = before the value, 1 = scanning it, 2 = looking for the closing fence
    bool fenced = false;
    bool bare_ok = false;
    bool bare_after_call = false;

    // Framed messages.
    Role role = Role::Text;
    std::string tool_name;
    BodyKind tool_body = BodyKind::JsonArgs;

    // Reasoning token accounting: byte ranges of reasoning and the end of each push.
    std::vector<std::pair<size_t, size_t>> spans;
    size_t reasoning_from = 0;
    std::vector<size_t> push_ends;

    Impl(ChatFormat f, ReplyOptions o)
        : format(std::move(f)), options(std::move(o)), ids(format.id_style, options.id_seed) {
        build();
    }

    void build() {
        for (const std::string& m : format.end_markers) ends.add(m, Action::End);
        for (const std::string& s : options.stop) ends.add(s, Action::End, k_stop_string);

        const ToolFormat& t = format.tools;
        auto section_spec = [&](std::string open, SectionEnd end, std::string close, BodyKind body,
                                std::string name = {}) {
            if (open.empty()) return;
            if (end == SectionEnd::Close && close.empty()) end = SectionEnd::ToEnd;
            sections.push_back({std::move(open), end, std::move(close), body, std::move(name)});
        };
        switch (t.syntax) {
            case ToolSyntax::None:
            case ToolSyntax::GptOss:
            case ToolSyntax::Atem:
            case ToolSyntax::FunctionaryV32: break;
            case ToolSyntax::Hermes:
            case ToolSyntax::TaggedJson: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::JsonCalls); break;
            case ToolSyntax::Granite:
            case ToolSyntax::MistralJson:
            case ToolSyntax::Firefunction:
            case ToolSyntax::GigaChat:
            case ToolSyntax::CommandR: section_spec(t.open, SectionEnd::Json, "", BodyKind::JsonCalls); break;
            case ToolSyntax::MistralArgs: section_spec(t.open, SectionEnd::Mistral, "", BodyKind::MistralArgs); break;
            case ToolSyntax::Llama3:
                bare_json = true;
                section_spec("<|python_tag|>", SectionEnd::ToEnd, "", BodyKind::PythonTag, "python");
                break;
            case ToolSyntax::FunctionaryV31:
                section_spec("<function=", SectionEnd::Close, "</function>", BodyKind::FunctionTag);
                section_spec("<|python_tag|>", SectionEnd::ToEnd, "", BodyKind::Code, "python");
                break;
            case ToolSyntax::Pythonic: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::Pythonic); break;
            case ToolSyntax::Gemma4: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::Gemma4); break;
            case ToolSyntax::QwenXml: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::QwenXml); break;
            case ToolSyntax::GlmXml: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::GlmXml); break;
            case ToolSyntax::InvokeXml: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::InvokeXml); break;
            case ToolSyntax::KimiXtml: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::KimiXtml); break;
            case ToolSyntax::Kimi: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::KimiSections); break;
            case ToolSyntax::DeepSeek: section_spec(t.open, SectionEnd::Close, t.close, BodyKind::DeepSeek); break;
        }

        const ReasoningFormat& r = format.reasoning;
        bool tags = r.syntax == ReasoningSyntax::Tags;
        text_markers.add_all(ends);
        if (tags) {
            text_markers.add(r.open, Action::OpenReasoning);
            text_markers.add(r.close, Action::Drop);  // a closing marker with no opening one
        }
        for (size_t i = 0; i < sections.size(); ++i)
            text_markers.add(sections[i].open, Action::OpenSection, static_cast<int>(i));
        for (const std::string& w : format.wrapper_markers) text_markers.add(w, Action::Drop);

        reasoning_markers.add_all(ends);
        if (tags) reasoning_markers.add(r.close, Action::CloseReasoning);
        // A family that always starts inside its reasoning (no opening marker) may
        // go straight from reasoning to a call: the call ends the reasoning.
        if (tags && r.open.empty())
            for (size_t i = 0; i < sections.size(); ++i)
                reasoning_markers.add(sections[i].open, Action::OpenSection, static_cast<int>(i));

        for (const SectionSpec& s : sections) {
            MarkerSet m;
            m.add_all(ends);
            if (s.end == SectionEnd::Close) m.add(s.close, Action::CloseSection);
            section_markers.push_back(std::move(m));
        }
        fence_markers.add_all(ends);
        fence_markers.add("```", Action::Fence);
        args_markers.add_all(ends);
        args_markers.add("[ARGS]", Action::Args);

        switch (format.framing) {
            case ReplyFraming::Markers: break;
            case ReplyFraming::Harmony:
                framed = true;
                header_start = "<|start|>";
                header_end = "<|message|>";
                message_ends = {"<|end|>"};
                break;
            case ReplyFraming::Atem:
                framed = true;
                header_start = "<|start|>";
                header_end = "<|message|>";
                message_ends = {"<|eom|>"};
                break;
            case ReplyFraming::Recipients:
                framed = true;
                header_start = ">>>";
                header_end = "\n";
                break;
        }
        if (framed) {
            header_markers.add_all(ends);
            header_markers.add(header_end, Action::HeaderEnd);
            body_markers.add_all(ends);
            for (const std::string& m : message_ends) body_markers.add(m, Action::MessageEnd);
            body_markers.add(header_start, Action::HeaderStart);
            mode = Mode::Header;
        } else if (tags && options.starts_in_thinking) {
            mode = Mode::Reasoning;
            reasoning_from = 0;
        }
        bare_ok = bare_json && mode == Mode::Text;
    }

    // ---- output ----------------------------------------------------------

    template <typename Delta>
    void emit_delta(std::string text, std::string& accumulated) {
        accumulated += text;
        if (!out->empty())
            if (auto* last = std::get_if<Delta>(&out->back())) {
                last->text += text;
                return;
            }
        out->push_back(Delta{std::move(text)});
    }

    void write(Segment& seg, bool thinking, std::string_view s) {
        if (seg.at_start) {
            size_t i = 0;
            while (i < s.size() && is_space(s[i])) ++i;
            s.remove_prefix(i);
            if (s.empty()) return;
            seg.at_start = false;
        }
        size_t keep = s.size();
        while (keep > 0 && is_space(s[keep - 1])) --keep;
        if (keep == 0) {
            seg.pending_space.append(s);
            return;
        }
        std::string text = std::move(seg.pending_space);
        text.append(s.substr(0, keep));
        seg.pending_space.assign(s.substr(keep));
        if (thinking)
            emit_delta<ThinkingDelta>(std::move(text), message.reasoning);
        else
            emit_delta<TextDelta>(std::move(text), message.content);
    }
    void write_text(std::string_view s) { write(text_seg, false, s); }
    void write_thinking(std::string_view s) { write(think_seg, true, s); }
    static void end_segment(Segment& seg) {
        seg.at_start = true;
        seg.pending_space.clear();
    }

    void emit_error(std::string why) {
        std::string msg = "malformed tool call: " + shorten(valid_utf8(trim(why)), 2000);
        message.errors.push_back(msg);
        out->push_back(ReplyError{std::move(msg)});
    }

    // The calls of a finished body. `previews` (JsonCalls bodies: the scan of the
    // whole body) gives the model's own arguments text and the calls this
    // section already announced while it streamed. Each good call in order takes
    // the next id (unless the model wrote its own), and so does every call whose
    // arguments could stream, good or not: an announced id is never given to
    // another call, and the ids do not depend on how the reply was split (the
    // scan of the whole body decides, and stream_calls foresees it).
    void emit_calls(const std::vector<ParsedCall>& calls, std::string_view body = {},
                    const std::vector<CallPreview>& previews = {}) {
        for (size_t i = 0; i < calls.size(); ++i) {
            const ParsedCall& c = calls[i];
            const CallPreview* p = i < previews.size() ? &previews[i] : nullptr;
            const StreamedCall* s = p && i < streamed.size() && !streamed[i].id.empty() ? &streamed[i] : nullptr;
            const bool streams = p && p->streams;
            if (!c.ok) {
                if (streams) ids.next();  // its id may have been announced
                emit_error(c.error_text);
                continue;
            }
            std::string id;
            if (streams) {
                std::string next = ids.next();
                id = s ? s->id : next;  // s->id: what stream_calls foresaw, the same id
            } else {
                id = c.id.empty() ? ids.next() : c.id;
            }
            std::string text = c.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            if (streams && p->args_complete) {
                std::string raw(body.substr(p->args_from, p->args_to - p->args_from));
                auto parsed = parse_json(raw);
                if (parsed && *parsed == c.arguments && p->name == c.name)
                    text = std::move(raw);
                else if (s) {
                    emit_error(c.name + " " + raw + " (the arguments streamed are not what the call parsed to)");
                    continue;
                }
            } else if (s) {
                emit_error(std::string(body));
                continue;
            }
            if (!s) out->push_back(ToolCallStart{id, c.name});
            const size_t sent = s ? s->sent : 0;
            if (text.size() > sent) out->push_back(ToolCallArguments{id, text.substr(sent)});
            ToolCall call{id, c.name, c.arguments, std::move(text)};
            message.tool_calls.push_back(call);
            out->push_back(std::move(call));
        }
        streamed.clear();
    }

    void parse_body(BodyKind kind, std::string_view body, const std::string& name, std::string_view open) {
        BodyContext ctx;
        ctx.tools = options.tools.is_array() ? &options.tools : nullptr;
        ctx.name = name;
        auto calls = parse_tool_body(kind, body, ctx);
        // A whole-body failure reads better with the marker that opened it.
        for (ParsedCall& c : calls)
            if (!c.ok && trim(c.error_text) == trim(body)) c.error_text = std::string(open) + std::string(body);
        std::vector<CallPreview> previews;
        if (kind == BodyKind::JsonCalls && previews_on()) previews = preview_json_calls(body, true);
        emit_calls(calls, body, previews);
    }

    // While a JSON call body is still being written: announces each call whose
    // name is known and whose arguments object has begun, and sends the
    // arguments as far as they are safe to (no part of a marker, no split
    // UTF-8 character). Earlier calls of the body take their ids first.
    void stream_calls() {
        if (!previews_on() || mode != Mode::Section || sections[static_cast<size_t>(section)].body != BodyKind::JsonCalls)
            return;
        const std::string_view safe = std::string_view(buf).substr(0, std::min(scan_from, buf.size()));
        // Each scan reads the body from its start: scanning again only once the
        // body has grown by a sixteenth keeps the whole reply linear.
        if (safe.size() < scanned + std::max<size_t>(8, scanned / 16)) return;
        scanned = safe.size();
        const std::vector<CallPreview> previews = preview_json_calls(safe, false);
        if (streamed.size() < previews.size()) streamed.resize(previews.size());
        int good_before = 0;  // calls before this one in the body that will take an id
        for (size_t i = 0; i < previews.size(); ++i) {
            const CallPreview& p = previews[i];
            StreamedCall& s = streamed[i];
            if (!p.streams) {
                good_before += !p.name.empty();  // a whole call without arguments: good when named
                continue;
            }
            if (s.id.empty()) {
                // The id emit_calls will give it: the good calls before it take theirs first.
                ToolCallIds ahead = ids;
                for (int k = 0; k < good_before; ++k) ahead.next();
                s.id = ahead.next();
                out->push_back(ToolCallStart{s.id, p.name});
            }
            ++good_before;
            std::string_view text = safe.substr(p.args_from, p.args_to - p.args_from);
            text.remove_suffix(incomplete_utf8_tail(text));
            if (text.size() > s.sent) {
                out->push_back(ToolCallArguments{s.id, std::string(text.substr(s.sent))});
                s.sent = text.size();
            }
        }
    }

    // ---- buffer ----------------------------------------------------------

    void consume(size_t n) {
        buf.erase(0, n);
        base += n;
        scan_from = scan_from > n ? scan_from - n : 0;
    }

    void set_mode(Mode m) {
        mode = m;
        scan_from = 0;
    }

    // Length of the longest suffix of buf that is a proper prefix of an end marker
    // or stop string: at the end of the reply it is dropped, not released.
    size_t trailing_end_prefix() const {
        size_t best = 0;
        for (const Marker& m : ends.list) {
            size_t n = std::min(m.text.size() - 1, buf.size());
            for (; n > best; --n)
                if (buf.compare(buf.size() - n, n, m.text, 0, n) == 0) {
                    best = n;
                    break;
                }
        }
        return best;
    }

    // Releases streamable text up to `safe` (or everything at the end).
    void release(bool final, size_t safe, bool thinking) {
        size_t n = final ? buf.size() - trailing_end_prefix() : safe - incomplete_utf8_tail(std::string_view(buf).substr(0, safe));
        if (thinking)
            write_thinking(std::string_view(buf).substr(0, n));
        else
            write_text(std::string_view(buf).substr(0, n));
        consume(final ? buf.size() : n);
    }

    void end_reply() {
        if (last_end && last_end->index == k_stop_string) ended_by_stop = last_end->text;
        if (mode == Mode::Reasoning) spans.emplace_back(reasoning_from, base);
        end_segment(text_seg);
        end_segment(think_seg);
        set_mode(Mode::Done);
        done = true;
        base += buf.size();  // the rest of the reply is ignored
        buf.clear();
    }

    // ---- modes -----------------------------------------------------------

    void open_section(int index) {
        end_segment(text_seg);
        section = index;
        streamed.clear();
        scanned = 0;
        phase = 0;
        json.reset(0);
        set_mode(Mode::Section);
    }

    bool step_text(bool final) {
        if (bare_ok) {
            size_t i = 0;
            while (i < buf.size() && (is_space(buf[i]) || (bare_after_call && buf[i] == ';'))) ++i;
            if (i == buf.size() && !final) return false;  // whitespace may still precede a call
            if (i < buf.size() && buf[i] == '{') {
                consume(i);
                json.reset(0);
                set_mode(Mode::BareJson);
                return true;
            }
            bare_ok = false;
            if (bare_after_call) consume(i);
        }
        Found f = find_end_aware(buf, 0, text_markers, final);
        if (!f.found) {
            release(final, f.safe, false);
            return false;
        }
        write_text(std::string_view(buf).substr(0, f.pos));
        size_t marker_at = base + f.pos;
        consume(f.pos + f.marker->text.size());
        switch (f.marker->action) {
            case Action::OpenReasoning:
                end_segment(text_seg);
                reasoning_from = marker_at;
                set_mode(Mode::Reasoning);
                break;
            case Action::OpenSection: open_section(f.marker->index); break;
            case Action::End: end_reply(); break;
            default: break;  // Drop: wrappers and stray closing markers vanish
        }
        return true;
    }

    bool step_reasoning(bool final) {
        Found f = find_end_aware(buf, 0, reasoning_markers, final);
        if (!f.found) {
            release(final, f.safe, true);
            return false;
        }
        write_thinking(std::string_view(buf).substr(0, f.pos));
        consume(f.pos + f.marker->text.size());
        if (f.marker->action == Action::End) {
            end_reply();
            return true;
        }
        spans.emplace_back(reasoning_from, base);
        end_segment(think_seg);
        if (f.marker->action == Action::OpenSection)
            open_section(f.marker->index);
        else
            set_mode(Mode::Text);
        return true;
    }

    void close_section(size_t body_len, size_t consumed, bool then_end) {
        const SectionSpec& s = sections[static_cast<size_t>(section)];
        std::string body = buf.substr(0, body_len);
        consume(consumed);
        parse_body(s.body, body, s.name, s.open);
        if (then_end) {
            end_reply();
        } else {
            set_mode(Mode::Text);
            bare_ok = bare_after_call = false;
        }
    }

    // Json / Mistral sections: the call ends where its JSON value ends.
    bool step_json_section(const SectionSpec& s, bool final) {
        if (phase == 0) {
            size_t i = 0;
            while (i < buf.size() && is_space(buf[i])) ++i;
            if (i == buf.size()) return false;
            // A ``` fence may open the JSON (Command R writes Action: ```json …```).
            if (buf[i] == '`' && buf.size() - i < 3 && !final) return false;
            if (buf.compare(i, 3, "```") == 0) {
                size_t nl = buf.find('\n', i);
                if (nl == k_npos) {
                    Found e = find_end_aware(buf, scan_from, ends, final);
                    if (!e.found) {
                        scan_from = e.safe;
                        return false;
                    }
                    close_section(e.pos, e.pos + e.marker->text.size(), true);
                    return true;
                }
                json.reset(nl + 1);
                phase = 1;
                fenced = true;
            } else if (s.end == SectionEnd::Mistral && buf[i] != '[' && buf[i] != '{') {
                // NAME[ARGS]{…}: the JSON starts after [ARGS].
                Found f = find_end_aware(buf, scan_from, args_markers, final);
                if (!f.found) {
                    scan_from = f.safe;
                    return false;
                }
                if (f.marker->action == Action::End) {
                    close_section(f.pos, f.pos + f.marker->text.size(), true);
                    return true;
                }
                json.reset(f.pos + f.marker->text.size());
                phase = 1;
                fenced = false;
            } else {
                json.reset(i);
                phase = 1;
                fenced = false;
            }
            scan_from = 0;
        }
        if (phase == 2) {
            Found f = find_end_aware(buf, scan_from, fence_markers, final);
            if (!f.found) {
                scan_from = f.safe;
                return false;
            }
            bool end = f.marker->action == Action::End;
            close_section(f.pos, f.pos + f.marker->text.size(), end);
            return true;
        }
        // The call ends where its JSON ends, or, when what follows the marker is
        // not JSON, at the end of that line; an end marker before either ends the
        // reply. Deciding on the earliest of them keeps the result split-free.
        JsonValueScanner::State state = json.advance(buf);
        size_t limit = k_npos;
        if (state == JsonValueScanner::State::Complete) limit = json.end();
        if (state == JsonValueScanner::State::Failed) {
            limit = buf.find('\n', json.position());
            if (limit == k_npos && final) limit = buf.size();
        }
        Found e = find_end_aware(buf, scan_from, ends, final);
        if (e.found && e.pos < limit) {
            close_section(e.pos, e.pos + e.marker->text.size(), true);
            return true;
        }
        if (state == JsonValueScanner::State::Complete) {
            if (fenced) {
                phase = 2;
                scan_from = json.end();
                return true;
            }
            close_section(limit, limit, false);
            return true;
        }
        if (limit != k_npos) {
            close_section(limit, limit, false);  // not JSON: a malformed call
            return true;
        }
        if (!e.found) scan_from = e.safe;
        return false;
    }

    bool step_section(bool final) {
        const SectionSpec& s = sections[static_cast<size_t>(section)];
        if (s.end == SectionEnd::Json || s.end == SectionEnd::Mistral) return step_json_section(s, final);
        const MarkerSet& markers = s.end == SectionEnd::Close ? section_markers[static_cast<size_t>(section)] : ends;
        Found f = find_end_aware(buf, scan_from, markers, final);
        if (!f.found) {
            scan_from = f.safe;
            return false;
        }
        close_section(f.pos, f.pos + f.marker->text.size(), f.marker->action == Action::End);
        return true;
    }

    bool step_bare_json(bool final) {
        JsonValueScanner::State state = json.advance(buf);
        size_t limit = state == JsonValueScanner::State::Complete ? json.end()
                       : state == JsonValueScanner::State::Failed ? json.position()
                                                                  : k_npos;
        Found e = find_end_aware(buf, scan_from, ends, final);
        if (e.found && e.pos < limit) {
            finish_bare(e.pos);
            consume(e.marker->text.size());
            end_reply();
            return true;
        }
        if (state == JsonValueScanner::State::Complete) {
            finish_bare(json.end());
            set_mode(Mode::Text);
            return true;
        }
        if (state == JsonValueScanner::State::Failed) {
            write_text(std::string_view(buf).substr(0, json.position()));
            consume(json.position());
            bare_ok = false;
            set_mode(Mode::Text);
            return true;
        }
        if (!e.found) scan_from = e.safe;
        return false;
    }

    // A bare JSON value at the start of a reply (or after a call): a call when it
    // has the shape of one, text otherwise. `len` bytes of buf are consumed.
    void finish_bare(size_t len) {
        std::string text = buf.substr(0, len);
        consume(len);
        std::string_view t = trim(text);
        bool complete = json_value_end(t, 0) == t.size();
        if (complete && is_bare_json_call(t)) {
            parse_body(BodyKind::JsonCalls, t, "", "");
            bare_ok = bare_after_call = true;
            end_segment(text_seg);
            return;
        }
        // An unfinished value that starts like a call is a malformed call; anything else is text.
        bool call_like = false;
        if (!complete) {
            std::string_view rest = trim(t.substr(1));
            call_like = rest.substr(0, 6) == "\"name\"" || rest.substr(0, 6) == "\"type\"" ||
                        rest.substr(0, 10) == "\"function\"";
        }
        if (call_like) {
            emit_calls({ParsedCall{false, "", json::object(), "", std::string(t)}});
        } else {
            write_text(text);
        }
        bare_ok = false;
    }

    // ---- framed messages -------------------------------------------------

    static std::string strip_all(std::string s, std::string_view what) {
        for (size_t p; !what.empty() && (p = s.find(what)) != k_npos;) s.erase(p, what.size());
        return s;
    }

    // A message header: who the message is for, in which channel.
    void open_message(const std::string& header) {
        std::string h = strip_all(header, header_start);
        auto word_after = [&](std::string_view key) -> std::string {
            size_t p = h.find(key);
            if (p == k_npos) return "";
            p += key.size();
            size_t e = p;
            while (e < h.size() && !is_space(h[e]) && h[e] != '<') ++e;
            return h.substr(p, e - p);
        };
        role = Role::Text;
        tool_name.clear();
        switch (format.framing) {
            case ReplyFraming::Harmony: {
                std::string to = word_after("to=");
                std::string channel = word_after("<|channel|>");
                if (!to.empty()) {
                    role = Role::Tool;
                    tool_name = to.rfind("functions.", 0) == 0 ? to.substr(10) : to;
                    tool_body = BodyKind::JsonArgs;
                } else if (channel == "analysis") {
                    role = Role::Thinking;
                }
                break;
            }
            case ReplyFraming::Atem: {
                std::string to = word_after("to=");
                if (to == "self") {
                    role = Role::Thinking;
                } else if (!to.empty() && to != "user") {
                    role = Role::Tool;
                    tool_name = to;
                    tool_body = BodyKind::InvokeXml;
                }
                break;
            }
            case ReplyFraming::Recipients: {
                std::string to(trim(h));
                if (!to.empty() && to != "all") {
                    role = Role::Tool;
                    tool_name = to;
                    tool_body = to == "python" ? BodyKind::Code : BodyKind::JsonArgs;
                }
                break;
            }
            case ReplyFraming::Markers: break;
        }
        if (role == Role::Thinking) reasoning_from = base;
        set_mode(Mode::Body);
    }

    void close_message(size_t body_len) {
        if (role == Role::Tool) {
            std::string body = buf.substr(0, body_len);
            parse_body(tool_body, body, tool_name, "");
        } else if (role == Role::Thinking) {
            write_thinking(std::string_view(buf).substr(0, body_len));
            spans.emplace_back(reasoning_from, base + body_len);
            end_segment(think_seg);
        } else {
            write_text(std::string_view(buf).substr(0, body_len));
            end_segment(text_seg);
        }
    }

    // Header text left when the reply ends: text a model wrote without a header.
    void header_residue(std::string_view residue) {
        if (format.framing == ReplyFraming::Recipients) return;
        std::string h = strip_all(std::string(residue), header_start);
        std::string_view t = trim(h);
        if (t.rfind("assistant", 0) == 0) t = trim(t.substr(9));
        if (!t.empty() && t.find("<|") == std::string_view::npos) {
            write_text(t);
            end_segment(text_seg);
        }
    }

    bool step_header(bool final) {
        Found f = find_end_aware(buf, 0, header_markers, final);
        if (f.found && f.pos < k_max_header) {
            std::string header = buf.substr(0, f.pos);
            consume(f.pos + f.marker->text.size());
            if (f.marker->action == Action::End) {
                header_residue(header);
                end_reply();
            } else {
                open_message(header);
            }
            return true;
        }
        bool too_long = f.found || buf.size() >= k_max_header + header_end.size();
        if (too_long) {
            // Not a header after all: read the reply as text.
            role = Role::Text;
            set_mode(Mode::Body);
            return true;
        }
        return false;
    }

    bool step_body(bool final) {
        Found f = find_end_aware(buf, role == Role::Tool ? scan_from : 0, body_markers, final);
        if (!f.found) {
            if (role == Role::Tool) {
                scan_from = f.safe;
            } else {
                release(final, f.safe, role == Role::Thinking);
            }
            return false;
        }
        close_message(f.pos);
        consume(f.pos + f.marker->text.size());
        if (f.marker->action == Action::End)
            end_reply();
        else
            set_mode(Mode::Header);
        return true;
    }

    // ---- driver ----------------------------------------------------------

    bool step(bool final) {
        switch (mode) {
            case Mode::Text: return step_text(final);
            case Mode::Reasoning: return step_reasoning(final);
            case Mode::Section: return step_section(final);
            case Mode::BareJson: return step_bare_json(final);
            case Mode::Header: return step_header(final);
            case Mode::Body: return step_body(final);
            case Mode::Done: return false;
        }
        return false;
    }

    void process(bool final) {
        while (!done && step(final)) {
        }
        if (!final && !done) stream_calls();
    }

    // What is left when the reply ends, by mode.
    void flush() {
        switch (mode) {
            case Mode::Section: {
                const SectionSpec& s = sections[static_cast<size_t>(section)];
                std::string body = buf.substr(0, buf.size() - trailing_end_prefix());
                // An unclosed call whose body parses is still a call (the end of
                // the reply closes it); one that does not is reported.
                parse_body(s.body, body, s.name, s.open);
                break;
            }
            case Mode::BareJson: finish_bare(buf.size()); break;
            case Mode::Header: header_residue(buf); break;
            case Mode::Body:
                if (role == Role::Tool) close_message(buf.size() - trailing_end_prefix());
                break;
            default: break;
        }
        if (mode == Mode::Reasoning || (mode == Mode::Body && role == Role::Thinking))
            spans.emplace_back(reasoning_from, base + buf.size());
        base += buf.size();
        buf.clear();
        end_segment(text_seg);
        end_segment(think_seg);
        set_mode(Mode::Done);
    }

    // Pushes whose text overlaps a reasoning range (an empty push counts when it
    // falls inside one). Ranges are in order and do not overlap.
    int reasoning_tokens() const {
        int count = 0;
        size_t prev = 0, s = 0;
        for (size_t end : push_ends) {
            while (s < spans.size() && spans[s].second <= prev) ++s;
            if (s < spans.size() && (end > prev ? spans[s].first < end : spans[s].first <= prev)) ++count;
            prev = std::max(prev, end);
        }
        return count;
    }
};

ReplyParser::ReplyParser(ChatFormat format, ReplyOptions options)
    : impl_(std::make_unique<Impl>(std::move(format), std::move(options))) {}
ReplyParser::~ReplyParser() = default;
ReplyParser::ReplyParser(ReplyParser&&) noexcept = default;
ReplyParser& ReplyParser::operator=(ReplyParser&&) noexcept = default;

std::vector<ReplyEvent> ReplyParser::push(std::string_view delta) {
    std::vector<ReplyEvent> events;
    Impl& p = *impl_;
    if (p.finished) return events;
    p.push_ends.push_back(p.base + p.buf.size() + delta.size());
    if (p.done) {
        p.base += delta.size();
        return events;
    }
    p.out = &events;
    p.buf.append(delta);
    p.process(false);
    p.out = nullptr;
    return events;
}

std::vector<ReplyEvent> ReplyParser::finish(ReplyFinish finish, Usage usage) {
    std::vector<ReplyEvent> events;
    Impl& p = *impl_;
    if (p.finished) return events;
    p.out = &events;
    if (!p.done) {
        p.process(true);
        p.flush();
    }
    p.finished = true;
    if (finish == ReplyFinish::Cancelled && p.done) finish = ReplyFinish::Stop;
    if (finish == ReplyFinish::Stop && !p.message.tool_calls.empty()) finish = ReplyFinish::ToolCalls;
    usage.reasoning_tokens = p.reasoning_tokens();
    events.push_back(ReplyEnd{finish, usage, p.ended_by_stop});
    p.out = nullptr;
    return events;
}

bool ReplyParser::done() const { return impl_->done; }
const ReplyMessage& ReplyParser::message() const { return impl_->message; }
const ChatFormat& ReplyParser::format() const { return impl_->format; }

std::vector<ReplyEvent> parse_reply(const ChatFormat& format, std::string_view text, ReplyOptions options,
                                    ReplyFinish finish, Usage usage) {
    ReplyParser parser(format, std::move(options));
    std::vector<ReplyEvent> events = parser.push(text);
    for (ReplyEvent& e : parser.finish(finish, usage)) events.push_back(std::move(e));
    return events;
}

}  // namespace kiln
