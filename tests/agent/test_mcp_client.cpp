// The MCP client against tests/data/agent/mcp_test_server.py (no model): the
// handshake and lists, calls that answer, fail, hang, crash the server or get
// malformed JSON back, the config file, command-line splitting, the JSON-RPC
// reader, and that every child is reaped.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "chat/child_process.h"
#include "chat/mcp_jsonrpc.h"
#include "kiln/error.h"
#include "kiln/mcp.h"
#include "support/test_support.h"

namespace {

using namespace std::chrono_literals;
using kiln::McpClient;
using kiln::McpServerConfig;

std::string server_script() { return kiln::test::data_path("agent/mcp_test_server.py"); }

McpServerConfig server(const std::string& mode = "", const std::string& name = "") {
    McpServerConfig c;
    c.name = name;
    c.argv = {"python3", server_script()};
    if (!mode.empty()) c.argv.push_back(mode);
    return c;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(McpSplit, WordsQuotesAndEscapes) {
    using kiln::split_command_line;
    EXPECT_EQ(split_command_line("python3  server.py --x 1"), (std::vector<std::string>{"python3", "server.py", "--x", "1"}));
    EXPECT_EQ(split_command_line("a 'b c' \"d \\\"e\\\" $f\" g\\ h"),
              (std::vector<std::string>{"a", "b c", "d \"e\" $f", "g h"}));
    EXPECT_EQ(split_command_line("x '' \"\""), (std::vector<std::string>{"x", "", ""}));
    // Nothing is expanded or interpreted: these are plain arguments.
    EXPECT_EQ(split_command_line("echo $HOME ~ * ; rm -rf | cat > f"),
              (std::vector<std::string>{"echo", "$HOME", "~", "*", ";", "rm", "-rf", "|", "cat", ">", "f"}));
    EXPECT_EQ(split_command_line("a'b'\"c\"d"), (std::vector<std::string>{"abcd"}));
    EXPECT_NE(error_of([] { split_command_line("a 'b"); }).find("unterminated single quote"), std::string::npos);
    EXPECT_NE(error_of([] { split_command_line("a \"b"); }).find("unterminated double quote"), std::string::npos);
    EXPECT_NE(error_of([] { split_command_line("   "); }).find("no command"), std::string::npos);
    EXPECT_NE(error_of([] { split_command_line("a\\"); }).find("backslash at the end"), std::string::npos);
}

TEST(McpReader, LinesAndMessages) {
    kiln::mcp::LineReader r(64);
    EXPECT_TRUE(r.push("{\"a\":").empty());
    auto lines = r.push("1}\r\n\n  \n{\"b\":2}\n{\"c\"");
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], "{\"a\":1}");
    EXPECT_EQ(lines[1], "{\"b\":2}");
    EXPECT_EQ(r.buffered(), 4u);
    EXPECT_NE(error_of([&] { r.push(std::string(100, 'x')); }).find("longer than 64 bytes"), std::string::npos);

    using kiln::mcp::MessageKind;
    using kiln::mcp::parse_message;
    auto m = parse_message(R"({"jsonrpc": "2.0", "id": 7, "result": {"x": 1}})");
    EXPECT_EQ(m.kind, MessageKind::Response);
    EXPECT_EQ(m.id, 7);
    m = parse_message(R"({"jsonrpc": "2.0", "id": "s1", "method": "ping"})");
    EXPECT_EQ(m.kind, MessageKind::Request);
    EXPECT_FALSE(m.id.has_value());  // not one of kiln's ids
    EXPECT_EQ(m.raw_id, "s1");
    m = parse_message(R"({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}})");
    EXPECT_EQ(m.kind, MessageKind::Notification);
    m = parse_message(R"({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no", "data": "why"}})");
    EXPECT_EQ(m.kind, MessageKind::ErrorResponse);
    EXPECT_EQ(m.error_code, -32601);
    EXPECT_EQ(m.error_message, "no (why)");
    for (const char* bad : {"{not json", "[1]", R"({"id": 1, "result": {}})", R"({"jsonrpc": "1.0", "id": 1, "result": {}})",
                            R"({"jsonrpc": "2.0"})", R"({"jsonrpc": "2.0", "id": 1})",
                            R"({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}})",
                            R"({"jsonrpc": "2.0", "id": 1.5, "result": {}})", R"({"jsonrpc": "2.0", "method": 3})",
                            R"({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}})"})
        EXPECT_NE(error_of([&] { parse_message(bad); }).find("malformed MCP message"), std::string::npos) << bad;
    const std::string deep = std::string(200, '[') + std::string(200, ']');
    EXPECT_NE(error_of([&] { parse_message(deep); }).find("nested deeper"), std::string::npos);

    // Results of the wrong shape name the field.
    EXPECT_NE(error_of([] { kiln::mcp::parse_call_result(nlohmann::json::parse(R"({"content": [{"type": "text"}]})")); })
                  .find("tools/call result: content[0]: no \"text\""),
              std::string::npos);
    std::vector<kiln::McpTool> tools;
    EXPECT_NE(error_of([&] { kiln::mcp::parse_tools_page(nlohmann::json::parse(R"({"tools": [{"name": "x"}]})"), tools); })
                  .find("tools[0]: no \"inputSchema\""),
              std::string::npos);
}

TEST(McpClient, HandshakeListsAndCalls) {
    McpClient c(server(), 10s);
    EXPECT_EQ(c.name(), "kiln-test");  // the server's own name: the command line gave none
    EXPECT_EQ(c.protocol_version(), "2025-06-18");
    ASSERT_EQ(c.tools().size(), 4u);  // two pages of tools/list
    EXPECT_EQ(c.tools()[0].name, "add");
    EXPECT_EQ(c.tools()[3].name, "env");
    EXPECT_EQ(c.tools()[0].input_schema["required"], nlohmann::json({"a", "b"}));
    ASSERT_EQ(c.resources().size(), 1u);
    EXPECT_EQ(c.resources()[0].uri, "test://greeting");
    ASSERT_EQ(c.prompts().size(), 1u);
    EXPECT_EQ(c.prompts()[0].arguments, (std::vector<std::pair<std::string, bool>>{{"code", true}}));

    // The server sends a log notification and a ping request before each answer.
    kiln::ToolResult r = c.call_tool("add", {{"a", 2}, {"b", 3}}, 10s);
    EXPECT_FALSE(r.is_error);
    EXPECT_EQ(r.content, "5");
    r = c.call_tool("fail", {{"reason", "on purpose"}}, 10s);
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content, "the fail tool failed: on purpose");
    EXPECT_NE(error_of([&] { c.call_tool("nope", nlohmann::json::object(), 10s); }).find("Unknown tool: nope (JSON-RPC error -32602)"),
              std::string::npos);
    EXPECT_EQ(c.read_resource("test://greeting", 10s).content, "Hello from the test server");
    EXPECT_NE(error_of([&] { c.read_resource("test://none", 10s); }).find("Resource not found"), std::string::npos);
    EXPECT_EQ(c.get_prompt("review", {{"code", "x = 1"}}, 10s).content, "user: Please review: x = 1");

    // A tool that never answers times out; the server goes on serving.
    const auto t0 = std::chrono::steady_clock::now();
    const std::string hang = error_of([&] { c.call_tool("hang", nlohmann::json::object(), 500ms); });
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(hang.find("MCP server 'kiln-test' did not answer tools/call within 0.5 s"), std::string::npos) << hang;
    EXPECT_GE(waited, 0.45);
    EXPECT_LT(waited, 3.0);
    EXPECT_TRUE(c.running());
    EXPECT_EQ(c.call_tool("add", {{"a", 1.5}, {"b", 1}}, 10s).content, "2.5");

    // The cancel flag (Ctrl-C in kiln chat) stops the wait within about 100 ms.
    std::atomic<bool> cancel{false};
    std::thread later([&] {
        std::this_thread::sleep_for(300ms);
        cancel = true;
    });
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(error_of([&] { c.call_tool("hang", nlohmann::json::object(), 60s, &cancel); }),
              "tools/call to MCP server 'kiln-test' cancelled");
    later.join();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 5.0);
    EXPECT_EQ(c.call_tool("add", {{"a", 2}, {"b", 2}}, 10s).content, "4");
}

TEST(McpClient, CrashedServerIsAnErrorAndStaysDown) {
    McpClient c(server("--crash-on-call", "crashy"), 10s);
    const std::string e = error_of([&] { c.call_tool("add", {{"a", 1}, {"b", 2}}, 10s); });
    EXPECT_NE(e.find("MCP server 'crashy' exited with status 3 (during tools/call)"), std::string::npos) << e;
    EXPECT_NE(e.find("its last stderr: test server: crashing on tools/call"), std::string::npos) << e;
    EXPECT_FALSE(c.running());
    EXPECT_EQ(c.state(), "exited with status 3");
    EXPECT_NE(error_of([&] { c.call_tool("add", {{"a", 1}, {"b", 2}}, 10s); }).find("is not running (exited with status 3)"),
              std::string::npos);
}

TEST(McpClient, MalformedAnswerIsAnError) {
    McpClient c(server("--malformed", "bad"), 10s);
    const std::string e = error_of([&] { c.call_tool("add", {{"a", 1}, {"b", 2}}, 10s); });
    EXPECT_NE(e.find("MCP server 'bad' wrote malformed MCP message: not JSON ('{this is not json')"), std::string::npos) << e;
    EXPECT_TRUE(c.running());  // a bad line fails the request; the server may still answer the next
}

TEST(McpClient, ServersThatCannotStart) {
    std::string e = error_of([] { McpClient c(server("--crash-at-start", "early"), 10s); });
    EXPECT_NE(e.find("MCP server 'early' exited with status 4 (during initialize); its last stderr: test server: crashing at start"),
              std::string::npos)
        << e;
    McpServerConfig missing;
    missing.argv = {"kiln-no-such-mcp-server", "--flag"};
    e = error_of([&] { McpClient c(missing, 10s); });
    EXPECT_NE(e.find("MCP server 'kiln-no-such-mcp-server': cannot start 'kiln-no-such-mcp-server': No such file or directory"),
              std::string::npos)
        << e;
    e = error_of([] { McpClient c(server("--old-protocol"), 10s); });
    EXPECT_NE(e.find("the server speaks MCP revision '1999-01-01'"), std::string::npos) << e;
    // A program that never answers initialize.
    McpServerConfig silent;
    silent.name = "silent";
    silent.argv = {"sleep", "30"};
    const auto t0 = std::chrono::steady_clock::now();
    e = error_of([&] { McpClient c(silent, 300ms); });
    EXPECT_NE(e.find("MCP server 'silent' did not answer initialize within 0.3 s"), std::string::npos) << e;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);  // killed, not waited for
}

TEST(McpClient, ConfigFileEnvAndFolder) {
    const std::string dir = kiln::test::data_path("agent");
    auto configs = kiln::load_mcp_config(dir + "/mcp_config.json");
    ASSERT_EQ(configs.size(), 1u);
    EXPECT_EQ(configs[0].name, "calc");
    EXPECT_EQ(configs[0].argv, (std::vector<std::string>{"python3", "mcp_test_server.py"}));
    EXPECT_EQ(configs[0].allow, (std::vector<std::string>{"add", "env"}));
    McpClient c(configs[0], 10s);
    EXPECT_EQ(c.name(), "calc");
    EXPECT_TRUE(c.allowed("add"));
    EXPECT_FALSE(c.allowed("fail"));
    const std::string out = c.call_tool("env", nlohmann::json::object(), 10s).content;
    EXPECT_EQ(out, "from-config " + std::filesystem::canonical(dir).string());

    const std::string bad = kiln::test::temp_dir() + "/bad_mcp.json";
    kiln::test::write_file(bad, R"({"mcpServers": {"x": {"command": "a", "argz": []}}})");
    EXPECT_NE(error_of([&] { kiln::load_mcp_config(bad); }).find("bad_mcp.json: mcpServers.x: unknown key 'argz'"),
              std::string::npos);
    kiln::test::write_file(bad, R"({"mcpServers": {"x": {"command": "a", "args": [1]}}})");
    EXPECT_NE(error_of([&] { kiln::load_mcp_config(bad); }).find("mcpServers.x.args[0]: expected a string"), std::string::npos);
    kiln::test::write_file(bad, R"({"servers": {}})");
    EXPECT_NE(error_of([&] { kiln::load_mcp_config(bad); }).find("unknown key 'servers'"), std::string::npos);
}

// Writing to a child that has exited is an error, not SIGPIPE; every child of
// these tests has been reaped.
TEST(McpClient, ClosedPipeAndReaping) {
    {
        kiln::chat::ChildProcess p({"true"}, {}, "");
        for (int i = 0; i < 300 && p.running(); ++i) std::this_thread::sleep_for(10ms);
        EXPECT_EQ(p.state(), "exited with status 0");
        std::string error;
        EXPECT_FALSE(p.write_all(std::string(1 << 20, 'x'), std::chrono::steady_clock::now() + 2s, error));
        EXPECT_FALSE(error.empty());
    }
    {
        kiln::chat::ChildProcess p({"sleep", "30"}, {}, "");
        EXPECT_TRUE(p.running());
        p.stop(50ms);  // SIGTERM after the grace period
        EXPECT_EQ(p.state(), "killed by signal 15 (SIGTERM)");
    }
    errno = 0;
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
}
