// libFuzzer target for the MCP client's reader: bytes a server writes, split into
// lines (chunk boundaries taken from byte 0), each read as a JSON-RPC message, and
// every result reader (initialize, the three lists, tools/call, resources/read,
// prompts/get) run on what a response or request carries. The input is also split
// as an --mcp command line. The only allowed failure is kiln::Error; any other
// exception, crash or sanitizer report aborts. docs/fuzzing.md.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "chat/mcp_jsonrpc.h"
#include "kiln/error.h"
#include "kiln/mcp.h"

namespace {

template <typename F>
void allow_kiln_errors(F&& f) {
    try {
        f();
    } catch (const kiln::Error&) {
    }
}

void read_results(const nlohmann::json& j) {
    using namespace kiln::mcp;
    allow_kiln_errors([&] { (void)parse_initialize(j); });
    allow_kiln_errors([&] {
        std::vector<kiln::McpTool> tools;
        (void)parse_tools_page(j, tools);
        for (const auto& t : tools) (void)t.input_schema.dump();
    });
    allow_kiln_errors([&] {
        std::vector<kiln::McpResource> r;
        (void)parse_resources_page(j, r);
    });
    allow_kiln_errors([&] {
        std::vector<kiln::McpPrompt> p;
        (void)parse_prompts_page(j, p);
    });
    allow_kiln_errors([&] { (void)parse_call_result(j); });
    allow_kiln_errors([&] { (void)parse_read_result(j); });
    allow_kiln_errors([&] { (void)parse_prompt_result(j); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const size_t chunk = 1 + data[0] % 64;
    std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    kiln::mcp::LineReader reader(4096);
    std::vector<std::string> lines;
    try {
        for (size_t i = 0; i < input.size(); i += chunk)
            for (auto& l : reader.push(input.substr(i, chunk))) lines.push_back(std::move(l));
    } catch (const kiln::Error&) {
        // an over-long line: the client stops the server; the lines before it were read
    }
    for (const std::string& line : lines) {
        allow_kiln_errors([&] {
            kiln::mcp::Message m = kiln::mcp::parse_message(line);
            if (m.kind == kiln::mcp::MessageKind::Response) read_results(m.result);
            if (!m.params.is_null()) read_results(m.params);
            (void)m.raw_id.dump();
        });
    }
    allow_kiln_errors([&] { (void)kiln::split_command_line(input); });
    return 0;
}
