// MCP server command lines and the config file (kiln/mcp.h).
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kiln/error.h"
#include "kiln/mcp.h"

namespace kiln {

std::vector<std::string> split_command_line(std::string_view text) {
    std::vector<std::string> out;
    std::string word;
    bool in_word = false;
    size_t i = 0;
    auto fail = [&](const std::string& what) {
        throw Error("command line '" + std::string(text) + "': " + what, ErrorKind::InvalidInput);
    };
    while (i < text.size()) {
        const char c = text[i];
        if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) out.push_back(std::move(word));
            word.clear();
            in_word = false;
            ++i;
        } else if (c == '\'') {
            const size_t end = text.find('\'', i + 1);
            if (end == std::string_view::npos) fail("unterminated single quote");
            word.append(text.substr(i + 1, end - i - 1));
            in_word = true;
            i = end + 1;
        } else if (c == '"') {
            in_word = true;
            ++i;
            for (;;) {
                if (i >= text.size()) fail("unterminated double quote");
                const char d = text[i];
                if (d == '"') {
                    ++i;
                    break;
                }
                if (d == '\\' && i + 1 < text.size()) {
                    const char e = text[i + 1];
                    if (e == '"' || e == '\\' || e == '$' || e == '`') {
                        word += e;
                        i += 2;
                        continue;
                    }
                    if (e == '\n') {
                        i += 2;
                        continue;
                    }
                }
                word += d;
                ++i;
            }
        } else if (c == '\\') {
            if (i + 1 >= text.size()) fail("a backslash at the end");
            if (text[i + 1] != '\n') {
                word += text[i + 1];
                in_word = true;
            }
            i += 2;
        } else {
            word += c;
            in_word = true;
            ++i;
        }
    }
    if (in_word) out.push_back(std::move(word));
    if (out.empty()) fail("no command");
    return out;
}

namespace {

std::vector<std::string> string_list(const nlohmann::json& j, const std::string& where) {
    if (!j.is_array()) throw Error(where + ": expected an array of strings", ErrorKind::InvalidInput);
    std::vector<std::string> out;
    for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string())
            throw Error(where + "[" + std::to_string(i) + "]: expected a string", ErrorKind::InvalidInput);
        out.push_back(j[i].get<std::string>());
    }
    return out;
}

}  // namespace

std::vector<McpServerConfig> load_mcp_config(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open the MCP config file", ErrorKind::InvalidInput);
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
        throw Error(path + ": not JSON: " + e.what(), ErrorKind::InvalidInput);
    }
    if (!j.is_object()) throw Error(path + ": expected an object with \"mcpServers\"", ErrorKind::InvalidInput);
    for (const auto& [key, v] : j.items())
        if (key != "mcpServers")
            throw Error(path + ": unknown key '" + key + "' (expected \"mcpServers\")", ErrorKind::InvalidInput);
    auto servers = j.find("mcpServers");
    if (servers == j.end() || !servers->is_object())
        throw Error(path + ": \"mcpServers\" must be an object of servers by name", ErrorKind::InvalidInput);
    return parse_mcp_servers(*servers, path + ": mcpServers",
                             std::filesystem::path(path).parent_path().string());
}

std::vector<McpServerConfig> parse_mcp_servers(const nlohmann::ordered_json& servers, const std::string& where_prefix,
                                               const std::string& base_dir) {
    if (!servers.is_object()) throw Error(where_prefix + ": expected an object of servers by name", ErrorKind::InvalidInput);
    const std::filesystem::path base = base_dir;
    std::vector<McpServerConfig> out;
    for (const auto& [name, s] : servers.items()) {
        const std::string where = where_prefix + "." + name;
        if (!s.is_object()) throw Error(where + ": expected an object", ErrorKind::InvalidInput);
        McpServerConfig c;
        c.name = name;
        static const std::set<std::string> k_keys = {"command", "args", "env", "cwd", "allow", "type"};
        for (const auto& [key, v] : s.items())
            if (!k_keys.count(key))
                throw Error(where + ": unknown key '" + key + "' (command, args, env, cwd, allow)", ErrorKind::InvalidInput);
        if (auto t = s.find("type"); t != s.end() && *t != "stdio")
            throw Error(where + ".type: only \"stdio\" servers are supported", ErrorKind::Unsupported);
        auto cmd = s.find("command");
        if (cmd == s.end() || !cmd->is_string() || cmd->get<std::string>().empty())
            throw Error(where + ".command: expected the program to run (a string)", ErrorKind::InvalidInput);
        c.argv.push_back(cmd->get<std::string>());
        if (auto a = s.find("args"); a != s.end())
            for (auto& arg : string_list(nlohmann::json::parse(a->dump()), where + ".args")) c.argv.push_back(arg);
        if (auto e = s.find("env"); e != s.end()) {
            if (!e->is_object()) throw Error(where + ".env: expected an object of strings", ErrorKind::InvalidInput);
            for (const auto& [k, val] : e->items()) {
                if (!val.is_string())
                    throw Error(where + ".env." + k + ": expected a string", ErrorKind::InvalidInput);
                if (k.empty() || k.find('=') != std::string::npos)
                    throw Error(where + ".env: bad variable name '" + k + "'", ErrorKind::InvalidInput);
                c.env[k] = val.get<std::string>();
            }
        }
        if (auto d = s.find("cwd"); d != s.end()) {
            if (!d->is_string()) throw Error(where + ".cwd: expected a string", ErrorKind::InvalidInput);
            std::filesystem::path p = d->get<std::string>();
            c.cwd = (p.is_relative() ? base / p : p).string();
            if (c.cwd.empty()) c.cwd = ".";
        }
        if (auto a = s.find("allow"); a != s.end()) c.allow = string_list(nlohmann::json::parse(a->dump()), where + ".allow");
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace kiln
