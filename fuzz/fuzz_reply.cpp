// libFuzzer target for format detection and the reply parser. Any template and
// any reply must detect and parse without crashing or hanging, and the events
// must not depend on how the reply is split into deltas: the whole reply and
// the same reply in pieces are compared, and a difference aborts.
//
// Input: byte 0 picks a family (its low 7 bits: a small template that selects
// its syntax; 0x7F: custom, the rest is TEMPLATE '\0' REPLY) and whether
// generation starts inside reasoning (bit 7); the rest is the reply.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/reply.h"

namespace {

// Template text that makes detection pick each syntax (see docs/chat_formats.md).
const char* const k_families[] = {
    "<think></think><tool_call>",
    "<|channel|><|message|> functions. <|call|>",
    "<|start|><|message|><atem:function_calls> to=",
    "<|open|>{{ x('think') }}{{ x('tools') }}<|close|><|sep|><|end_of_msg|>",
    "<|tool_call><|channel><turn|>",
    "｜DSML｜function_calls> <think>",
    "<minimax:tool_call><think>[e~[",
    "<seed:tool_call><seed:think><function=<parameter=",
    "<tool_call><function=<parameter=<think><|im_end|>",
    "<function=<|python_tag|><|eot_id|><|eom_id|>",
    "<arg_key><think><|observation|>",
    "<|tool_calls_section_begin|><think><|im_end|>",
    "<｜tool▁calls▁begin｜><think><｜end▁of▁sentence｜>",
    "<|tool_call_start|><think>",
    "[TOOL_CALLS][ARGS][THINK][/THINK]",
    "[TOOL_CALLS]",
    "<|START_ACTION|><|START_THINKING|><|START_RESPONSE|><|END_OF_TURN_TOKEN|>",
    "<|tool_call|><|/tool_call|><|end|>",
    "<|tool_call|><response></response><think><|end_of_text|>",
    "<TOOLCALL><think><SPECIAL_12>",
    "<tool_calls>[BEGIN FINAL RESPONSE][END FINAL RESPONSE]<|end|>",
    "functools[",
    "function call<|role_sep|>",
    "Action: tool_name",
    "<|python_tag|>\"parameters\"<|eot_id|>",
    ">>>all<|eot_id|>",
};
constexpr size_t k_family_count = sizeof(k_families) / sizeof(k_families[0]);

// Whole-reply events with adjacent deltas of one kind joined; usage left out.
std::string canonical(const std::vector<kiln::ReplyEvent>& events) {
    std::string out;
    char last = 0;
    for (const kiln::ReplyEvent& e : events) {
        if (auto* t = std::get_if<kiln::TextDelta>(&e)) {
            if (last != 't') out += "\n[text]";
            out += t->text;
            last = 't';
        } else if (auto* th = std::get_if<kiln::ThinkingDelta>(&e)) {
            if (last != 'h') out += "\n[thinking]";
            out += th->text;
            last = 'h';
        } else if (std::holds_alternative<kiln::ToolCallStart>(e) || std::holds_alternative<kiln::ToolCallArguments>(e)) {
            continue;  // when a call is announced depends on the split; run() checks the pieces
        } else {
            last = 0;
            if (auto* c = std::get_if<kiln::ToolCall>(&e))
                out += "\n[call]" + c->id + " " + c->name + " " + c->arguments.dump() + " " + c->arguments_text;
            else if (auto* err = std::get_if<kiln::ReplyError>(&e))
                out += "\n[error]" + err->message;
            else if (auto* end = std::get_if<kiln::ReplyEnd>(&e))
                out += "\n[end]" + std::string(kiln::reply_finish_name(end->finish));
        }
    }
    return out;
}

std::string run(const kiln::ChatFormat& f, const kiln::ReplyOptions& o, std::string_view reply, size_t step) {
    kiln::ReplyParser p(f, o);
    std::vector<kiln::ReplyEvent> all;
    for (size_t i = 0; i < reply.size(); i += step)
        for (auto& e : p.push(reply.substr(i, step))) all.push_back(std::move(e));
    for (auto& e : p.finish(kiln::ReplyFinish::Stop)) all.push_back(std::move(e));
    // Every call: ToolCallStart, pieces, then the ToolCall whose arguments_text they join to.
    std::map<std::string, std::string> streamed;
    for (const kiln::ReplyEvent& e : all) {
        if (auto* st = std::get_if<kiln::ToolCallStart>(&e)) {
            streamed[st->id] = "";  // a model may write one id twice: the later call takes it
        } else if (auto* a = std::get_if<kiln::ToolCallArguments>(&e)) {
            auto it = streamed.find(a->id);
            if (it == streamed.end()) __builtin_trap();
            it->second += a->text;
        } else if (auto* c = std::get_if<kiln::ToolCall>(&e)) {
            (void)c->arguments.dump();  // must serialize
            auto it = streamed.find(c->id);
            if (it == streamed.end() || it->second != c->arguments_text) __builtin_trap();
        }
    }
    return canonical(all);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::string_view input(reinterpret_cast<const char*>(data), size);
    unsigned pick = static_cast<unsigned char>(input[0]);
    input.remove_prefix(1);
    std::string template_text;
    std::string_view reply = input;
    if ((pick & 0x7F) != 0x7F) {
        template_text = k_families[(pick & 0x7F) % k_family_count];
    } else {
        size_t nul = input.find('\0');
        template_text = std::string(input.substr(0, nul));
        reply = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
    }
    kiln::ChatFormat f = kiln::detect_chat_format(template_text, [](std::string_view s) { return s.size() % 3 == 0; });
    (void)kiln::describe_chat_format(f);
    kiln::ReplyOptions o;
    o.starts_in_thinking = (pick & 0x80) != 0;
    o.id_seed = 1;
    o.stop = {"###"};
    std::string whole = run(f, o, reply, reply.size() + 1);
    for (size_t step : {size_t(1), size_t(3), size_t(7)}) {
        if (step == 1 && reply.size() > 2048) continue;
        if (run(f, o, reply, step) != whole) std::abort();  // the events depend on the split
    }
    return 0;
}
