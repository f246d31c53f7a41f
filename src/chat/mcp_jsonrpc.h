// The Model Context Protocol's messages as kiln reads them: JSON-RPC 2.0 lines
// from an untrusted server (framing, message shape, the results kiln asks for).
// Everything that does not have the expected shape is a kiln::Error naming the
// field; nothing here touches a process (fuzz/fuzz_mcp.cpp feeds it bytes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/mcp.h"

namespace kiln::mcp {

// The newest protocol revision kiln speaks, sent in initialize; the server may
// answer with any of k_protocol_versions.
inline constexpr const char* k_protocol_version = "2025-06-18";
inline constexpr const char* k_protocol_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18"};

// Splits a byte stream into lines ('\n', a trailing '\r' dropped, blank lines
// skipped). A line longer than max_line bytes is an error: a server cannot make
// kiln buffer without bound.
class LineReader {
public:
    explicit LineReader(size_t max_line = size_t{64} << 20) : max_line_(max_line) {}
    std::vector<std::string> push(std::string_view bytes);
    size_t buffered() const { return partial_.size(); }

private:
    size_t max_line_;
    std::string partial_;
};

enum class MessageKind { Request, Notification, Response, ErrorResponse };

struct Message {
    MessageKind kind = MessageKind::Notification;
    // The id of a request or a response; kiln's requests use integers, so a
    // response with a string id answers none of them (nullopt).
    std::optional<int64_t> id;
    nlohmann::json raw_id;  // as sent (answers to server requests echo it)
    std::string method;     // requests and notifications
    nlohmann::json params;  // requests and notifications (may be null)
    nlohmann::json result;  // responses
    int64_t error_code = 0;  // error responses
    std::string error_message;
};

// One line: a JSON object with "jsonrpc": "2.0" and the members of one of the
// four kinds. Throws kiln::Error ("malformed JSON-RPC message: ...").
Message parse_message(std::string_view line);

struct ServerInit {
    std::string protocol_version;
    std::string name;  // serverInfo.name (may be empty)
    bool tools = false, resources = false, prompts = false;  // capabilities offered
};
ServerInit parse_initialize(const nlohmann::json& result);

// One page of a list; the cursor of the next page, or empty.
std::string parse_tools_page(const nlohmann::json& result, std::vector<McpTool>& out);
std::string parse_resources_page(const nlohmann::json& result, std::vector<McpResource>& out);
std::string parse_prompts_page(const nlohmann::json& result, std::vector<McpPrompt>& out);

// A tools/call result: its content items as text, isError as an error result.
ToolResult parse_call_result(const nlohmann::json& result);
// A resources/read result's contents, a prompts/get result's messages, as text.
ToolResult parse_read_result(const nlohmann::json& result);
ToolResult parse_prompt_result(const nlohmann::json& result);

}  // namespace kiln::mcp
