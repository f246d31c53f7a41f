// Value readers for tool-call bodies: JSON in the shapes models write, Python
// literals (pythonic calls), Gemma 4's argument syntax, and XML parameter text
// typed by the tool's schema. Every reader bounds its nesting depth and reports
// failure instead of throwing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kiln::reply_detail {

// Nesting bound for every value reader: model output is untrusted, and deep
// nesting would otherwise recurse without limit when values are built or freed.
constexpr int k_max_depth = 64;

// Finds where one JSON object or array ends in text that arrives piece by piece.
// Call advance() with the whole text so far (it resumes where it stopped).
class JsonValueScanner {
public:
    enum class State { Scanning, Complete, Failed };
    // `start`: where the value may begin (whitespace before it is skipped).
    void reset(size_t start = 0);
    State advance(std::string_view text);
    size_t end() const { return end_; }  // one past the value, once Complete
    size_t position() const { return pos_; }
    bool started() const { return depth_ > 0 || state_ == State::Complete; }

private:
    size_t pos_ = 0;
    size_t end_ = 0;
    int depth_ = 0;
    bool in_string_ = false;
    bool escape_ = false;
    State state_ = State::Scanning;
};

// One past the end of the JSON value (object, array, string, number, literal)
// starting at `start` (no leading whitespace); npos when incomplete or not JSON.
size_t json_value_end(std::string_view text, size_t start);

// Parses JSON text (whole, surrounding whitespace allowed); nullopt when invalid
// or nested deeper than k_max_depth.
std::optional<nlohmann::json> parse_json(std::string_view text);

// Removes a ```json … ``` (or ``` … ```) fence around a body, if there is one.
std::string_view strip_code_fence(std::string_view text);

std::string_view trim(std::string_view s);
bool is_space(char c);

// A call read from a body: ok with name and arguments (and the model's own id if
// it wrote one), or not ok with the offending text.
struct ParsedCall {
    bool ok = false;
    std::string name;
    nlohmann::json arguments = nlohmann::json::object();
    std::string id;
    std::string error_text;
};

// Arguments as an object: an object, null (→ {}), or a string holding an object.
std::optional<nlohmann::json> normalize_arguments(const nlohmann::json& value);

// Reads a call object in the shapes models write: {"name", "arguments" | "parameters"},
// {"function": "name", …}, {"function": {"name", "arguments"}} (OpenAI), {"tool_name",
// "parameters"} (Cohere); an "id" string is kept.
ParsedCall read_call_object(const nlohmann::json& value, std::string_view text);

// Python literal (strings, numbers, True/False/None, lists, tuples, dicts) at `pos`;
// advances `pos`. Used for pythonic calls (LFM2) and Llama's builtin-tool calls.
bool parse_python_value(std::string_view s, size_t& pos, nlohmann::json& out, int depth = 0);
// name(key=value, …) at `pos`; `name` may contain dots.
bool parse_python_call(std::string_view s, size_t& pos, std::string& name, nlohmann::json& args);

// Gemma 4 argument syntax: {key:<|"|>text<|"|>,n:1,flag:true,obj:{…},list:[…]}.
bool parse_gemma4_value(std::string_view s, size_t& pos, nlohmann::json& out, int depth = 0);

// The schema of a tool's parameter in OpenAI tool definitions; nullptr if unknown.
const nlohmann::json* parameter_schema(const nlohmann::json& tools, std::string_view function,
                                       std::string_view parameter);

// An XML-style parameter's text as a JSON value. With a schema: a string
// parameter stays text, any other type is parsed as JSON when it can be. Without
// one: text that reads as a JSON number, boolean, null, object or array becomes
// that value; anything else is a string.
nlohmann::json typed_value(std::string_view raw, const nlohmann::json* schema);

// Replaces &amp; &quot; &lt; &gt; &apos; (attribute values of XML-like syntaxes).
std::string xml_unescape(std::string_view s);

}  // namespace kiln::reply_detail
