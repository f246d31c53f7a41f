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
    if (state.ready) {
        const LoadedModel& m = *state.model;
        data.push_back({{"id", m.name},
                        {"object", "model"},
                        {"created", m.created},
                        {"owned_by", "kiln"},
                        {"meta", {{"n_vocab", m.model->n_vocab()},
                                  {"n_ctx_train", m.model->n_ctx_train()},
                                  {"n_embd", m.model->n_embd()},
                                  {"architecture", m.model->architecture()},
                                  {"loaded", state.ready.load()}}}});
    }
    reply_json(res, {{"object", "list"}, {"data", data}});
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
    const LoadedModel& m = *state.model;
    const ChatFormat& f = m.format;
    reply_json(res, {{"model_alias", m.name},
                     {"model_path", m.file_name},
                     {"total_slots", state.options.parallel},
                     {"n_ctx", m.scheduler->n_ctx()},
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
    const LoadedModel& m = state.model_for(body);
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
    const LoadedModel& m = state.model_for(body);
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
    const LoadedModel& m = state.model_for(body);
    reply_json(res, {{"prompt", render_chat_prompt(m, body).text}});
}

void handle_metrics(ServerState& state, const httplib::Request&, httplib::Response& res) {
    const Metrics& m = state.metrics;
    SchedulerStats s;
    if (state.ready) s = state.model->scheduler->stats();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
        out += std::string("# HELP kiln_") + name + " " + help + "\n# TYPE kiln_" + name + " " + type + "\nkiln_" + name +
               " " + (value == static_cast<double>(static_cast<int64_t>(value)) ? std::to_string(static_cast<int64_t>(value))
                                                                                 : Json(value).dump()) +
               "\n";
    };
    const double prefill_s = static_cast<double>(m.prefill_us.load()) / 1e6;
    const double decode_s = static_cast<double>(m.decode_us.load()) / 1e6;
    metric("requests_total", "counter", "generation requests accepted", static_cast<double>(m.requests.load()));
    metric("requests_failed_total", "counter", "requests answered with an error status",
           static_cast<double>(m.requests_failed.load()));
    metric("prompt_tokens_total", "counter", "prompt tokens evaluated", static_cast<double>(m.prompt_tokens.load()));
    metric("prompt_tokens_cached_total", "counter", "prompt tokens served from the prefix cache",
           static_cast<double>(m.cached_tokens.load()));
    metric("tokens_predicted_total", "counter", "generated tokens", static_cast<double>(m.generated_tokens.load()));
    metric("prompt_seconds_total", "counter", "time spent evaluating prompts (per sequence, summed)", prefill_s);
    metric("tokens_predicted_seconds_total", "counter", "time spent generating (per sequence, summed)", decode_s);
    metric("requests_queued", "gauge", "sequences waiting for a slot", static_cast<double>(s.queued));
    metric("requests_processing", "gauge", "sequences being generated", static_cast<double>(s.busy));
    metric("slots", "gauge", "sequences generated at once (--parallel)", static_cast<double>(s.slots));
    res.set_content(out, "text/plain; version=0.0.4");
}

}  // namespace kiln::server
