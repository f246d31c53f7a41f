// The config file: strict keys and types, precedence flag > environment > file >
// built-in, and what it gives the catalog.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kiln/config.h"
#include "kiln/error.h"
#include "support/test_support.h"

using kiln::Config;

namespace {

std::string parse_error(const std::string& json) {
    try {
        Config::parse(json, "cfg.json");
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

struct EnvGuard {
    std::string name;
    explicit EnvGuard(std::string n, const char* value) : name(std::move(n)) { setenv(name.c_str(), value, 1); }
    ~EnvGuard() { unsetenv(name.c_str()); }
};

}  // namespace

TEST(Config, ReadsEveryKindOfKey) {
    const std::string sha(64, 'A');
    const Config c = Config::parse(R"({
        "model_folders": ["/models/a", "/models/b"],
        "aliases": {"small": "smollm2:135m"},
        "presets": {"pinned": {"model": "hf:o/r:Q4_K_M", "sha256": ")" + sha + R"(", "context": 2048,
                                "sampling": {"temperature": 0.2, "top_k": 20}}},
        "default_model": "small",
        "server": {"port": 9090, "memory_budget": "512MiB", "host": "0.0.0.0"}
    })", "cfg.json");
    EXPECT_EQ(c.model_folders(), (std::vector<std::string>{"/models/a", "/models/b"}));
    EXPECT_EQ(c.aliases().at("small"), "smollm2:135m");
    const kiln::Preset& p = c.presets().at("pinned");
    EXPECT_EQ(p.sha256, std::string(64, 'a'));  // stored lower-case
    EXPECT_EQ(p.n_ctx, 2048);
    EXPECT_EQ(p.sampling.at("top_k"), 20);
    EXPECT_EQ(c.get("default_model"), "small");
    EXPECT_EQ(c.get_int("server.port"), 9090);
    EXPECT_EQ(c.get_bytes("server.memory_budget"), 512u << 20);
    EXPECT_EQ(c.origin("server.port"), "file cfg.json");
    EXPECT_EQ(c.get_int("server.parallel"), 4);
    EXPECT_EQ(c.origin("server.parallel"), "built-in");
    const kiln::CatalogOptions o = c.catalog_options();
    EXPECT_EQ(o.folders.size(), 2u);
    EXPECT_EQ(o.aliases.size(), 1u);
    EXPECT_EQ(o.presets.size(), 1u);
}

TEST(Config, PrecedenceFlagEnvironmentFileBuiltIn) {
    const std::string json = R"({"server": {"port": 9090, "parallel": 2}})";
    {
        EnvGuard port("KILN_PORT", "7070");
        Config c = Config::parse(json, "cfg.json");
        EXPECT_EQ(c.get_int("server.port"), 7070);
        EXPECT_EQ(c.origin("server.port"), "environment KILN_PORT");
        EXPECT_EQ(c.get_int("server.parallel"), 2);
        EXPECT_EQ(c.origin("server.parallel"), "file cfg.json");
        EXPECT_EQ(c.get("server.host"), "127.0.0.1");
        EXPECT_EQ(c.origin("server.host"), "built-in");
        c.set_flag("server.port", "6060");
        EXPECT_EQ(c.get_int("server.port"), 6060);
        EXPECT_EQ(c.origin("server.port"), "flag");
    }
    {
        EnvGuard bad("KILN_PORT", "eighty");
        try {
            Config::parse(json, "cfg.json");
            FAIL() << "a non-integer KILN_PORT was accepted";
        } catch (const kiln::Error& e) {
            EXPECT_NE(std::string(e.what()).find("KILN_PORT"), std::string::npos) << e.what();
        }
    }
}

TEST(Config, LoadsTheNamedFileOrNone) {
    const std::string path = kiln::test::temp_dir() + "/config.json";
    kiln::test::write_file(path, R"({"default_model": "smol"})");
    const Config c = Config::load(path);
    EXPECT_EQ(c.path(), path);
    EXPECT_EQ(c.origin("default_model"), "file " + path);
    {
        EnvGuard cfg("KILN_CONFIG", path.c_str());
        EXPECT_EQ(Config::load().get("default_model"), "smol");
    }
    {
        EnvGuard home("XDG_CONFIG_HOME", (kiln::test::temp_dir() + "/no-such-dir").c_str());
        const Config none = Config::load();
        EXPECT_EQ(none.path(), "");
        EXPECT_EQ(none.origin("default_model"), "built-in");
    }
    EXPECT_THROW(Config::load(path + ".missing"), kiln::Error);
}

TEST(Config, UnknownKeysAndWrongTypesAreErrorsNamingThem) {
    EXPECT_NE(parse_error(R"({"model_folder": []})").find("'model_folder': unknown key"), std::string::npos);
    EXPECT_NE(parse_error(R"({"server": {"prot": 1}})").find("'server.prot': unknown key"), std::string::npos);
    EXPECT_NE(parse_error(R"({"server": {"port": "80"}})").find("'server.port': expected a non-negative integer"), std::string::npos);
    EXPECT_NE(parse_error(R"({"server": {"memory_budget": "lots"}})").find("server.memory_budget"), std::string::npos);
    EXPECT_NE(parse_error(R"({"model_folders": [1]})").find("'model_folders[0]': expected a string"), std::string::npos);
    EXPECT_NE(parse_error(R"({"aliases": {"a": 1}})").find("'aliases.a'"), std::string::npos);
    EXPECT_NE(parse_error(R"({"presets": {"p": {"model": "m"}}})").find("'presets.p.sha256': missing"), std::string::npos);
    EXPECT_NE(parse_error(R"({"presets": {"p": {"model": "m", "sha256": "abc"}}})").find("64 hex digits"), std::string::npos);
    EXPECT_NE(parse_error(R"({"presets": {"p": {"model": "m", "sha256": ")" + std::string(64, 'a') + R"(", "colour": 1}}})")
                  .find("'presets.p.colour': unknown key"),
              std::string::npos);
    EXPECT_NE(parse_error(R"({"presets": {"p": {"model": "m", "sha256": ")" + std::string(64, 'a') + R"(", "sampling": {"temp": 1}}}})")
                  .find("'presets.p.sampling.temp': unknown key"),
              std::string::npos);
    EXPECT_NE(parse_error(R"([1])").find("expected a JSON object"), std::string::npos);
    EXPECT_NE(parse_error(R"({"a":)").find("not valid JSON"), std::string::npos);
    EXPECT_NE(parse_error(R"({"aliases": {"p": "x"}, "presets": {"p": {"model": "m", "sha256": ")" + std::string(64, 'a') + R"("}}})")
                  .find("also a preset"),
              std::string::npos);
}

TEST(Config, ByteSizes) {
    EXPECT_EQ(kiln::parse_byte_size("1048576", "x"), 1048576u);
    EXPECT_EQ(kiln::parse_byte_size("512MiB", "x"), 512u << 20);
    EXPECT_EQ(kiln::parse_byte_size("2G", "x"), uint64_t{2} << 30);
    EXPECT_EQ(kiln::parse_byte_size("2 gb", "x"), uint64_t{2} << 30);
    EXPECT_THROW(kiln::parse_byte_size("2 parsecs", "x"), kiln::Error);
    EXPECT_THROW(kiln::parse_byte_size("", "x"), kiln::Error);
    EXPECT_THROW(kiln::parse_byte_size("99999999999TiB", "x"), kiln::Error);
}
