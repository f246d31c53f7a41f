// Reading MCP's JSON-RPC messages (src/chat/mcp_jsonrpc.h).
#include "chat/mcp_jsonrpc.h"

#include "kiln/error.h"

namespace kiln::mcp {

namespace {

// Nesting deeper than this is refused before parsing: nlohmann::json reads
// iteratively but dumps and copies recursively.
constexpr int k_max_depth = 128;
// Items of a list page / a result taken at most; a server cannot make the tool
// list or a prompt grow without bound.
constexpr size_t k_max_items = 10000;

[[noreturn]] void fail(const std::string& what) {
    throw Error("malformed MCP message: " + what, ErrorKind::InvalidInput);
}

void check_depth(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > k_max_depth) fail("JSON nested deeper than " + std::to_string(k_max_depth));
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

std::string snippet(std::string_view s) {
    std::string out(s.substr(0, 80));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return s.size() > 80 ? out + "..." : out;
}

const nlohmann::json& member(const nlohmann::json& obj, const char* key, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end()) fail(where + ": no \"" + key + "\"");
    return *it;
}

std::string string_member(const nlohmann::json& obj, const char* key, const std::string& where, bool required) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        if (required) fail(where + ": no \"" + key + "\"");
        return "";
    }
    if (!it->is_string()) fail(where + ": \"" + key + "\" is not a string");
    return it->get<std::string>();
}

const nlohmann::json& object_result(const nlohmann::json& result, const std::string& what) {
    if (!result.is_object()) fail(what + " result is not an object");
    return result;
}

const nlohmann::json& array_member(const nlohmann::json& obj, const char* key, const std::string& where) {
    const nlohmann::json& a = member(obj, key, where);
    if (!a.is_array()) fail(where + ": \"" + key + "\" is not an array");
    if (a.size() > k_max_items) fail(where + ": more than " + std::to_string(k_max_items) + " " + key);
    return a;
}

std::string next_cursor(const nlohmann::json& result, const std::string& where) {
    return string_member(result, "nextCursor", where, false);
}

// A content item of a tool result or a prompt message, as text.
std::string content_text(const nlohmann::json& item, const std::string& where) {
    if (!item.is_object()) fail(where + " is not an object");
    const std::string type = string_member(item, "type", where, true);
    if (type == "text") return string_member(item, "text", where, true);
    if (type == "image" || type == "audio") {
        const std::string data = string_member(item, "data", where, false);
        return "[" + type + " " + string_member(item, "mimeType", where, false) + ", " +
               std::to_string(data.size() * 3 / 4) + " bytes]";
    }
    if (type == "resource") {
        const nlohmann::json& r = member(item, "resource", where);
        if (!r.is_object()) fail(where + ".resource is not an object");
        if (r.contains("text")) return string_member(r, "text", where + ".resource", true);
        return "[resource " + string_member(r, "uri", where + ".resource", true) + "]";
    }
    if (type == "resource_link") return "[resource " + string_member(item, "uri", where, true) + "]";
    return "[" + type + " content]";
}

}  // namespace

std::vector<std::string> LineReader::push(std::string_view bytes) {
    std::vector<std::string> lines;
    while (!bytes.empty()) {
        const size_t nl = bytes.find('\n');
        const std::string_view piece = bytes.substr(0, nl);
        if (partial_.size() + piece.size() > max_line_)
            fail("a line longer than " + std::to_string(max_line_) + " bytes");
        partial_.append(piece);
        if (nl == std::string_view::npos) break;
        bytes.remove_prefix(nl + 1);
        if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
        if (partial_.find_first_not_of(" \t") != std::string::npos) lines.push_back(std::move(partial_));
        partial_.clear();
    }
    return lines;
}

Message parse_message(std::string_view line) {
    check_depth(line);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
        fail("not JSON ('" + snippet(line) + "'): " + e.what());
    }
    if (!j.is_object()) fail("not a JSON object ('" + snippet(line) + "')");
    auto version = j.find("jsonrpc");
    if (version == j.end() || *version != "2.0") fail("\"jsonrpc\" is not \"2.0\"");
    Message m;
    auto id = j.find("id");
    if (id != j.end()) {
        if (id->is_number_integer()) m.id = id->get<int64_t>();
        else if (id->is_number_unsigned() && id->get<uint64_t>() <= uint64_t(INT64_MAX)) m.id = int64_t(id->get<uint64_t>());
        else if (!id->is_string() && !id->is_null()) fail("\"id\" is neither a string nor an integer");
        m.raw_id = *id;
    }
    auto method = j.find("method");
    if (method != j.end()) {
        if (!method->is_string()) fail("\"method\" is not a string");
        m.method = method->get<std::string>();
        m.kind = id == j.end() ? MessageKind::Notification : MessageKind::Request;
        if (auto p = j.find("params"); p != j.end()) {
            if (!p->is_object() && !p->is_array()) fail("\"params\" of " + m.method + " is neither an object nor an array");
            m.params = *p;
        }
        return m;
    }
    if (id == j.end()) fail("neither \"method\" nor \"id\"");
    auto result = j.find("result");
    auto error = j.find("error");
    if ((result == j.end()) == (error == j.end())) fail("a response needs exactly one of \"result\" and \"error\"");
    if (result != j.end()) {
        m.kind = MessageKind::Response;
        m.result = *result;
        return m;
    }
    m.kind = MessageKind::ErrorResponse;
    if (!error->is_object()) fail("\"error\" is not an object");
    const nlohmann::json& code = member(*error, "code", "error");
    if (!code.is_number_integer()) fail("error.code is not an integer");
    m.error_code = code.get<int64_t>();
    m.error_message = string_member(*error, "message", "error", true);
    if (auto d = error->find("data"); d != error->end() && !d->is_null())
        m.error_message += " (" + (d->is_string() ? d->get<std::string>() : snippet(d->dump())) + ")";
    return m;
}

ServerInit parse_initialize(const nlohmann::json& result) {
    const auto& r = object_result(result, "initialize");
    ServerInit s;
    s.protocol_version = string_member(r, "protocolVersion", "initialize result", true);
    bool known = false;
    for (const char* v : k_protocol_versions) known = known || s.protocol_version == v;
    if (!known) {
        std::string list;
        for (const char* v : k_protocol_versions) list += (list.empty() ? "" : ", ") + std::string(v);
        throw Error("the server speaks MCP revision '" + snippet(s.protocol_version) + "'; kiln speaks " + list,
                    ErrorKind::Unsupported);
    }
    const nlohmann::json& caps = member(r, "capabilities", "initialize result");
    if (!caps.is_object()) fail("initialize result: \"capabilities\" is not an object");
    s.tools = caps.contains("tools");
    s.resources = caps.contains("resources");
    s.prompts = caps.contains("prompts");
    if (auto info = r.find("serverInfo"); info != r.end()) {
        if (!info->is_object()) fail("initialize result: \"serverInfo\" is not an object");
        s.name = string_member(*info, "name", "serverInfo", false);
    }
    return s;
}

std::string parse_tools_page(const nlohmann::json& result, std::vector<McpTool>& out) {
    const auto& r = object_result(result, "tools/list");
    const auto& tools = array_member(r, "tools", "tools/list result");
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string where = "tools/list result: tools[" + std::to_string(i) + "]";
        const auto& t = tools[i];
        if (!t.is_object()) fail(where + " is not an object");
        McpTool tool;
        tool.name = string_member(t, "name", where, true);
        tool.description = string_member(t, "description", where, false);
        const nlohmann::json& schema = member(t, "inputSchema", where);
        if (!schema.is_object()) fail(where + ": \"inputSchema\" is not an object");
        tool.input_schema = nlohmann::ordered_json::parse(schema.dump());
        out.push_back(std::move(tool));
        if (out.size() > k_max_items) fail("tools/list: more than " + std::to_string(k_max_items) + " tools");
    }
    return next_cursor(r, "tools/list result");
}

std::string parse_resources_page(const nlohmann::json& result, std::vector<McpResource>& out) {
    const auto& r = object_result(result, "resources/list");
    const auto& items = array_member(r, "resources", "resources/list result");
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string where = "resources/list result: resources[" + std::to_string(i) + "]";
        if (!items[i].is_object()) fail(where + " is not an object");
        McpResource res;
        res.uri = string_member(items[i], "uri", where, true);
        res.name = string_member(items[i], "name", where, false);
        res.description = string_member(items[i], "description", where, false);
        res.mime_type = string_member(items[i], "mimeType", where, false);
        out.push_back(std::move(res));
        if (out.size() > k_max_items) fail("resources/list: more than " + std::to_string(k_max_items) + " resources");
    }
    return next_cursor(r, "resources/list result");
}

std::string parse_prompts_page(const nlohmann::json& result, std::vector<McpPrompt>& out) {
    const auto& r = object_result(result, "prompts/list");
    const auto& items = array_member(r, "prompts", "prompts/list result");
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string where = "prompts/list result: prompts[" + std::to_string(i) + "]";
        if (!items[i].is_object()) fail(where + " is not an object");
        McpPrompt p;
        p.name = string_member(items[i], "name", where, true);
        p.description = string_member(items[i], "description", where, false);
        if (auto a = items[i].find("arguments"); a != items[i].end() && !a->is_null()) {
            if (!a->is_array()) fail(where + ": \"arguments\" is not an array");
            for (size_t k = 0; k < a->size() && k < k_max_items; ++k) {
                const auto& arg = (*a)[k];
                const std::string w = where + ".arguments[" + std::to_string(k) + "]";
                if (!arg.is_object()) fail(w + " is not an object");
                bool required = false;
                if (auto req = arg.find("required"); req != arg.end()) {
                    if (!req->is_boolean()) fail(w + ": \"required\" is not a boolean");
                    required = req->get<bool>();
                }
                p.arguments.emplace_back(string_member(arg, "name", w, true), required);
            }
        }
        out.push_back(std::move(p));
        if (out.size() > k_max_items) fail("prompts/list: more than " + std::to_string(k_max_items) + " prompts");
    }
    return next_cursor(r, "prompts/list result");
}

ToolResult parse_call_result(const nlohmann::json& result) {
    const auto& r = object_result(result, "tools/call");
    ToolResult out;
    if (auto e = r.find("isError"); e != r.end()) {
        if (!e->is_boolean()) fail("tools/call result: \"isError\" is not a boolean");
        out.is_error = e->get<bool>();
    }
    const auto& content = array_member(r, "content", "tools/call result");
    for (size_t i = 0; i < content.size(); ++i) {
        if (!out.content.empty()) out.content += "\n";
        out.content += content_text(content[i], "tools/call result: content[" + std::to_string(i) + "]");
    }
    // Structured output without a text rendering (servers should send both).
    if (out.content.empty())
        if (auto s = r.find("structuredContent"); s != r.end() && !s->is_null()) out.content = s->dump();
    return out;
}

ToolResult parse_read_result(const nlohmann::json& result) {
    const auto& r = object_result(result, "resources/read");
    const auto& contents = array_member(r, "contents", "resources/read result");
    ToolResult out;
    for (size_t i = 0; i < contents.size(); ++i) {
        const std::string where = "resources/read result: contents[" + std::to_string(i) + "]";
        const auto& c = contents[i];
        if (!c.is_object()) fail(where + " is not an object");
        if (!out.content.empty()) out.content += "\n";
        if (c.contains("text"))
            out.content += string_member(c, "text", where, true);
        else
            out.content += "[binary " + string_member(c, "mimeType", where, false) + " resource " +
                           string_member(c, "uri", where, true) + ", " +
                           std::to_string(string_member(c, "blob", where, false).size() * 3 / 4) + " bytes]";
    }
    return out;
}

ToolResult parse_prompt_result(const nlohmann::json& result) {
    const auto& r = object_result(result, "prompts/get");
    const auto& messages = array_member(r, "messages", "prompts/get result");
    ToolResult out;
    if (std::string d = string_member(r, "description", "prompts/get result", false); !d.empty()) out.content = d;
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string where = "prompts/get result: messages[" + std::to_string(i) + "]";
        const auto& m = messages[i];
        if (!m.is_object()) fail(where + " is not an object");
        if (!out.content.empty()) out.content += "\n";
        out.content += string_member(m, "role", where, true) + ": " + content_text(member(m, "content", where), where + ".content");
    }
    return out;
}

}  // namespace kiln::mcp
