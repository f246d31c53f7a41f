// kiln plan / list / config as a user runs them: the planned peak against the
// measured peak RSS of kiln bench, the list's JSON fields, the config's origins.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

using kiln::test::run_kiln;
namespace fs = std::filesystem;

namespace {

// Peak RSS in bytes of `kiln bench ...` as /usr/bin/time -f %M reports it.
double bench_peak_rss(const std::string& args) {
    const std::string marker = "PEAK_RSS_KIB=";
    const std::string cmd = "/usr/bin/time -f '" + marker + "%M' " + std::string(KILN_BINARY_DIR) + "/kiln bench " + args +
                            " 2>&1 >/dev/null | grep " + marker;
    std::FILE* p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    char buf[256] = {};
    std::string out;
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    const size_t at = out.find(marker);
    if (at == std::string::npos) return -1;
    return std::stod(out.substr(at + marker.size())) * 1024.0;
}

}  // namespace

// The plan's total_bytes is within 5% of the measured peak RSS of
// `kiln bench -m MODEL -c C -p C-48 -n 16 -r 1` (its machine probes included
// at -c 512: they run in a process whose memory does not count) on both real
// models at three context sizes. Long checks (README): KILN_PLAN_MODELS (paths,
// comma-separated: the 1B bench models) and KILN_PLAN_CTX (sizes, e.g. 1024,2048,4096)
// replace the models and the sizes.
TEST(CliPlan, TotalWithinFivePercentOfBenchPeakRss) {
    if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "/usr/bin/time (GNU time) is not installed";
    auto list = [](const char* env, std::vector<std::string> fallback) {
        const char* v = std::getenv(env);
        if (!v || !*v) return fallback;
        std::vector<std::string> items;
        std::stringstream ss(v);
        for (std::string item; std::getline(ss, item, ',');)
            if (!item.empty()) items.push_back(item);
        return items;
    };
    const auto models = list("KILN_PLAN_MODELS", {kiln::test::smollm2_path(), kiln::test::gemma3_path()});
    const auto sizes = list("KILN_PLAN_CTX", {"512", "1024", "2048"});
    for (const std::string& model : models) {
        KILN_REQUIRE_MODEL(model);
        for (const std::string& size : sizes) {
            const int c = std::stoi(size);
            auto plan = run_kiln("plan -m " + model + " -c " + std::to_string(c) + " --json");
            ASSERT_EQ(plan.status, 0) << plan.err;
            const auto j = nlohmann::json::parse(plan.out);
            // total_bytes is the only key containing "total".
            int totals = 0;
            for (const auto& [k, v] : j.items()) totals += k.find("total") != std::string::npos;
            for (const auto& [k, v] : j["breakdown"].items()) totals += k.find("total") != std::string::npos;
            EXPECT_EQ(totals, 1);
            EXPECT_TRUE(j["fits"].get<bool>());
            EXPECT_EQ(j["n_ctx"], c);
            // Sliding-window checkpoints (Gemma 3's rings, once a ring is shorter than
            // the context) are shown apart: bench takes none.
            const auto checkpoints = j["window_checkpoints_max_bytes"].get<uint64_t>();
            if (j["architecture"] != "gemma3") EXPECT_EQ(checkpoints, 0u) << plan.out;
            if (j["architecture"] == "gemma3" && c >= 2048) EXPECT_GT(checkpoints, 0u) << plan.out;
            const double planned = j["total_bytes"].get<double>();
            // The probes (about 4 s) run once, at the first size, to show they do not count.
            const bool probe = size == sizes.front() && model == models.front();
            const double measured = bench_peak_rss("-m " + model + " -c " + std::to_string(c) + " -p " + std::to_string(c - 48) +
                                                   " -n 16 -r 1" + (probe ? "" : " --no-probe"));
            ASSERT_GT(measured, 0) << "no peak RSS from /usr/bin/time";
            EXPECT_LT(std::fabs(planned / measured - 1.0), 0.05)
                << model << " -c " << c << ": planned " << planned << " bytes, measured " << measured;
            std::printf("%s -c %d: planned %.1f MiB, measured %.1f MiB (%+.2f%%)\n", fs::path(model).filename().c_str(), c,
                        planned / 1048576.0, measured / 1048576.0, 100.0 * (planned / measured - 1.0));
        }
    }
}

// A budget the load does not fit is refused with the numbers and a context that fits.
TEST(CliPlan, RefusesWhatDoesNotFitWithAdvice) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto r = run_kiln("plan -m " + kiln::test::gemma3_path() + " -c 32768 --memory-budget 400MiB --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j["fits"].get<bool>());
    const std::string advice = j["advice"];
    EXPECT_NE(advice.find("more than --memory-budget of 400 MiB"), std::string::npos) << advice;
    const size_t at = advice.find("; -c ");
    ASSERT_NE(at, std::string::npos) << advice;
    const int suggested = std::stoi(advice.substr(at + 5));
    EXPECT_GT(suggested, 0);
    EXPECT_LT(suggested, 32768);
    // The suggestion really fits the budget.
    auto s = run_kiln("plan -m " + kiln::test::gemma3_path() + " -c " + std::to_string(suggested) + " --memory-budget 400MiB --json");
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_TRUE(nlohmann::json::parse(s.out)["fits"].get<bool>());
    // Weights alone above the budget: no context fits.
    auto w = run_kiln("plan -m " + kiln::test::gemma3_path() + " --memory-budget 100MiB");
    EXPECT_NE(w.out.find("no context fits"), std::string::npos) << w.out;
    // A context above the model's is an error naming both.
    auto e = run_kiln("plan -m " + kiln::test::smollm2_path() + " -c 100000");
    EXPECT_EQ(e.status, 1);
    EXPECT_NE(e.err.find("exceeds the model's maximum of 8192"), std::string::npos) << e.err;
}

// A draft model (speculative decoding) is part of the plan: its own resident
// parts, less the process counted once, at the target's context capped at its
// own trained one; run's pre-check uses the same plan.
TEST(CliPlan, CountsTheDraftModel) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string m = kiln::test::smollm2_path();
    auto plan = [&](const std::string& args) {
        auto r = run_kiln("plan " + args + " --json");
        EXPECT_EQ(r.status, 0) << r.err;
        return nlohmann::json::parse(r.out);
    };
    const auto alone = plan("-m " + m + " -c 512");
    const auto with = plan("-m " + m + " -c 512 --draft-model " + m);
    ASSERT_TRUE(with["breakdown"].contains("draft_model")) << with.dump();
    EXPECT_FALSE(alone["breakdown"].contains("draft_model"));
    const double draft = with["breakdown"]["draft_model"].get<double>();
    const double process = alone["breakdown"]["process"].get<double>();
    // The same model as its own draft: its parts again, without a second process
    // (the process part is measured, so each plan's differs by a little).
    constexpr double k_measured = 2 << 20;
    EXPECT_NEAR(draft, alone["run_bytes"].get<double>() - process, k_measured);
    EXPECT_NEAR(with["run_bytes"].get<double>(), alone["run_bytes"].get<double>() + draft, k_measured);
    EXPECT_EQ(with["total_bytes"].get<uint64_t>(), std::max(with["run_bytes"].get<uint64_t>(), with["load_peak_bytes"].get<uint64_t>()));
    // A budget the pair does not fit is refused, though the target alone fits it.
    const std::string budget = std::to_string(static_cast<uint64_t>((alone["total_bytes"].get<double>() + draft / 2) / 1024)) + "KiB";
    EXPECT_TRUE(plan("-m " + m + " -c 512 --memory-budget " + budget)["fits"].get<bool>());
    EXPECT_FALSE(plan("-m " + m + " -c 512 --memory-budget " + budget + " --draft-model " + m)["fits"].get<bool>());
}

// --experts-memory: expert layers past it stay in the file's mapping (read in
// place, through the page cache), so the plan leaves them out of total_bytes and
// names them; run loads them so (its load note says which layers) and writes the
// same text as a load that repacks every expert.
TEST(CliPlan, ExpertsPastTheBudgetAreReadInPlaceNotCounted) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string m = kiln::test::temp_dir() + "/cli-experts-qwen3moe.gguf";
    kiln::test::write_tiny_model("qwen3moe", kiln::test::smollm2_path(), m);
    auto plan = [&](const std::string& args) {
        auto r = run_kiln("plan -m " + m + " -c 64 " + args + " --json");
        EXPECT_EQ(r.status, 0) << r.err;
        return nlohmann::json::parse(r.out);
    };
    const auto whole = plan(""), none = plan("--experts-memory 0");
    EXPECT_EQ(whole["experts_in_place_bytes"].get<uint64_t>(), 0u);
    const uint64_t in_place = none["experts_in_place_bytes"].get<uint64_t>();
    EXPECT_GT(in_place, 0u);
    EXPECT_LT(none["total_bytes"].get<uint64_t>(), whole["total_bytes"].get<uint64_t>());
    auto text = run_kiln("plan -m " + m + " -c 64 --experts-memory 0");
    EXPECT_NE(text.out.find("experts read in place from the file"), std::string::npos) << text.out;

    const std::string gen = "run -m " + m + " -p 'Once upon a time' -n 12 --temp 0 -c 64 -v";
    auto all = run_kiln(gen), mapped = run_kiln(gen + " --experts-memory 0");
    ASSERT_EQ(all.status, 0) << all.err;
    ASSERT_EQ(mapped.status, 0) << mapped.err;
    EXPECT_EQ(all.out, mapped.out);
    EXPECT_EQ(all.err.find("experts read in place"), std::string::npos) << all.err;
    EXPECT_NE(mapped.err.find("experts read in place from the file"), std::string::npos) << mapped.err;
}

// kiln list --json over a home with an Ollama store and a kiln folder; kiln
// config --print says where each value came from.
TEST(CliList, JsonFieldsAndConfigOrigins) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const fs::path home = fs::path(kiln::test::temp_dir()) / "cli-home";
    fs::remove_all(home);
    const fs::path model = fs::absolute(kiln::test::smollm2_path());
    const std::string digest(64, 'e');
    fs::create_directories(home / ".ollama/models/blobs");
    fs::create_symlink(model, home / ".ollama/models/blobs" / ("sha256-" + digest));
    fs::create_directories(home / ".ollama/models/manifests/registry.ollama.ai/library/smollm2");
    kiln::test::write_file((home / ".ollama/models/manifests/registry.ollama.ai/library/smollm2/135m").string(),
                           R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + digest + R"("}]})");
    fs::create_directories(home / "models");
    fs::create_symlink(model, home / "models" / "smol.gguf");
    fs::create_directories(home / ".config/kiln");
    kiln::test::write_file((home / ".config/kiln/config.json").string(),
                           R"({"aliases": {"tiny": "smollm2:135m"}, "server": {"port": 9191, "parallel": 2}})");
    const std::string env = "env -u XDG_CONFIG_HOME -u KILN_CONFIG -u HF_HOME -u HF_HUB_CACHE -u OLLAMA_MODELS -u XDG_CACHE_HOME HOME=" +
                            home.string() + " KILN_MODELS=" + (home / "models").string() + " ";
    const std::string kiln = std::string(KILN_BINARY_DIR) + "/kiln ";
    auto list = run_kiln("list --json");  // the runner's own environment: it must not fail
    EXPECT_EQ(list.status, 0) << list.err;
    std::FILE* p = popen((env + kiln + "list --json").c_str(), "r");
    ASSERT_TRUE(p);
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0);
    const auto arr = nlohmann::json::parse(out);
    ASSERT_TRUE(arr.is_array());
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& e : arr) by_name[e["name"]] = e;
    ASSERT_TRUE(by_name.count("smollm2:135m")) << out;
    ASSERT_TRUE(by_name.count("smol")) << out;
    for (const char* name : {"smollm2:135m", "smol"}) {
        const auto& e = by_name[name];
        for (const char* key : {"name", "source", "path", "architecture", "file_size", "quantization", "context_length", "fits"})
            EXPECT_TRUE(e.contains(key)) << name << " lacks " << key;
        EXPECT_EQ(e["architecture"], "llama");
        EXPECT_EQ(e["quantization"], "Q4_1");
        EXPECT_EQ(e["file_size"], 98362432);
        EXPECT_EQ(e["context_length"], 8192);
        EXPECT_TRUE(e["fits"].get<bool>());
    }
    EXPECT_EQ(by_name["smollm2:135m"]["source"], "ollama");
    EXPECT_EQ(by_name["smol"]["source"], "kiln");
    // The alias resolves for -m (tokenize loads only the tokenizer).
    p = popen((env + kiln + "tokenize -m tiny --text hi --json 2>&1").c_str(), "r");
    ASSERT_TRUE(p);
    out.clear();
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << out;
    EXPECT_EQ(out.front(), '[') << out;
    // Origins: the file, the environment over it, built-in defaults.
    p = popen((env + "KILN_PARALLEL=3 " + kiln + "config --print --json").c_str(), "r");
    ASSERT_TRUE(p);
    out.clear();
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0);
    const auto cfg = nlohmann::json::parse(out);
    const std::string file = (home / ".config/kiln/config.json").string();
    EXPECT_EQ(cfg["file"], file);
    EXPECT_EQ(cfg["settings"]["server.port"]["value"], "9191");
    EXPECT_EQ(cfg["settings"]["server.port"]["origin"], "file " + file);
    EXPECT_EQ(cfg["settings"]["server.parallel"]["value"], "3");
    EXPECT_EQ(cfg["settings"]["server.parallel"]["origin"], "environment KILN_PARALLEL");
    EXPECT_EQ(cfg["settings"]["server.host"]["origin"], "built-in");
    EXPECT_EQ(cfg["aliases"]["tiny"], "smollm2:135m");
    // --config names another file; an unknown key in it is an error naming it.
    const std::string bad = (home / "bad.json").string();
    kiln::test::write_file(bad, R"({"sever": {}})");
    auto r = run_kiln("--config " + bad + " config --print");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("'sever': unknown key"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
}

// kiln serve takes its defaults from the config under its flags.
TEST(CliServe, PrintConfigShowsPrecedence) {
    const std::string cfg = kiln::test::temp_dir() + "/serve-config.json";
    kiln::test::write_file(cfg, R"({"server": {"port": 9393, "parallel": 2, "host": "127.0.0.2"}})");
    std::FILE* p = popen(("KILN_PORT=7070 " + std::string(KILN_BINARY_DIR) + "/kiln serve --config " + cfg +
                          " --print-config --parallel 3 2>&1")
                             .c_str(),
                         "r");
    ASSERT_TRUE(p);
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << out;
    EXPECT_NE(out.find("server.port = 7070 (environment KILN_PORT)"), std::string::npos) << out;
    EXPECT_NE(out.find("server.parallel = 3 (flag)"), std::string::npos) << out;
    EXPECT_NE(out.find("server.host = 127.0.0.2 (file " + cfg + ")"), std::string::npos) << out;
    EXPECT_NE(out.find("server.max_models = 0 (built-in)"), std::string::npos) << out;
}

// kiln autotune measures, prints its tables and writes the "tuned" section beside
// what the file already holds; run / chat / serve read it on this CPU only.
TEST(CliModels, AutotuneWritesTheTunedSectionThatRunAndChatRead) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string cfg = kiln::test::temp_dir() + "/autotune-config.json";
    kiln::test::write_file(cfg, R"({"server": {"parallel": 2}})");
    kiln::test::write_file(kiln::test::temp_dir() + "/autotune-empty.json", "{}");
    auto r = run_kiln("--config " + cfg + " autotune -m '" + kiln::test::smollm2_path() + "' --rounds 1");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* header : {"threads", "prefill t/s", "decode t/s", "batch", "kv type", "best here: threads"})
        EXPECT_NE(r.out.find(header), std::string::npos) << header << "\n" << r.out;
    EXPECT_NE(r.out.find("q8_0"), std::string::npos) << r.out;
    const nlohmann::json j = nlohmann::json::parse(kiln::test::read_file(cfg));
    EXPECT_EQ(j["server"]["parallel"], 2);  // kept
    const nlohmann::json& t = j["tuned"];
    ASSERT_TRUE(t.is_object()) << j.dump();
    EXPECT_GE(t["threads"].get<int>(), 1);
    EXPECT_TRUE(t["batch_size"] == 64 || t["batch_size"] == 128 || t["batch_size"] == 256 || t["batch_size"] == 512) << t;
    EXPECT_TRUE(t["kv_type"] == "f16" || t["kv_type"] == "f32") << t;  // q8_0 only with --lossy-kv
    EXPECT_FALSE(t["cpu"].get<std::string>().empty());
    // config --print shows them with the file as their origin.
    r = run_kiln("--config " + cfg + " config --print");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("| tuned.threads | " + std::to_string(t["threads"].get<int>()) + " | file " + cfg), std::string::npos) << r.out;
    // kiln run uses them (its -v line names the threads and the KV type) ...
    r = run_kiln("--config " + cfg + " run -m '" + kiln::test::smollm2_path() + "' -p Hi -n 2 --temp 0 -v");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(std::to_string(t["threads"].get<int>()) + " thread"), std::string::npos) << r.err;
    // ... but not on another CPU.
    nlohmann::json other = j;
    other["tuned"]["cpu"] = "some other CPU, 64 threads, avx2";
    other["tuned"]["threads"] = 1;
    kiln::test::write_file(cfg, other.dump());
    r = run_kiln("--config " + cfg + " run -m '" + kiln::test::smollm2_path() + "' -p Hi -n 2 --temp 0 -v");
    ASSERT_EQ(r.status, 0) << r.err;
    auto threads_line = [](const std::string& err) {
        const size_t at = err.find(" threads\n");
        return at == std::string::npos ? std::string() : err.substr(err.rfind(';', at), at - err.rfind(';', at));
    };
    const auto untuned = run_kiln("--config " + kiln::test::temp_dir() + "/autotune-empty.json run -m '" +
                                  kiln::test::smollm2_path() + "' -p Hi -n 2 --temp 0 -v");
    EXPECT_FALSE(threads_line(r.err).empty()) << r.err;
    EXPECT_EQ(threads_line(r.err), threads_line(untuned.err)) << r.err;
    // kiln chat reads them too: a tuned f32 KV cache doubles the cache its -v line
    // reports against the untuned (f16) run.
    nlohmann::json f32 = j;
    f32["tuned"]["kv_type"] = "f32";
    kiln::test::write_file(cfg, f32.dump());
    auto cache_mib = [](const std::string& err) {
        const size_t at = err.find("KV cache ");
        return at == std::string::npos ? -1.0 : std::stod(err.substr(at + 9));
    };
    const std::string chat_args = " chat -m '" + kiln::test::smollm2_path() + "' -c 512 --temp 0 -n 2 -v";
    r = run_kiln("--config " + cfg + chat_args, "Hi\n/exit\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto chat_untuned = run_kiln("--config " + kiln::test::temp_dir() + "/autotune-empty.json" + chat_args, "Hi\n/exit\n");
    ASSERT_EQ(chat_untuned.status, 0) << chat_untuned.err;
    EXPECT_GT(cache_mib(chat_untuned.err), 0) << chat_untuned.err;
    EXPECT_NEAR(cache_mib(r.err), 2 * cache_mib(chat_untuned.err), 0.15) << r.err << chat_untuned.err;  // printed to 0.1 MiB
    // kiln serve takes all three where no flag and no server.* key sets them
    // (tests/server/test_server_options.py: what serve is given reaches /props).
    f32["tuned"]["batch_size"] = 64;
    f32["tuned"]["threads"] = 1;
    kiln::test::write_file(cfg, f32.dump());
    r = run_kiln("--config " + cfg + " serve --print-config");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* line : {"server.threads = 1 (kiln autotune, this CPU)\n", "batch_size = 64 (kiln autotune, this CPU)\n",
                             "kv_type = f32 (kiln autotune, this CPU)\n"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
    r = run_kiln("--config " + cfg + " serve --print-config --kv-type q8_0 -b 32 -t 2 --experts-memory 1GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* line : {"server.threads = 2 (flag)\n", "batch_size = 32 (flag)\n", "kv_type = q8_0 (flag)\n",
                             "experts_memory = 1073741824 (flag)\n"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
    r = run_kiln("--config " + kiln::test::temp_dir() + "/autotune-empty.json serve --print-config");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* line : {"server.threads = 0 (built-in)\n", "batch_size = 256 (built-in)\n", "kv_type = f16 (built-in)\n"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
    // An unknown key under "tuned" is an error naming it, as anywhere in the file.
    kiln::test::write_file(cfg, R"({"tuned": {"thread": 2}})");
    r = run_kiln("--config " + cfg + " config --print");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("tuned.thread"), std::string::npos) << r.err;
}
