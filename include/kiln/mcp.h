// A Model Context Protocol client over stdio (docs/agent.md): kiln starts the
// server as a child process (no shell), speaks JSON-RPC 2.0 over its stdin and
// stdout, one message a line, and offers its tools (and its resources and
// prompts, as two more tools) to the agent loop of kiln/agent.h.
//
//   auto server = std::make_shared<kiln::McpClient>(
//       kiln::McpServerConfig{.name = "calc", .argv = kiln::split_command_line("python3 calc.py")},
//       std::chrono::seconds(60));
//   kiln::ToolSet tools;
//   for (const std::string& warning : kiln::add_mcp_tools(tools, server)) log(warning);
//
// Every failure of a server — it cannot start, exits, hangs past the timeout,
// writes malformed JSON, answers with a JSON-RPC error — is a kiln::Error naming
// the server and what happened (with the tail of its stderr); as a tool call it
// becomes an error result for the model, and the server stays usable if it lives.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/agent.h"

namespace kiln {

// Splits a command line into arguments as a POSIX shell does, without running
// one: blanks separate words; '...' is literal; "..." is literal except \" \\ \$
// \` and \newline; a backslash outside quotes escapes the next character. Nothing
// is expanded ($VAR, ~, *, ;, |, > are ordinary characters). Throws kiln::Error
// for an unterminated quote or an empty command.
std::vector<std::string> split_command_line(std::string_view text);

struct McpServerConfig {
    std::string name;                        // shown to the user; empty: the server's own name
    std::vector<std::string> argv;           // argv[0] is looked up in PATH
    std::map<std::string, std::string> env;  // added to (or replacing in) kiln's environment
    std::string cwd;                         // empty: kiln's
    std::vector<std::string> allow;          // tools that run without asking; "*": all
};

// The config file (JSON), the shape other MCP clients use:
//   {"mcpServers": {"calc": {"command": "python3", "args": ["calc.py"],
//                            "env": {"K": "V"}, "cwd": "dir", "allow": ["add"]}}}
// A relative cwd is taken from the config file's folder. Unknown keys and wrong
// types are errors naming the file and the key.
std::vector<McpServerConfig> load_mcp_config(const std::string& path);
// The servers object itself ({"calc": {"command": ...}, ...}, in its order), as the
// config file's "mcp_servers" gives it: errors start with where_prefix ("FILE:
// mcp_servers"); a relative cwd is taken from base_dir.
std::vector<McpServerConfig> parse_mcp_servers(const nlohmann::ordered_json& servers, const std::string& where_prefix,
                                               const std::string& base_dir);

struct McpTool {
    std::string name, description;
    nlohmann::ordered_json input_schema;
};
struct McpResource {
    std::string uri, name, description, mime_type;
};
struct McpPrompt {
    std::string name, description;
    std::vector<std::pair<std::string, bool>> arguments;  // name, required
};

// One server. Not thread-safe: one call at a time (the agent loop runs calls in order).
class McpClient {
public:
    // Starts the server and runs the handshake (initialize, notifications/
    // initialized) and the lists it offers (tools/list, resources/list,
    // prompts/list, following nextCursor), each answer awaited at most `timeout`.
    // Throws kiln::Error naming the server (the child is reaped).
    McpClient(McpServerConfig config, std::chrono::milliseconds timeout);
    // Closes the server's stdin, gives it a moment to exit, then SIGTERM and
    // SIGKILL; the child is always reaped.
    ~McpClient();
    McpClient(const McpClient&) = delete;
    McpClient& operator=(const McpClient&) = delete;

    const std::string& name() const;
    // Renames it (before add_mcp_tools: two servers that call themselves the same).
    void set_name(std::string name);
    const McpServerConfig& config() const;
    const std::string& protocol_version() const;  // what the server answered
    const std::vector<McpTool>& tools() const;
    const std::vector<McpResource>& resources() const;
    const std::vector<McpPrompt>& prompts() const;
    bool offers_resources() const;
    bool offers_prompts() const;
    bool running();              // false once it has exited
    std::string state();         // "running", "exited with status 1", "killed by signal 9"
    bool allowed(std::string_view tool) const;  // in the config's allow list

    // tools/call: the result's content as text (isError: an error result). A
    // JSON-RPC error, a timeout (the request is then cancelled with
    // notifications/cancelled), malformed JSON or an exit throws kiln::Error.
    ToolResult call_tool(const std::string& tool, const nlohmann::json& arguments, std::chrono::milliseconds timeout,
                         const std::atomic<bool>* cancel = nullptr);
    ToolResult read_resource(const std::string& uri, std::chrono::milliseconds timeout,
                             const std::atomic<bool>* cancel = nullptr);
    ToolResult get_prompt(const std::string& prompt, const nlohmann::json& arguments, std::chrono::milliseconds timeout,
                          const std::atomic<bool>* cancel = nullptr);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Adds the server's tools to `set` (each needing approval unless allowed), and
// "<server>_read_resource" / "<server>_get_prompt" where it offers resources /
// prompts. A name already taken is prefixed "<server>_". Returns a warning for
// each tool that could not be offered (its schema cannot be checked, a bad name).
std::vector<std::string> add_mcp_tools(ToolSet& set, std::shared_ptr<McpClient> client);

}  // namespace kiln
