// The tools of `kiln chat`: OpenAI definitions whose results the user types
// (--tools), a skills folder (--skills-dir), MCP servers (--mcp, --mcp-config),
// and the approval prompt shown before an MCP tool runs (--yes approves all).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/agent.h"
#include "kiln/mcp.h"

namespace kiln::cli {

struct ChatToolFlags {
    std::string tools_file, skills_dir, mcp_config;
    std::vector<std::string> mcp;
    bool yes = false;
    double tool_timeout = 60;  // seconds
    int max_steps = 8;

    void add_to(CLI::App& app);
};

class ChatTools {
public:
    // Starts the MCP servers; one that fails to start (or a tool that cannot be
    // offered) is a message on stderr, and the chat goes on without it.
    explicit ChatTools(const ChatToolFlags& flags);

    const ToolSet& set() const { return set_; }
    std::chrono::milliseconds timeout() const { return timeout_; }
    // Asks on stderr, reads the answer from stdin: y, n, or a (always, this tool).
    bool approve(const ToolCall& call, const AgentTool& tool);
    // /tools: every tool offered, and the servers with their state.
    void list(std::FILE* out);
    // A message for each server that has exited since the last check.
    void report_exits(std::FILE* out);

private:
    ToolSet set_;
    std::vector<std::shared_ptr<McpClient>> servers_;
    std::set<std::string> reported_exits_, always_;
    std::chrono::milliseconds timeout_;
    bool yes_ = false;
};

}  // namespace kiln::cli
