// How a model family writes its replies: where reasoning starts and ends, how it
// spells a tool call, which markers end its turn. Found from the chat template's
// text (and the vocabulary), never from the model's name.
//
//   auto format = kiln::detect_chat_format(template_source, [&](std::string_view s) {
//       return vocab.has_token(s);   // is this marker one token of the vocabulary?
//   });
//   if (format.can_disable_thinking()) ...   // render with enable_thinking / thinking = false
//   std::puts(kiln::describe_chat_format(format).c_str());   // kiln template FILE --capabilities
//
// Markers are matched on text, so a marker the tokenizer spells as several tokens
// is found all the same. See docs/chat_formats.md for every format and the table of
// templates.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class ReasoningSyntax {
    None,
    Tags,      // an opening and a closing marker: <think> … </think>, <|channel>thought … <channel|>, [THINK] …
    Channels,  // message-framed replies where a channel or recipient names the reasoning (GPT-OSS analysis)
};

// Tool-call syntaxes, most specific first (the order detection tries them in).
enum class ToolSyntax {
    None,
    GptOss,          // <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
    Atem,            // <|start|>assistant to=NAME<|message|><atem:function_calls><atem:invoke name=…>
    KimiXtml,        // <|open|>call tool="NAME"<|sep|><|open|>argument key=… type=…<|sep|>…
    Gemma4,          // <|tool_call>call:NAME{key:<|"|>value<|"|>}<tool_call|>
    InvokeXml,       // <minimax:tool_call> / <｜DSML｜function_calls>: <invoke name=…><parameter name=…>
    QwenXml,         // <tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>
    FunctionaryV31,  // <function=NAME>{…}</function>, <|python_tag|>code
    GlmXml,          // <tool_call>NAME<arg_key>KEY</arg_key><arg_value>value</arg_value></tool_call>
    Kimi,            // <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}
    DeepSeek,        // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>…<｜tool▁sep｜>…<｜tool▁call▁end｜>
    Pythonic,        // <|tool_call_start|>[name(key='value')]<|tool_call_end|>  (LFM2)
    MistralArgs,     // [TOOL_CALLS]NAME[ARGS]{…}  (optionally [CALL_ID]id before [ARGS])
    MistralJson,     // [TOOL_CALLS][{"name": …, "arguments": {…}}]
    TaggedJson,      // OPEN{…}CLOSE or OPEN[{…}, …]CLOSE with a family's own tags (<TOOLCALL>, <tool_calls>, …)
    Granite,         // <|tool_call|>[{…}]  (no closing marker: the JSON ends the call)
    FunctionaryV32,  // >>>NAME\n{…}  (recipient-framed; >>>all\n is text)
    Firefunction,    // functools[{…}]
    GigaChat,        // function call<|role_sep|>\n{…}
    CommandR,        // Action:\n```json\n[{"tool_name": …, "parameters": {…}}]\n```
    Hermes,          // <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>
    Llama3,          // bare {"name": …, "parameters": {…}} at the start of the reply; <|python_tag|>
};

// How the reply text is framed. Most families write plain text with markers;
// three write a sequence of messages whose headers name a channel or recipient.
enum class ReplyFraming {
    Markers,     // plain text with reasoning / tool-call markers
    Harmony,     // GPT-OSS: <|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…
    Atem,        // Muse Glimmer: to=self<|message|>…<|eom|><|start|>assistant to=user<|message|>…
    Recipients,  // Functionary v3.2: all\n…>>>NAME\n{…}
};

enum class ToolCallIdStyle {
    OpenAi,  // call_ + 24 letters and digits
    Alnum9,  // 9 letters and digits: Mistral templates refuse any other id
};

struct ReasoningFormat {
    ReasoningSyntax syntax = ReasoningSyntax::None;
    // Tags: the markers. `open` is empty when a reply always starts inside the
    // reasoning (Apriel: reasoning, then [BEGIN FINAL RESPONSE]). Channels: the
    // header and end of a reasoning message, for display only.
    std::string open;
    std::string close;
    // The template's generation prompt can end with `open`: generation then starts
    // inside the block. Whether a given prompt does is prompt_opens_thinking().
    bool prompt_can_open = false;
    // The template reads enable_thinking or thinking (and does not overwrite it).
    bool can_disable = false;
    // Both markers are single tokens of the vocabulary (false when unknown).
    bool single_tokens = false;
};

struct ToolFormat {
    ToolSyntax syntax = ToolSyntax::None;
    std::string open;   // marker that starts a call or a block of calls
    std::string close;  // marker that ends it; empty when the call ends itself (JSON) or ends the reply
    bool single_tokens = false;  // `open` is one token of the vocabulary
};

struct ChatFormat {
    ReplyFraming framing = ReplyFraming::Markers;
    ReasoningFormat reasoning;
    ToolFormat tools;
    // End-of-turn markers the template writes after an assistant message: they end
    // a reply and never reach its text.
    std::vector<std::string> end_markers;
    // Wrappers some families put around the answer (<response>, <|START_RESPONSE|>):
    // dropped from the text.
    std::vector<std::string> wrapper_markers;
    ToolCallIdStyle id_style = ToolCallIdStyle::OpenAi;

    bool has_reasoning() const { return reasoning.syntax != ReasoningSyntax::None; }
    bool can_disable_thinking() const { return has_reasoning() && reasoning.can_disable; }
    bool has_tools() const { return tools.syntax != ToolSyntax::None; }
};

std::string_view reasoning_syntax_name(ReasoningSyntax syntax);  // "none", "tags", "channels"
std::string_view tool_syntax_name(ToolSyntax syntax);            // "none", "gpt-oss", "qwen-xml", ...
std::string_view reply_framing_name(ReplyFraming framing);       // "markers", "harmony", ...

// Detects the format from the template source. `vocab_has_token` (may be empty)
// says whether a string is one token of the model's vocabulary: it marks markers
// as single tokens and lets a vocabulary with <think> / </think> give reasoning
// to a template that does not mention it. Never throws on any input.
ChatFormat detect_chat_format(std::string_view template_source,
                              const std::function<bool(std::string_view)>& vocab_has_token = nullptr);

// Convenience: the same with a list of the vocabulary's special-token strings.
ChatFormat detect_chat_format(std::string_view template_source, const std::vector<std::string>& special_tokens);

// True when generation starts inside a reasoning block for this rendered prompt:
// the prompt ends (ignoring trailing whitespace) with the opening marker, or the
// family always starts inside (empty opening marker). Pass the result to
// ReplyOptions::starts_in_thinking.
bool prompt_opens_thinking(const ChatFormat& format, std::string_view rendered_prompt);

// The capabilities report printed by `kiln template FILE --capabilities`:
// reasoning markers, tool syntax and markers, end markers, one item per line.
std::string describe_chat_format(const ChatFormat& format);

}  // namespace kiln
