// The MCP client over stdio (kiln/mcp.h): one child process, requests written a
// line each, answers awaited with a deadline while the server's own requests and
// notifications are answered or skipped.
#include <optional>
#include <thread>

#include "chat/child_process.h"
#include "chat/mcp_jsonrpc.h"
#include "kiln/error.h"
#include "kiln/mcp.h"

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int k_max_pages = 100;  // of one list, against a server whose cursor never ends

std::string seconds_text(std::chrono::milliseconds t) {
    const double s = t.count() / 1000.0;
    char buf[32];
    std::snprintf(buf, sizeof buf, s == static_cast<long long>(s) ? "%.0f s" : "%.1f s", s);
    return buf;
}

std::string base_name(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A tool-name-safe version of a server name.
std::string safe_name(const std::string& s) {
    std::string out;
    for (char c : s)
        out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')
                   ? c
                   : '_';
    return out.substr(0, 32);
}

}  // namespace

struct McpClient::Impl {
    McpServerConfig config;
    std::optional<chat::ChildProcess> child;
    mcp::LineReader reader;
    std::vector<std::string> pending_lines;  // read but not yet handled
    int64_t next_id = 1;
    bool dead = false;  // exited, or its stream can no longer be trusted
    std::string protocol_version;
    mcp::ServerInit init;
    std::vector<McpTool> tools;
    std::vector<McpResource> resources;
    std::vector<McpPrompt> prompts;

    std::string who() const { return "MCP server '" + config.name + "'"; }

    [[noreturn]] void gone(const std::string& doing) {
        dead = true;
        // Its stdout closed: it is most likely exiting; give it a moment so that
        // the message can say how it ended.
        for (int i = 0; i < 50 && child->running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::string state = child->state();
        if (state == "running") {
            child->stop(std::chrono::milliseconds(200));
            state = "closed its output and was stopped";
        }
        std::string msg = who() + " " + state + doing;
        const std::string tail = child->stderr_tail();
        if (!tail.empty()) msg += "; its last stderr: " + tail;
        throw Error(msg, ErrorKind::Internal);
    }

    void send(const nlohmann::json& message, Clock::time_point deadline, const std::string& doing) {
        if (dead) throw Error(who() + " is not running (" + child->state() + ")", ErrorKind::Internal);
        std::string error;
        if (!child->write_all(message.dump() + "\n", deadline, error)) {
            if (!child->running() || error != "it does not read its stdin") gone(doing);
            throw Error(who() + ": " + error + doing, ErrorKind::Internal);
        }
    }

    void answer_server_request(const mcp::Message& m, Clock::time_point deadline) {
        nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", m.raw_id}};
        if (m.method == "ping")
            reply["result"] = nlohmann::json::object();
        else
            reply["error"] = {{"code", -32601}, {"message", "kiln does not offer " + m.method}};
        send(reply, deadline, "");
    }

    // Sends a request and waits for its answer. Lines of other ids (the late
    // answer of a request that timed out) are skipped.
    nlohmann::json request(const std::string& method, nlohmann::json params, std::chrono::milliseconds timeout,
                           const std::atomic<bool>* cancel) {
        const std::string doing = " (during " + method + ")";
        if (dead) throw Error(who() + " is not running (" + child->state() + ")", ErrorKind::Internal);
        const int64_t id = next_id++;
        nlohmann::json msg = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
        if (!params.is_null()) msg["params"] = std::move(params);
        const auto deadline = Clock::now() + timeout;
        send(msg, deadline, doing);
        for (;;) {
            while (!pending_lines.empty()) {
                std::string line = std::move(pending_lines.front());
                pending_lines.erase(pending_lines.begin());
                mcp::Message m;
                try {
                    m = mcp::parse_message(line);
                } catch (const Error& e) {
                    // The request fails; later lines may still be well formed.
                    throw Error(who() + " wrote " + e.what() + doing, ErrorKind::Internal);
                }
                if (m.kind == mcp::MessageKind::Request) {
                    answer_server_request(m, deadline);
                    continue;
                }
                if (m.kind == mcp::MessageKind::Notification || m.id != id) continue;
                if (m.kind == mcp::MessageKind::ErrorResponse)
                    throw Error(who() + ": " + method + " failed: " + m.error_message + " (JSON-RPC error " +
                                    std::to_string(m.error_code) + ")",
                                ErrorKind::InvalidInput);
                return m.result;
            }
            if (cancel && cancel->load()) {
                notify_cancelled(id, "cancelled by the user");
                throw Error(method + " to " + who() + " cancelled", ErrorKind::Cancelled);
            }
            // Wake at least every 100 ms to see the cancel flag.
            const auto now = Clock::now();
            if (now >= deadline) {
                notify_cancelled(id, "timed out");
                throw Error(who() + " did not answer " + method + " within " + seconds_text(timeout),
                            ErrorKind::ResourceExhausted);
            }
            std::string bytes;
            const auto slice = std::min(deadline, now + std::chrono::milliseconds(100));
            const auto status = child->read_some(bytes, slice);
            if (status == chat::ChildProcess::ReadStatus::Eof) gone(doing);
            if (!bytes.empty()) {
                try {
                    for (auto& l : reader.push(bytes)) pending_lines.push_back(std::move(l));
                } catch (const Error& e) {
                    dead = true;  // framing lost: nothing after this can be trusted
                    child->stop(std::chrono::milliseconds(200));
                    throw Error(who() + " wrote " + e.what() + doing + "; it was stopped", ErrorKind::Internal);
                }
            }
        }
    }

    void notify(const std::string& method, nlohmann::json params) {
        nlohmann::json msg = {{"jsonrpc", "2.0"}, {"method", method}};
        if (!params.is_null()) msg["params"] = std::move(params);
        send(msg, Clock::now() + std::chrono::seconds(5), " (during " + method + ")");
    }

    void notify_cancelled(int64_t id, const std::string& reason) {
        try {
            notify("notifications/cancelled", {{"requestId", id}, {"reason", reason}});
        } catch (const Error&) {
            // The request fails anyway; the next one reports a dead server.
        }
    }

    template <typename Item>
    void list(const std::string& method, std::vector<Item>& out,
              std::string (*page)(const nlohmann::json&, std::vector<Item>&), std::chrono::milliseconds timeout) {
        std::string cursor;
        for (int n = 0; n < k_max_pages; ++n) {
            nlohmann::json params = cursor.empty() ? nlohmann::json::object() : nlohmann::json{{"cursor", cursor}};
            const nlohmann::json result = request(method, params, timeout, nullptr);
            try {
                cursor = page(result, out);
            } catch (const Error& e) {
                throw Error(who() + ": " + e.what(), ErrorKind::InvalidInput);
            }
            if (cursor.empty()) return;
        }
        throw Error(who() + ": " + method + " still had pages after " + std::to_string(k_max_pages), ErrorKind::InvalidInput);
    }
};

McpClient::McpClient(McpServerConfig config, std::chrono::milliseconds timeout) : impl_(std::make_unique<Impl>()) {
    Impl& im = *impl_;
    if (config.argv.empty()) throw Error("MCP server '" + config.name + "': no command", ErrorKind::InvalidInput);
    const bool named = !config.name.empty();
    if (!named) config.name = base_name(config.argv[0]);
    im.config = std::move(config);
    try {
        im.child.emplace(im.config.argv, im.config.env, im.config.cwd);
    } catch (const Error& e) {
        throw Error("MCP server '" + im.config.name + "': " + e.what(), e.kind());
    }
    const nlohmann::json result = im.request(
        "initialize",
        {{"protocolVersion", mcp::k_protocol_version},
         {"capabilities", nlohmann::json::object()},
         {"clientInfo", {{"name", "kiln"}, {"version", "0.1.0"}}}},
        timeout, nullptr);
    try {
        im.init = mcp::parse_initialize(result);
    } catch (const Error& e) {
        throw Error(im.who() + ": " + e.what(), e.kind());
    }
    im.protocol_version = im.init.protocol_version;
    // An --mcp command line has no name of its own: the server's is better than
    // its interpreter's ("python3").
    if (!named && !safe_name(im.init.name).empty()) im.config.name = safe_name(im.init.name);
    im.notify("notifications/initialized", nullptr);
    if (im.init.tools) im.list("tools/list", im.tools, mcp::parse_tools_page, timeout);
    if (im.init.resources) im.list("resources/list", im.resources, mcp::parse_resources_page, timeout);
    if (im.init.prompts) im.list("prompts/list", im.prompts, mcp::parse_prompts_page, timeout);
}

McpClient::~McpClient() {
    if (impl_ && impl_->child) impl_->child->stop(std::chrono::milliseconds(500));
}

const std::string& McpClient::name() const { return impl_->config.name; }
void McpClient::set_name(std::string name) { impl_->config.name = std::move(name); }
const McpServerConfig& McpClient::config() const { return impl_->config; }
const std::string& McpClient::protocol_version() const { return impl_->protocol_version; }
const std::vector<McpTool>& McpClient::tools() const { return impl_->tools; }
const std::vector<McpResource>& McpClient::resources() const { return impl_->resources; }
const std::vector<McpPrompt>& McpClient::prompts() const { return impl_->prompts; }
bool McpClient::offers_resources() const { return impl_->init.resources; }
bool McpClient::offers_prompts() const { return impl_->init.prompts; }
bool McpClient::running() { return !impl_->dead && impl_->child->running(); }
std::string McpClient::state() {
    std::string s = impl_->child->state();
    return impl_->dead && s == "running" ? "stopped" : s;
}

bool McpClient::allowed(std::string_view tool) const {
    for (const std::string& a : impl_->config.allow)
        if (a == "*" || a == tool) return true;
    return false;
}

ToolResult McpClient::call_tool(const std::string& tool, const nlohmann::json& arguments,
                                std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
    const nlohmann::json result = impl_->request("tools/call", {{"name", tool}, {"arguments", arguments}}, timeout, cancel);
    try {
        return mcp::parse_call_result(result);
    } catch (const Error& e) {
        throw Error(impl_->who() + ": " + e.what(), e.kind());
    }
}

ToolResult McpClient::read_resource(const std::string& uri, std::chrono::milliseconds timeout,
                                    const std::atomic<bool>* cancel) {
    const nlohmann::json result = impl_->request("resources/read", {{"uri", uri}}, timeout, cancel);
    try {
        return mcp::parse_read_result(result);
    } catch (const Error& e) {
        throw Error(impl_->who() + ": " + e.what(), e.kind());
    }
}

ToolResult McpClient::get_prompt(const std::string& prompt, const nlohmann::json& arguments,
                                 std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
    nlohmann::json params = {{"name", prompt}};
    if (!arguments.is_null() && !arguments.empty()) params["arguments"] = arguments;
    const nlohmann::json result = impl_->request("prompts/get", params, timeout, cancel);
    try {
        return mcp::parse_prompt_result(result);
    } catch (const Error& e) {
        throw Error(impl_->who() + ": " + e.what(), e.kind());
    }
}

std::vector<std::string> add_mcp_tools(ToolSet& set, std::shared_ptr<McpClient> client) {
    std::vector<std::string> warnings;
    const std::string origin = "MCP server '" + client->name() + "'";
    const std::string prefix = safe_name(client->name()) + "_";
    auto offer = [&](AgentTool tool) {
        if (set.find(tool.name)) tool.name = prefix + tool.name;
        try {
            set.add(std::move(tool));
        } catch (const Error& e) {
            warnings.push_back(std::string(e.what()) + "; not offered");
        }
    };
    // A call that fails (exit, timeout, malformed answer) is an error result; the
    // handler never throws for the server's faults.
    auto guarded = [](auto fn) {
        return [fn](const nlohmann::json& args, const ToolInvocation& inv) -> ToolResult {
            try {
                return fn(args, inv);
            } catch (const Error& e) {
                return {e.what(), true};
            }
        };
    };
    for (const McpTool& t : client->tools()) {
        AgentTool tool;
        tool.name = t.name;
        tool.description = t.description;
        tool.parameters = t.input_schema;
        tool.origin = origin;
        tool.needs_approval = !client->allowed(t.name);
        tool.handler = guarded([client, name = t.name](const nlohmann::json& args, const ToolInvocation& inv) {
            return client->call_tool(name, args, inv.timeout, inv.cancel);
        });
        offer(std::move(tool));
    }
    if (client->offers_resources()) {
        AgentTool tool;
        tool.name = prefix + "read_resource";
        tool.description = "Reads a resource of " + origin + " by its URI.";
        size_t n = 0;
        for (const McpResource& r : client->resources()) {
            if (n++ == 0) tool.description += " Resources:";
            if (n > 50) {
                tool.description += "\n- ...";
                break;
            }
            tool.description += "\n- " + r.uri + (r.name.empty() ? "" : " (" + r.name + ")") +
                                (r.description.empty() ? "" : ": " + r.description);
        }
        tool.parameters = nlohmann::ordered_json::parse(
            R"({"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]})");
        tool.origin = origin;
        tool.needs_approval = !client->allowed(tool.name) && !client->allowed("read_resource");
        tool.handler = guarded([client](const nlohmann::json& args, const ToolInvocation& inv) {
            return client->read_resource(args["uri"].get<std::string>(), inv.timeout, inv.cancel);
        });
        offer(std::move(tool));
    }
    if (client->offers_prompts()) {
        AgentTool tool;
        tool.name = prefix + "get_prompt";
        tool.description = "Gets a prompt (instructions) of " + origin + " by name, with its arguments.";
        nlohmann::ordered_json names = nlohmann::ordered_json::array();
        for (const McpPrompt& p : client->prompts()) {
            names.push_back(p.name);
            if (names.size() <= 50) {
                tool.description += "\n- " + p.name + (p.description.empty() ? "" : ": " + p.description);
                for (const auto& [arg, required] : p.arguments)
                    tool.description += std::string(" [") + arg + (required ? "" : "?") + "]";
            }
        }
        tool.parameters = nlohmann::ordered_json{
            {"type", "object"},
            {"properties",
             {{"name", names.empty() ? nlohmann::ordered_json{{"type", "string"}}
                                     : nlohmann::ordered_json{{"enum", names}}},
              {"arguments", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}}}},
            {"required", {"name"}}};
        tool.origin = origin;
        tool.needs_approval = !client->allowed(tool.name) && !client->allowed("get_prompt");
        tool.handler = guarded([client](const nlohmann::json& args, const ToolInvocation& inv) {
            return client->get_prompt(args["name"].get<std::string>(), args.value("arguments", nlohmann::json()),
                                      inv.timeout, inv.cancel);
        });
        offer(std::move(tool));
    }
    return warnings;
}

}  // namespace kiln
