// The metrics an inference gateway's endpoint picker scrapes (the Gateway API
// Inference Extension's model-server protocol; docs/scale-out.md), per resident
// model with a `model_name` label: under kiln's names and under the vLLM names
// that the picker's default configuration reads, so an unmodified picker
// schedules kiln replicas by queue depth, running requests, KV-cache use and
// prefix-cache size.
#include <httplib.h>

#include "routes.h"

namespace kiln::server {

namespace {

// The granularity the picker's approximate prefix scorer hashes prompts in.
// kiln reuses any common prefix token by token, so every block size is exact
// for it; 16 is the picker's and vLLM's default.
constexpr int64_t k_reported_block_size = 16;

std::string label_value(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

struct Series {
    std::string labels;  // {model_name="..."} or with more labels
    double value;
};

void family(std::string& out, const std::string& name, const char* type, const char* help,
            const std::vector<Series>& series) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const Series& s : series) out += name + s.labels + " " + prometheus_number(s.value) + "\n";
}

}  // namespace

std::string prometheus_number(double v) {
    if (v == static_cast<double>(static_cast<int64_t>(v))) return std::to_string(static_cast<int64_t>(v));
    return Json(v).dump();
}

void append_gateway_metrics(ServerState& state, std::string& out) {
    struct PerModel {
        std::string name;
        SchedulerStats s;
    };
    std::vector<PerModel> models;
    if (state.ready)
        for (const auto& m : state.models->loaded()) models.push_back({m->name, m->scheduler->stats()});
    auto each = [&](auto value) {
        std::vector<Series> v;
        for (const PerModel& m : models)
            v.push_back({"{model_name=\"" + label_value(m.name) + "\"}", static_cast<double>(value(m.s))});
        return v;
    };
    const auto waiting = each([](const SchedulerStats& s) { return s.queued; });
    const auto running = each([](const SchedulerStats& s) { return s.busy; });
    std::vector<Series> usage;
    for (const PerModel& m : models)
        usage.push_back({"{model_name=\"" + label_value(m.name) + "\"}",
                         m.s.kv_total ? static_cast<double>(m.s.kv_used) / static_cast<double>(m.s.kv_total) : 0.0});
    std::vector<Series> config;
    for (const PerModel& m : models)
        config.push_back({"{model_name=\"" + label_value(m.name) + "\",block_size=\"" + std::to_string(k_reported_block_size) +
                              "\",num_gpu_blocks=\"" + std::to_string(m.s.kv_total / k_reported_block_size) +
                              "\",enable_prefix_caching=\"True\",cache_dtype=\"auto\"}",
                          1.0});
    const auto queries = each([](const SchedulerStats& s) { return s.prompt_tokens; });
    const auto hits = each([](const SchedulerStats& s) { return s.cached_tokens; });
    const auto generated = each([](const SchedulerStats& s) { return s.generated_tokens; });
    const auto prefilled = each([](const SchedulerStats& s) { return s.prompt_tokens - s.cached_tokens; });
    const auto drafted = each([](const SchedulerStats& s) { return s.drafted_tokens; });
    const auto accepted = each([](const SchedulerStats& s) { return s.accepted_tokens; });

    family(out, "kiln_model_requests_waiting", "gauge", "requests in the model's queue, waiting for a slot", waiting);
    family(out, "kiln_model_requests_running", "gauge", "requests the model is generating", running);
    family(out, "kiln_kv_cache_usage_ratio", "gauge",
           "positions held by running requests over all the model's KV positions (0-1)", usage);
    family(out, "kiln_prefix_cache_queries_total", "counter", "prompt tokens of finished requests", queries);
    family(out, "kiln_prefix_cache_hits_total", "counter", "of those, tokens served from the prefix cache", hits);
    family(out, "kiln_model_draft_tokens_total", "counter", "tokens of finished requests drafted and verified", drafted);
    family(out, "kiln_model_draft_tokens_accepted_total", "counter", "of those, tokens the target accepted", accepted);
    // The vLLM names (an endpoint picker's defaults read these).
    family(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting);
    family(out, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", running);
    family(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage);
    family(out, "vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage (the older name). 1 means 100 percent usage.",
           usage);
    family(out, "vllm:cache_config_info", "gauge", "Information of the KV cache configuration.", config);
    family(out, "vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in tokens.", queries);
    family(out, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in tokens.", hits);
    family(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", prefilled);
    family(out, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", generated);
    family(out, "vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", drafted);
    family(out, "vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", accepted);
}

}  // namespace kiln::server
