// Strict reading of request fields: a known field with the wrong type or an
// out-of-range value is a 400 that names it (llama-server's warn-and-default
// turns mistakes into silent wrong behaviour); unknown fields are ignored, as
// OpenAI does. A null value counts as absent.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api_error.h"

namespace kiln::server {

using Json = nlohmann::ordered_json;  // keeps the client's key order (a schema's properties, tools' parameters)

// The body as a JSON object (400 on malformed JSON or another type).
Json parse_body(const std::string& body);

const Json* field(const Json& obj, const std::string& name);  // null when absent or null

std::optional<bool> get_bool(const Json& obj, const std::string& name);
std::optional<std::string> get_string(const Json& obj, const std::string& name);
// Integers; `name` as written in errors can be a path ("stream_options.include_usage").
std::optional<long long> get_int(const Json& obj, const std::string& name, long long lo, long long hi);
std::optional<double> get_number(const Json& obj, const std::string& name, double lo, double hi);
// A string or an array of strings (stop).
std::vector<std::string> get_strings(const Json& obj, const std::string& name, size_t max_count);
// An object (may be empty); nullptr when absent.
const Json* get_object(const Json& obj, const std::string& name);
const Json* get_array(const Json& obj, const std::string& name);
// The "type" of a content block or tool: "" when `obj` is not an object or has
// no type; a 400 naming `where`.type when the type is not a string.
std::string block_type(const Json& obj, const std::string& where);
// A tool written flat, {"name", "description", SCHEMA_KEY: {...}} (Responses'
// "parameters", Anthropic's "input_schema"), as a chat-completions function
// tool; a 400 naming `where`.name when the name is missing.
Json flat_function_tool(const Json& tool, const std::string& where, const char* schema_key);

}  // namespace kiln::server
