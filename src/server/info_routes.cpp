// The small routes: models, health, props, tokenize / detokenize,
// apply-template and the Prometheus metrics.
#include <httplib.h>

#include "routes.h"

namespace kiln::server {

namespace {

void reply_json(httplib::Response& res, const Json& j) { res.set_content(json_text(j), "application/json"); }

}  // namespace

void handle_models(ServerState& state, const httplib::Request&, httplib::Response& res) {
    Json data = Json::array();
    if (state.models) {
        for (const auto& a : state.models->available()) {
            Json entry = {{"id", a.name}, {"object", "model"}, {"created", 0}, {"owned_by", "kiln"}};
            Json meta = {{"loaded", a.loaded}};
            if (auto m = a.loaded ? state.models->resident(a.name) : nullptr) {
                entry["created"] = m->created;
                meta.update({{"n_vocab", m->model->n_vocab()},
                             {"n_ctx_train", m->model->n_ctx_train()},
                             {"n_embd", m->model->n_embd()},
                             {"architecture", m->model->architecture()}});
            }
            if (!a.aliases.empty()) meta["aliases"] = a.aliases;
            entry["meta"] = meta;
            data.push_back(std::move(entry));
            // An alias is listed as a model of its own, so a client that picks
            // from the list finds the name it was configured with.
            for (const std::string& alias : a.aliases)
                data.push_back({{"id", alias}, {"object", "model"}, {"created", 0}, {"owned_by", "kiln"},
                                {"meta", {{"loaded", a.loaded}, {"alias_of", a.name}}}});
        }
    }
    reply_json(res, {{"object", "list"}, {"data", data}});
}

void handle_models_load(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    if (!get_string(body, "model")) throw bad_field("model", "missing");
    std::shared_ptr<LoadedModel> m = state.model_for(body);
    reply_json(res, {{"model", m->name}, {"status", "loaded"}});
}

void handle_models_unload(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    auto name = get_string(body, "model");
    if (!name) throw bad_field("model", "missing");
    const bool was = state.models->unload(*name);
    reply_json(res, {{"model", *name}, {"status", was ? "unloaded" : "not_loaded"}});
}

void handle_models_cache(ServerState& state, const httplib::Request&, httplib::Response& res) {
    const ModelCacheStats s = state.models->stats();
    Json resident = Json::array();
    for (const auto& m : state.models->loaded()) resident.push_back(m->name);
    reply_json(res, {{"resident", s.resident}, {"capacity", s.capacity}, {"bytes", s.bytes},
                     {"bytes_budget", s.bytes_budget}, {"hits", s.hits}, {"loads", s.loads},
                     {"evictions", s.evictions}, {"expirations", s.expirations}, {"models", resident}});
}

void handle_health(ServerState& state, const httplib::Request&, httplib::Response& res) {
    if (state.ready) {
        reply_json(res, {{"status", "ok"}});
        return;
    }
    res.status = 503;
    const std::string why = state.load_error.empty() ? "loading model" : "the model failed to load: " + state.load_error;
    reply_json(res, error_body(503, why));
}

void handle_props(ServerState& state, const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<LoadedModel> held = state.models->get("");
    const LoadedModel& m = *held;
    const ChatFormat& f = m.format;
    reply_json(res, {{"model_alias", m.name},
                     {"model_path", m.file_name},
                     {"model_fingerprint", m.fingerprint},
                     {"replica_id", state.options.replica_id},
                     {"total_slots", state.options.parallel},
                     {"n_ctx", m.scheduler->n_ctx()},
                     {"n_batch", m.scheduler->n_batch()},
                     {"n_threads", m.scheduler->n_threads()},
                     {"kv_type", m.scheduler->kv_type()},
                     {"chat_template", m.template_source.value_or("")},
                     {"chat_template_origin", m.template_origin},
                     {"bos_token", m.bos_text},
                     {"eos_token", m.eos_text},
                     {"capabilities",
                      {{"reasoning", std::string(reasoning_syntax_name(f.reasoning.syntax))},
                       {"can_disable_thinking", f.can_disable_thinking()},
                       {"tools", std::string(tool_syntax_name(f.tools.syntax))}}},
                     {"build_info", "kiln"}});
}

void handle_tokenize(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    const LoadedModel& m = *held;
    auto content = get_string(body, "content");
    if (!content) throw bad_field("content", "missing");
    EncodeOptions eo;
    eo.add_special = get_bool(body, "add_special").value_or(false);
    eo.parse_special = get_bool(body, "parse_special").value_or(true);
    const bool with_pieces = get_bool(body, "with_pieces").value_or(false);
    const Tokenizer& tok = m.model->tokenizer();
    Json tokens = Json::array();
    for (TokenId id : tok.encode(*content, eo)) {
        if (with_pieces)
            tokens.push_back({{"id", id}, {"piece", std::string(tok.token_piece(id, true))}});
        else
            tokens.push_back(id);
    }
    reply_json(res, {{"tokens", tokens}});
}

void handle_detokenize(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    const LoadedModel& m = *held;
    const Json* tokens = get_array(body, "tokens");
    if (!tokens) throw bad_field("tokens", "missing");
    const Tokenizer& tok = m.model->tokenizer();
    std::vector<TokenId> ids;
    for (const Json& v : *tokens) {
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= static_cast<long long>(tok.n_vocab()))
            throw bad_field("tokens", "token ids must be integers below " + std::to_string(tok.n_vocab()));
        ids.push_back(static_cast<TokenId>(v.get<long long>()));
    }
    reply_json(res, {{"content", tok.decode(ids)}});
}

void handle_apply_template(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    const LoadedModel& m = *held;
    reply_json(res, {{"prompt", render_chat_prompt(m, body).text}});
}

void handle_metrics(ServerState& state, const httplib::Request&, httplib::Response& res) {
    const Metrics& m = state.metrics;
    SchedulerStats s;
    ModelCacheStats cache;
    if (state.ready) {
        for (const auto& m : state.models->loaded()) {
            const SchedulerStats one = m->scheduler->stats();
            s.queued += one.queued;
            s.busy += one.busy;
            s.slots += one.slots;
        }
        cache = state.models->stats();
    }
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
        out += std::string("# HELP kiln_") + name + " " + help + "\n# TYPE kiln_" + name + " " + type + "\nkiln_" + name +
               " " + prometheus_number(value) + "\n";
    };
    const double prefill_s = static_cast<double>(m.prefill_us.load()) / 1e6;
    const double decode_s = static_cast<double>(m.decode_us.load()) / 1e6;
    metric("requests_total", "counter", "generation requests accepted", static_cast<double>(m.requests.load()));
    metric("requests_failed_total", "counter", "requests answered with an error status",
           static_cast<double>(m.requests_failed.load()));
    metric("client_disconnects_total", "counter", "clients that left before their reply ended (their sequences cancelled)",
           static_cast<double>(m.disconnects.load()));
    metric("prompt_tokens_total", "counter", "prompt tokens evaluated", static_cast<double>(m.prompt_tokens.load()));
    metric("prompt_tokens_cached_total", "counter", "prompt tokens served from the prefix cache",
           static_cast<double>(m.cached_tokens.load()));
    metric("tokens_predicted_total", "counter", "generated tokens", static_cast<double>(m.generated_tokens.load()));
    metric("draft_tokens_total", "counter", "tokens drafted by speculative decoding and verified",
           static_cast<double>(m.drafted_tokens.load()));
    metric("draft_tokens_accepted_total", "counter", "drafted tokens the target accepted",
           static_cast<double>(m.accepted_tokens.load()));
    metric("prompt_seconds_total", "counter", "time spent evaluating prompts (per sequence, summed)", prefill_s);
    metric("tokens_predicted_seconds_total", "counter", "time spent generating (per sequence, summed)", decode_s);
    metric("requests_queued", "gauge", "sequences waiting for a slot", static_cast<double>(s.queued));
    metric("requests_processing", "gauge", "sequences being generated", static_cast<double>(s.busy));
    metric("slots", "gauge", "sequences generated at once (--parallel, over the resident models)", static_cast<double>(s.slots));
    metric("models_resident", "gauge", "models in memory", static_cast<double>(cache.resident));
    metric("model_cache_hits_total", "counter", "requests for a resident model", static_cast<double>(cache.hits));
    metric("model_loads_total", "counter", "models loaded", static_cast<double>(cache.loads));
    metric("model_evictions_total", "counter", "models unloaded", static_cast<double>(cache.evictions));
    metric("model_expirations_total", "counter", "models unloaded when their keep_alive ran out",
           static_cast<double>(cache.expirations));
    append_gateway_metrics(state, out);
    res.set_content(out, "text/plain; version=0.0.4");
}

}  // namespace kiln::server
