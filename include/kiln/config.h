// kiln's configuration: one JSON file (docs/models.md, "Config file") of model
// folders, aliases, presets and defaults, under the environment and the flags.
//
//   kiln::Config config = kiln::Config::load(flag_path);   // "" : $KILN_CONFIG, else ~/.config/kiln/config.json
//   int port = config.get_int("server.port");
//   kiln::Catalog catalog(config.catalog_options());
//
// Each scalar setting's value comes from, highest first: a command-line flag
// (set_flag), its environment variable, the file, the built-in default; origin()
// says which. Unknown keys and values of the wrong type are errors naming the
// file and the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/catalog.h"

namespace kiln {

struct ConfigSetting {
    std::string key;      // "server.port"
    std::string value;    // as text ("" when unset)
    std::string origin;   // "flag", "environment KILN_PORT", "file PATH", "built-in"
    std::string env;      // its environment variable ("" if none)
    std::string meaning;  // one line for `kiln config --print`
};

class Config {
public:
    // Reads the file: `path` if not empty (it must exist), else $KILN_CONFIG (it
    // must exist), else $XDG_CONFIG_HOME/kiln/config.json or
    // ~/.config/kiln/config.json when that exists. No file: built-in defaults.
    static Config load(const std::string& path = "");
    // The same from JSON text (tests); `origin_name` names it in errors.
    static Config parse(const std::string& json_text, const std::string& origin_name);

    const std::string& path() const { return path_; }  // the file read, "" if none
    // Where load("") looks without $KILN_CONFIG: $XDG_CONFIG_HOME/kiln/config.json,
    // else ~/.config/kiln/config.json.
    static std::string default_path();

    // Scalar settings (the table in config.cpp): text, or typed with an error
    // naming the key and its origin when the text is not of the type.
    std::string get(const std::string& key) const;
    int get_int(const std::string& key) const;
    uint64_t get_bytes(const std::string& key) const;  // "512MiB", "2G", "1048576"
    const std::string& origin(const std::string& key) const;
    // A command-line flag's value: it takes precedence over everything.
    void set_flag(const std::string& key, const std::string& value);
    const std::vector<ConfigSetting>& settings() const { return settings_; }

    const std::vector<std::string>& model_folders() const { return folders_; }
    const std::map<std::string, std::string>& aliases() const { return aliases_; }
    const std::map<std::string, Preset>& presets() const { return presets_; }

    // The agent's MCP servers (kiln chat): the file's "mcp_servers" object (the
    // per-server shape of an {"mcpServers": ...} file, kiln/mcp.h), unless
    // $KILN_MCP_CONFIG names such a file, which replaces it (the flags --mcp and
    // --mcp-config replace both). The JSON text of the object ("" if none), where an
    // error should point ("FILE: mcp_servers"), the folder relative cwds are taken
    // from, and the origin ("environment KILN_MCP_CONFIG" then the text is empty and
    // mcp_servers_file() names the file; "file PATH"; "built-in": none).
    struct McpServers {
        std::string json_text, where, base_dir, file;
        std::string origin = "built-in";
    };
    const McpServers& mcp_servers() const { return mcp_servers_; }

    // The catalog's options: the environment's stores plus this file's folders,
    // aliases and presets.
    CatalogOptions catalog_options() const;

private:
    Config();
    void apply_environment();
    ConfigSetting& find(const std::string& key);
    const ConfigSetting& find(const std::string& key) const;

    std::string path_;
    std::vector<ConfigSetting> settings_;
    std::vector<std::string> folders_;
    std::map<std::string, std::string> aliases_;
    std::map<std::string, Preset> presets_;
    McpServers mcp_servers_;
};

// "512MiB" -> 536870912; "2G" and "2GiB" are both 2^31 (a size of memory);
// plain digits are bytes. Throws kiln::Error naming `what` on anything else.
uint64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace kiln
