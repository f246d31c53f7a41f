// Tools of `kiln chat` (chat_tools.h).
#include "chat_tools.h"

#include <iostream>

#include "common.h"
#include "kiln/error.h"

namespace kiln::cli {

void ChatToolFlags::add_to(CLI::App& app) {
    app.add_option("--tools", tools_file, "a JSON file with OpenAI tool definitions; you type each tool's result");
    app.add_option("--skills-dir", skills_dir,
                   "a folder of skills (each a folder with a SKILL.md); the model may read them through one tool");
    app.add_option("--mcp", mcp,
                   "an MCP server to start, as a command line split like a shell does but never run through one "
                   "(repeatable)");
    app.add_option("--mcp-config", mcp_config, "a JSON file listing MCP servers: {\"mcpServers\": {...}} (docs/agent.md)");
    app.add_flag("--yes", yes, "run every tool call without asking");
    app.add_option("--tool-timeout", tool_timeout, "seconds an MCP server may take to answer (default 60)")
        ->check(CLI::Range(0.1, 86400.0));
    app.add_option("--max-steps", max_steps, "model replies per turn while it calls tools (default 8)")
        ->check(CLI::Range(1, 1000));
}

ChatTools::ChatTools(const ChatToolFlags& flags)
    : timeout_(static_cast<long long>(flags.tool_timeout * 1000)), yes_(flags.yes) {
    if (!flags.tools_file.empty()) {
        const nlohmann::json defs = nlohmann::json::parse(read_text_file(flags.tools_file), nullptr, false);
        if (!defs.is_array()) throw Error(flags.tools_file + ": expected a JSON array of tool definitions");
        for (size_t i = 0; i < defs.size(); ++i) {
            const nlohmann::json& d = defs[i];
            const std::string where = flags.tools_file + ": [" + std::to_string(i) + "]";
            if (!d.is_object() || !d.contains("function") || !d["function"].is_object() ||
                !d["function"].value("name", nlohmann::json()).is_string())
                throw Error(where + ": expected {\"type\": \"function\", \"function\": {\"name\", ...}}");
            const nlohmann::json& f = d["function"];
            AgentTool t;
            t.name = f["name"].get<std::string>();
            t.description = f.value("description", "");
            if (f.contains("parameters")) t.parameters = nlohmann::ordered_json::parse(f["parameters"].dump());
            t.origin = flags.tools_file;
            t.handler = [](const nlohmann::json&, const ToolInvocation&) -> ToolResult {
                std::string result;
                std::fprintf(stderr, "result: ");
                if (!std::getline(std::cin, result)) return {"no result (end of input)", true};
                return {result};
            };
            try {
                set_.add(std::move(t));
            } catch (const Error& e) {
                throw Error(where + ": " + e.what());
            }
        }
    }
    if (!flags.skills_dir.empty()) set_.add(skills_tool(load_skills(flags.skills_dir)));
    // Flags > KILN_MCP_CONFIG > the config file's mcp_servers.
    std::vector<McpServerConfig> configs;
    if (flags.mcp_config.empty() && flags.mcp.empty()) configs = configured_mcp_servers(config());
    if (!flags.mcp_config.empty()) configs = load_mcp_config(flags.mcp_config);
    for (const std::string& line : flags.mcp) {
        McpServerConfig c;
        c.argv = split_command_line(line);
        configs.push_back(std::move(c));
    }
    for (McpServerConfig& c : configs) {
        try {
            auto client = std::make_shared<McpClient>(std::move(c), timeout_);
            // Two servers of one name (the same program twice): the later ones get -2, -3, ...
            const std::string base = client->name();
            for (int n = 2;; ++n) {
                bool taken = false;
                for (const auto& s : servers_) taken = taken || s->name() == client->name();
                if (!taken) break;
                client->set_name(base + "-" + std::to_string(n));
            }
            for (const std::string& w : add_mcp_tools(set_, client)) std::fprintf(stderr, "warning: %s\n", w.c_str());
            servers_.push_back(std::move(client));
        } catch (const Error& e) {
            std::fprintf(stderr, "warning: %s; going on without it\n", e.what());
        }
    }
}

bool ChatTools::approve(const ToolCall& call, const AgentTool& tool) {
    if (yes_) return true;
    if (always_.count(tool.name)) return true;
    std::fprintf(stderr, "run %s %s (%s)? [y]es, [n]o, [a]lways for this tool: ", tool.name.c_str(),
                 call.arguments.dump().c_str(), tool.origin.c_str());
    std::fflush(stderr);
    std::string answer;
    if (!std::getline(std::cin, answer)) {
        std::fprintf(stderr, "\n(end of input: declined)\n");
        return false;
    }
    if (answer == "a" || answer == "always") {
        always_.insert(tool.name);
        return true;
    }
    return answer == "y" || answer == "yes";
}

void ChatTools::list(std::FILE* out) {
    if (set_.empty()) std::fprintf(out, "no tools are offered\n");
    for (const AgentTool* t : set_.tools()) {
        std::string desc = t->description.substr(0, t->description.find('\n'));
        if (desc.size() > 70) desc = desc.substr(0, 67) + "...";
        const char* asks = t->needs_approval && !yes_ && !always_.count(t->name) ? ", asks first" : "";
        std::fprintf(out, "  %-20s %s%s: %s\n", t->name.c_str(), t->origin.c_str(), asks, desc.c_str());
    }
    for (const auto& s : servers_) {
        std::string cmd;
        for (const std::string& a : s->config().argv) cmd += (cmd.empty() ? "" : " ") + a;
        std::fprintf(out, "MCP server '%s' (%s): %s, protocol %s, %zu tools, %zu resources, %zu prompts\n",
                     s->name().c_str(), cmd.c_str(), s->state().c_str(), s->protocol_version().c_str(),
                     s->tools().size(), s->resources().size(), s->prompts().size());
    }
}

void ChatTools::report_exits(std::FILE* out) {
    for (const auto& s : servers_) {
        if (reported_exits_.count(s->name()) || s->running()) continue;
        reported_exits_.insert(s->name());
        std::fprintf(out, "MCP server '%s' %s; its tools now answer with errors\n", s->name().c_str(),
                     s->state().c_str());
    }
}

}  // namespace kiln::cli
