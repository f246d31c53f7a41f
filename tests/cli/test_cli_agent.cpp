// kiln chat with tools, driven through stdin as a user would: an MCP server
// given with --mcp (its calls asked for approval on stderr, answered on stdin),
// a skills folder, /tools, a server that cannot start. SmolLM2-135M with Qwen
// 2.5's template (--template) and each turn's reply prefilled with the call
// (--prefill), since the 135M model does not open a call by itself.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli/cli_runner.h"
#include "support/test_support.h"

using kiln::test::run_kiln;

namespace {

std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

TEST(CliChatAgent, McpToolApprovedDeclinedAndListed) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string server = "python3 " + kiln::test::data_path("agent/mcp_test_server.py");
    const std::string args =
        "chat -m " + kiln::test::smollm2_path() + " --template " +
        quote(kiln::test::data_path("shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja")) + " --temp 0 -n 6 -v" +
        " --mcp " + quote(server) + " --mcp " + quote("kiln-no-such-server --x") +
        " --mcp " + quote(server + " --crash-on-call") +
        " --skills-dir " + quote(kiln::test::data_path("agent/skills")) + " --tool-timeout 20" +
        " --prefill " + quote("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>");
    // /tools, a turn whose call is approved, one whose call is declined.
    auto r = run_kiln(args, "/tools\nWhat is 2 plus 3?\ny\nAnd again?\nn\n/exit\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("warning: MCP server 'kiln-no-such-server': cannot start 'kiln-no-such-server': No such file or "
                         "directory; going on without it"),
              std::string::npos)
        << r.err;
    // /tools: the skills tool and the server's tools, with who offers them.
    EXPECT_NE(r.out.find("  skills               skills: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  add                  MCP server 'kiln-test', asks first: Adds two numbers a and b"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("MCP server 'kiln-test' (" + server + "): running, protocol 2025-06-18, 4 tools, 1 resources, 1 prompts"),
              std::string::npos)
        << r.out;
    // The approval was asked twice, on stderr.
    const std::string ask = "run add {\"a\":2,\"b\":3} (MCP server 'kiln-test')? [y]es, [n]o, [a]lways for this tool: ";
    const size_t first = r.err.find(ask);
    ASSERT_NE(first, std::string::npos) << r.err;
    EXPECT_NE(r.err.find(ask, first + 1), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("running add"), std::string::npos) << r.err;
    // The call, its result, then the declined one.
    const size_t call = r.out.find("tool call {");
    ASSERT_NE(call, std::string::npos) << r.out;
    const size_t result = r.out.find("result of add\n5\n", call);
    ASSERT_NE(result, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("error from add\nthe user declined to run add\n", result), std::string::npos) << r.out;
    // The second server of the same name is renamed; its tool, called, crashes it:
    // an error result, a message, and the chat goes on.
    EXPECT_NE(r.out.find("  kiln-test-2_add      MCP server 'kiln-test-2', asks first"), std::string::npos) << r.out;
    // -v: each turn's figures (two replies: the call, then after its result).
    EXPECT_NE(r.err.find("2 replies, 1 tool calls"), std::string::npos) << r.err;
}

// A server that crashes on its first call: the model gets an error result, the
// user a message, and the next turn goes on (the tool now answers that the
// server is not running). --yes: no approval asked.
TEST(CliChatAgent, CrashedServerTheChatGoesOn) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string server = "python3 " + kiln::test::data_path("agent/mcp_test_server.py") + " --crash-on-call";
    const std::string args =
        "chat -m " + kiln::test::smollm2_path() + " --template " +
        quote(kiln::test::data_path("shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja")) + " --temp 0 -n 6 --yes" +
        " --mcp " + quote(server) +
        " --prefill " + quote("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>");
    auto r = run_kiln(args, "What is 2 plus 3?\nTry again.\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("? [y]es"), std::string::npos) << r.err;  // --yes
    EXPECT_NE(r.out.find("error from add\nMCP server 'kiln-test' exited with status 3 (during tools/call); its last stderr: "
                         "test server: crashing on tools/call\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("MCP server 'kiln-test' exited with status 3; its tools now answer with errors"), std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("error from add\nMCP server 'kiln-test' is not running (exited with status 3)\n"), std::string::npos)
        << r.out;
}

// A call the model wrote but the parser cannot read: the user sees the error and
// that it went back to the model, and the model replies again (-v: two replies).
TEST(CliChatAgent, UnreadableCallGoesBackToTheModel) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string server = "python3 " + kiln::test::data_path("agent/mcp_test_server.py");
    const std::string args =
        "chat -m " + kiln::test::smollm2_path() + " --template " +
        quote(kiln::test::data_path("shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja")) + " --temp 0 -n 6 --yes -v" +
        " --mcp " + quote(server) +
        " --prefill " + quote("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2,, }}\n</tool_call>");
    auto r = run_kiln(args, "What is 2 plus 3?\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("[malformed tool call: <tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2,, }}]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[the unreadable call was sent back to the model as an error]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("2 replies, 0 tool calls"), std::string::npos) << r.err;
}

// The agent's MCP servers from the config file ("mcp_servers", the per-server shape
// of an --mcp-config file), under $KILN_MCP_CONFIG and the flags: flag > environment
// > file, `config --print` naming where they came from; a wrong key is an error
// naming the file and the key.
TEST(CliChatAgent, McpServersFromTheConfigFileUnderEnvironmentAndFlags) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string dir = kiln::test::temp_dir();
    const std::string server_py = kiln::test::data_path("agent/mcp_test_server.py");
    const std::string cfg = dir + "/mcp-config.json", env_file = dir + "/mcp-env.json", bad = dir + "/mcp-bad.json";
    kiln::test::write_file(cfg, "{\"mcp_servers\": {\"calc\": {\"command\": \"python3\", \"args\": [\"" + server_py +
                                    "\"], \"env\": {\"KILN_TEST_SECRET\": \"s3cret\"}, \"allow\": [\"add\"]}}}");
    kiln::test::write_file(env_file, "{\"mcpServers\": {\"envcalc\": {\"command\": \"python3\", \"args\": [\"" + server_py + "\"]}}}");
    const std::string chat = "--config " + quote(cfg) + " chat -m " + kiln::test::smollm2_path() + " --template " +
                             quote(kiln::test::data_path("shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja")) + " --tool-timeout 20";
    ::unsetenv("KILN_MCP_CONFIG");
    // The file's server, its tool allowed without asking.
    auto r = run_kiln(chat, "/tools\n/exit\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("  add                  MCP server 'calc': Adds two numbers"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("MCP server 'calc' (python3 " + server_py + "): running"), std::string::npos) << r.out;
    r = run_kiln("--config " + quote(cfg) + " config --print");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("MCP servers for kiln chat (file " + cfg + "; --mcp / --mcp-config replace them):\n  calc: python3 " +
                         server_py + ", env KILN_TEST_SECRET, runs without asking: add\n"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;  // environment values are not shown
    // $KILN_MCP_CONFIG replaces the file's servers ...
    ::setenv("KILN_MCP_CONFIG", env_file.c_str(), 1);
    r = run_kiln(chat, "/tools\n/exit\n");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("MCP server 'envcalc'"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MCP server 'calc'"), std::string::npos) << r.out;
    r = run_kiln("--config " + quote(cfg) + " config --print --json");
    EXPECT_NE(r.out.find("\"origin\": \"environment KILN_MCP_CONFIG = " + env_file + "\""), std::string::npos) << r.out;
    // ... and --mcp replaces both.
    r = run_kiln(chat + " --mcp " + quote("python3 " + server_py), "/tools\n/exit\n");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("MCP server 'kiln-test'"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MCP server 'envcalc'"), std::string::npos) << r.out;
    ::unsetenv("KILN_MCP_CONFIG");
    // Unknown keys under a server, and a servers value that is not an object, name the file and the key.
    kiln::test::write_file(bad, "{\"mcp_servers\": {\"calc\": {\"comand\": \"python3\"}}}");
    r = run_kiln("--config " + quote(bad) + " config --print");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(bad + ": mcp_servers.calc: unknown key 'comand'"), std::string::npos) << r.err;
    kiln::test::write_file(bad, "{\"mcp_servers\": [\"python3 x.py\"]}");
    r = run_kiln("--config " + quote(bad) + " config --print");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(bad + ": 'mcp_servers': expected an object of MCP servers by name, found array"), std::string::npos) << r.err;
}
