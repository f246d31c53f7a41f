// Chat-template rendering speed: a 20-message conversation with three tools
// (bench/data/jinja_conversation.json) through three large real templates:
//   render/  the template rendered with a prepared context (as Python is timed)
//   chat/    JSON messages -> context -> prompt, as the server does it
//   parse/   parsing the template (once per model load)
// bench/jinja_vs_python.py runs this beside Python jinja2 and prints the ratio.
//
//   bench_jinja [--benchmark_filter=...]   (KILN_SOURCE_DIR locates the data)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/jinja/ops.h"
#include "chat/jinja/render.h"
#include "chat/jinja/value.h"
#include "kiln/chat_template.h"

namespace {

const char* const k_templates[] = {
    "openai-gpt-oss-120b",
    "Kimi-K3",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
};

std::string source_dir() {
    if (const char* env = std::getenv("KILN_SOURCE_DIR"); env && *env) return env;
    return KILN_SOURCE_DIR;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

kiln::chat::ChatRequest conversation() {
    auto conv = nlohmann::ordered_json::parse(read_file(source_dir() + "/bench/data/jinja_conversation.json"));
    kiln::chat::ChatRequest req;
    req.messages = conv.at("messages");
    req.tools = conv.at("tools");
    req.add_generation_prompt = true;
    req.bos_token = "<s>";
    req.eos_token = "</s>";
    return req;
}

// JSON messages -> prompt through the chat wrapper (what the server does per request).
void bm_chat(benchmark::State& state, std::string name) {
    const std::string source = read_file(source_dir() + "/tests/data/shared/templates/" + name + ".jinja");
    const kiln::jinja::Template tmpl(source);
    const kiln::chat::ChatRequest req = conversation();
    size_t bytes = 0;
    for (auto _ : state) {
        std::string prompt = kiln::chat::apply_chat_template(tmpl, req);
        bytes = prompt.size();
        benchmark::DoNotOptimize(prompt);
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["prompt_bytes"] = static_cast<double>(bytes);
}

// The context prepared once, as Python's template.render(**context) is timed: each
// render still copies the context's containers (Template::render never lets a
// template modify its caller's values).
void bm_render(benchmark::State& state, std::string name) {
    const std::string source = read_file(source_dir() + "/tests/data/shared/templates/" + name + ".jinja");
    const kiln::jinja::Template tmpl(source);
    const kiln::chat::ChatRequest req = conversation();
    nlohmann::ordered_json ctx = {{"messages", req.messages}, {"tools", *req.tools}, {"add_generation_prompt", true},
                                  {"bos_token", req.bos_token}, {"eos_token", req.eos_token}};
    const kiln::jinja::Value context = kiln::jinja::json_parse(ctx.dump());
    size_t bytes = 0;
    for (auto _ : state) {
        std::string prompt = kiln::jinja::render_value(tmpl, context);
        bytes = prompt.size();
        benchmark::DoNotOptimize(prompt);
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["prompt_bytes"] = static_cast<double>(bytes);
}

void bm_parse(benchmark::State& state, std::string name) {
    const std::string source = read_file(source_dir() + "/tests/data/shared/templates/" + name + ".jinja");
    for (auto _ : state) {
        kiln::jinja::Template tmpl(source);
        benchmark::DoNotOptimize(tmpl);
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["template_bytes"] = static_cast<double>(source.size());
}

}  // namespace

int main(int argc, char** argv) {
    for (const char* name : k_templates) {
        benchmark::RegisterBenchmark((std::string("render/") + name).c_str(), bm_render, std::string(name));
        benchmark::RegisterBenchmark((std::string("chat/") + name).c_str(), bm_chat, std::string(name));
        benchmark::RegisterBenchmark((std::string("parse/") + name).c_str(), bm_parse, std::string(name));
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
