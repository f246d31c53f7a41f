// The config file (kiln/config.h): a strict JSON reader over one table of scalar
// settings, plus the catalog's folders, aliases and presets.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/config.h"
#include "kiln/error.h"

namespace kiln {

namespace {

enum class Kind { Text, Int, Bytes };

struct SettingRow {
    const char* key;
    Kind kind;
    const char* def;
    const char* env;
    const char* meaning;
};

// Every scalar setting: its key (a dot is one level of the file's objects), type,
// built-in default, environment variable and meaning. Adding one is adding a row.
const SettingRow k_settings[] = {
    {"default_model", Kind::Text, "", "KILN_MODEL", "model used without -m (built-in: SmolLM2-135M-Instruct.Q4_1 of $KILN_MODELS)"},
    {"server.host", Kind::Text, "127.0.0.1", "KILN_HOST", "kiln serve: listening address"},
    {"server.port", Kind::Int, "8080", "KILN_PORT", "kiln serve: port"},
    {"server.parallel", Kind::Int, "4", "KILN_PARALLEL", "kiln serve: sequences generated at once per model"},
    {"server.ctx_size", Kind::Int, "0", "KILN_CTX_SIZE", "kiln serve: context of one sequence (0: the model's, at most 4096)"},
    {"server.threads", Kind::Int, "0", "KILN_THREADS", "kiln serve: threads (0: physical cores)"},
    {"server.memory_budget", Kind::Bytes, "0", "KILN_MEMORY_BUDGET", "kiln serve: bytes for the sequences' memory (0: no cap)"},
    {"server.max_models", Kind::Int, "0", "KILN_MAX_MODELS", "kiln serve: models resident at once (0: no limit)"},
    {"server.models_dir", Kind::Text, "", "", "kiln serve: also offer every .gguf file in this folder"},
    // Written by kiln autotune; used only on the CPU they were measured on.
    {"tuned.threads", Kind::Int, "0", "", "kiln run / chat / serve: threads when no flag or other setting gives them (kiln autotune)"},
    {"tuned.batch_size", Kind::Int, "0", "", "kiln run / chat: prompt tokens per forward pass (kiln autotune; 0: built-in)"},
    {"tuned.kv_type", Kind::Text, "", "", "kiln run / chat: KV cache type (kiln autotune; empty: f16)"},
    {"tuned.cpu", Kind::Text, "", "", "the CPU kiln autotune measured (the tuned settings apply on it only)"},
    {"tuned.model", Kind::Text, "", "", "the model kiln autotune measured"},
};

std::string env(const char* name) {
    const char* v = name && *name ? std::getenv(name) : nullptr;
    return v && *v ? v : "";
}

const char* json_type(const nlohmann::ordered_json& j) { return j.type_name(); }

[[noreturn]] void bad(const std::string& origin, const std::string& key, const std::string& what) {
    throw Error(origin + ": '" + key + "': " + what);
}

std::string expect_string(const nlohmann::ordered_json& j, const std::string& origin, const std::string& key) {
    if (!j.is_string()) bad(origin, key, std::string("expected a string, found ") + json_type(j));
    return j.get<std::string>();
}

bool is_hex64(const std::string& s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

const char* k_sampling_keys[] = {"temperature", "top_k", "top_p", "min_p", "seed", "n_predict"};

Preset read_preset(const nlohmann::ordered_json& j, const std::string& origin, const std::string& key) {
    if (!j.is_object()) bad(origin, key, std::string("expected an object, found ") + json_type(j));
    Preset p;
    for (const auto& [k, v] : j.items()) {
        const std::string sub = key + "." + k;
        if (k == "model") {
            p.model = expect_string(v, origin, sub);
        } else if (k == "sha256") {
            p.sha256 = expect_string(v, origin, sub);
            if (!is_hex64(p.sha256)) bad(origin, sub, "expected 64 hex digits, found '" + p.sha256 + "'");
            for (char& c : p.sha256) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        } else if (k == "context") {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 24))
                bad(origin, sub, std::string("expected an integer 0..16777216, found ") + v.dump());
            p.n_ctx = v.get<int>();
        } else if (k == "sampling") {
            if (!v.is_object()) bad(origin, sub, std::string("expected an object, found ") + json_type(v));
            for (const auto& [sk, sv] : v.items()) {
                bool known = false;
                for (const char* name : k_sampling_keys) known |= sk == name;
                if (!known) bad(origin, sub + "." + sk, "unknown key (known: temperature, top_k, top_p, min_p, seed, n_predict)");
                if (!sv.is_number()) bad(origin, sub + "." + sk, std::string("expected a number, found ") + json_type(sv));
                p.sampling[sk] = sv.get<double>();
            }
        } else {
            bad(origin, sub, "unknown key (known: model, sha256, context, sampling)");
        }
    }
    if (p.model.empty()) bad(origin, key + ".model", "missing: a preset names its model");
    if (p.sha256.empty()) bad(origin, key + ".sha256", "missing: a preset pins its file's SHA-256");
    return p;
}

}  // namespace

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
    size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == 0 || i > 19) throw Error(what + ": expected a size such as 512MiB or 2G, found '" + text + "'");
    const uint64_t n = std::stoull(text.substr(0, i));
    std::string unit = text.substr(i);
    while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    int shift = -1;
    if (unit.empty() || unit == "b") shift = 0;
    else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
    else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
    else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
    else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
    if (shift < 0) throw Error(what + ": unknown unit '" + text.substr(i) + "' (B, KiB, MiB, GiB, TiB)");
    if (shift > 0 && n > (~uint64_t{0} >> shift)) throw Error(what + ": '" + text + "' is too large");
    return n << shift;
}

Config::Config() {
    for (const SettingRow& r : k_settings) settings_.push_back({r.key, r.def, "built-in", r.env, r.meaning});
}

ConfigSetting& Config::find(const std::string& key) {
    for (ConfigSetting& s : settings_)
        if (s.key == key) return s;
    throw Error("config: no setting '" + key + "'", ErrorKind::Internal);
}

const ConfigSetting& Config::find(const std::string& key) const { return const_cast<Config*>(this)->find(key); }

std::string Config::get(const std::string& key) const { return find(key).value; }
const std::string& Config::origin(const std::string& key) const { return find(key).origin; }
void Config::set_flag(const std::string& key, const std::string& value) {
    ConfigSetting& s = find(key);
    s.value = value;
    s.origin = "flag";
}

int Config::get_int(const std::string& key) const {
    const ConfigSetting& s = find(key);
    size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(s.value, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != s.value.size() || v < 0 || v > (1ll << 30))
        throw Error(key + " (" + s.origin + "): expected a non-negative integer, found '" + s.value + "'");
    return static_cast<int>(v);
}

uint64_t Config::get_bytes(const std::string& key) const {
    const ConfigSetting& s = find(key);
    return parse_byte_size(s.value, key + " (" + s.origin + ")");
}

void Config::apply_environment() {
    for (ConfigSetting& s : settings_) {
        const std::string v = env(s.env.c_str());
        if (v.empty()) continue;
        s.value = v;
        s.origin = "environment " + s.env;
    }
    if (const std::string f = env("KILN_MCP_CONFIG"); !f.empty()) {
        mcp_servers_ = McpServers{};
        mcp_servers_.file = f;
        mcp_servers_.origin = "environment KILN_MCP_CONFIG";
    }
    // Typed settings fail here, naming the variable, rather than at first use.
    for (const SettingRow& r : k_settings) {
        if (r.kind == Kind::Int) (void)get_int(r.key);
        if (r.kind == Kind::Bytes) (void)get_bytes(r.key);
    }
}

Config Config::parse(const std::string& json_text, const std::string& origin_name) {
    Config c;
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(json_text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(origin_name + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object()) throw Error(origin_name + ": expected a JSON object at the top, found " + json_type(j));
    const std::string origin = "file " + origin_name;
    // A scalar setting at `key` (dotted), or an error naming it.
    auto set_scalar = [&](const std::string& key, const nlohmann::ordered_json& v) {
        const SettingRow* row = nullptr;
        for (const SettingRow& r : k_settings)
            if (key == r.key) row = &r;
        if (!row) bad(origin_name, key, "unknown key");
        std::string text;
        if (row->kind == Kind::Text) {
            text = expect_string(v, origin_name, key);
        } else if (row->kind == Kind::Int) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0) bad(origin_name, key, "expected a non-negative integer, found " + v.dump());
            text = std::to_string(v.get<int64_t>());
        } else {
            if (v.is_number_integer() && v.get<int64_t>() >= 0) text = std::to_string(v.get<int64_t>());
            else if (v.is_string()) text = std::to_string(parse_byte_size(v.get<std::string>(), origin_name + ": '" + key + "'"));
            else bad(origin_name, key, "expected bytes (an integer or a string such as \"512MiB\"), found " + v.dump());
        }
        ConfigSetting& s = c.find(key);
        s.value = text;
        s.origin = origin;
    };
    for (const auto& [k, v] : j.items()) {
        if (k == "model_folders") {
            if (!v.is_array()) bad(origin_name, k, std::string("expected an array of folders, found ") + json_type(v));
            for (size_t i = 0; i < v.size(); ++i) c.folders_.push_back(expect_string(v[i], origin_name, k + "[" + std::to_string(i) + "]"));
        } else if (k == "aliases") {
            if (!v.is_object()) bad(origin_name, k, std::string("expected an object of name -> model, found ") + json_type(v));
            for (const auto& [name, target] : v.items()) c.aliases_[name] = expect_string(target, origin_name, k + "." + name);
        } else if (k == "presets") {
            if (!v.is_object()) bad(origin_name, k, std::string("expected an object of name -> preset, found ") + json_type(v));
            for (const auto& [name, p] : v.items()) c.presets_[name] = read_preset(p, origin_name, k + "." + name);
        } else if (k == "mcp_servers") {
            // Checked server by server by the agent's parser (kiln/mcp.h) when the CLI loads the config.
            if (!v.is_object()) bad(origin_name, k, std::string("expected an object of MCP servers by name, found ") + json_type(v));
            c.mcp_servers_.json_text = v.dump();
            c.mcp_servers_.where = origin_name + ": mcp_servers";
            c.mcp_servers_.base_dir = std::filesystem::path(origin_name).parent_path().string();
            c.mcp_servers_.origin = origin;
        } else if (k == "server" || k == "tuned") {
            if (!v.is_object()) bad(origin_name, k, std::string("expected an object, found ") + json_type(v));
            for (const auto& [sk, sv] : v.items()) set_scalar(k + "." + sk, sv);
        } else {
            set_scalar(k, v);
        }
    }
    for (const auto& [name, target] : c.aliases_)
        if (c.presets_.count(name)) bad(origin_name, "aliases." + name, "is also a preset's name");
    c.apply_environment();
    return c;
}

std::string Config::default_path() {
    const std::string xdg = env("XDG_CONFIG_HOME");
    const std::string home = env("HOME");
    return (xdg.empty() ? (home.empty() ? std::string(".") : home) + "/.config" : xdg) + "/kiln/config.json";
}

Config Config::load(const std::string& path) {
    std::string file = path, why = "--config";
    if (file.empty() && !env("KILN_CONFIG").empty()) file = env("KILN_CONFIG"), why = "KILN_CONFIG";
    if (file.empty()) {
        const std::string def = default_path();
        std::error_code ec;
        if (!std::filesystem::exists(def, ec)) {
            Config c;
            c.apply_environment();
            return c;
        }
        file = def;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(file + ": cannot read the config file (named by " + why + ")");
    std::stringstream ss;
    ss << in.rdbuf();
    Config c = parse(ss.str(), file);
    c.path_ = file;
    return c;
}

CatalogOptions Config::catalog_options() const {
    CatalogOptions o = CatalogOptions::from_environment();
    o.folders = folders_;
    o.aliases = aliases_;
    o.presets = presets_;
    return o;
}

}  // namespace kiln
