// Tool-call bodies: the text between a syntax's markers, read whole once the
// stream parser has buffered it. One reader per body shape.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/reply_values.h"

namespace kiln::reply_detail {

enum class BodyKind {
    JsonCalls,     // one call object, a list of them, or several in a row (fences allowed)
    MistralArgs,   // NAME[ARGS]{…}, NAME[CALL_ID]id[ARGS]{…}, or a JSON list
    PythonTag,     // Llama <|python_tag|>: a JSON call, name.call(key="value"), or code
    FunctionTag,   // NAME>{…}   (after <function=)
    Pythonic,      // [name(key='value'), …]
    Gemma4,        // call:NAME{key:value,…}
    QwenXml,       // <function=NAME><parameter=KEY>value</parameter>…</function>
    GlmXml,        // NAME<arg_key>KEY</arg_key><arg_value>value</arg_value>…
    InvokeXml,     // <PREFIXinvoke name="NAME"><PREFIXparameter name="KEY" [string="true"]>value</…>
    KimiXtml,      // <|open|>call tool="NAME"<|sep|><|open|>argument key=… type=…<|sep|>value<|close|>argument<|sep|>…
    KimiSections,  // <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>…
    DeepSeek,      // <｜tool▁call▁begin｜>[function<｜tool▁sep｜>NAME\n```json\n{…}\n```|NAME<｜tool▁sep｜>{…}]<｜tool▁call▁end｜>…
    JsonArgs,      // the arguments object alone; the name comes from a message header
    Code,          // raw code for a code-interpreter tool: {"code": body}
};

struct BodyContext {
    const nlohmann::json* tools = nullptr;  // OpenAI tool definitions (parameter types)
    std::string name;                       // JsonArgs / Code: the tool's name
};

// Every call in the body, in order; malformed ones come back not ok with their text.
std::vector<ParsedCall> parse_tool_body(BodyKind kind, std::string_view body, const BodyContext& context);

// Whether a complete JSON text at the start of a reply is a tool call (Llama 3.x
// writes calls as bare JSON): an object with a name and arguments / parameters.
bool is_bare_json_call(std::string_view text);

}  // namespace kiln::reply_detail
