// The explorer's live view: a prompt stepped token by token on a Probe
// (kiln/probe.h), with the next token's candidates, the KV positions used and,
// when asked, per-layer residual statistics and per-head attention statistics.
//
//   POST /explore/live/start {model, prompt, top_k?, layers?, attention?, n_ctx?}
//   POST /explore/live/step  {session, token}    (token: the id to append, e.g. the last step's top candidate)
//   POST /explore/live/close {session}
//
// A session holds its own Probe (one sequence, its own small KV memory) and the
// model's weights; at most k_max_sessions live at once (the least recently used
// one is closed), so an abandoned page costs at most that.
#include <httplib.h>

#include <chrono>
#include <list>

#include "kiln/probe.h"
#include "routes.h"

namespace kiln::server {

struct LiveSession {
    std::string id;
    std::string model_name;
    std::shared_ptr<const Model> model;
    std::unique_ptr<Probe> probe;
    std::mutex mutex;  // one step at a time
};

struct LiveSessions {
    static constexpr size_t k_max_sessions = 4;
    std::list<std::shared_ptr<LiveSession>> sessions;  // most recently used first
};

namespace {

void reply_json(httplib::Response& res, const Json& j) { res.set_content(json_text(j), "application/json"); }

LiveSessions& sessions_of(ServerState& state) {
    if (!state.live) state.live = std::make_shared<LiveSessions>();
    return *state.live;
}

std::shared_ptr<LiveSession> find_session(ServerState& state, const Json& body) {
    auto id = get_string(body, "session");
    if (!id) throw bad_field("session", "missing");
    std::lock_guard lock(state.live_mutex);
    LiveSessions& all = sessions_of(state);
    for (auto it = all.sessions.begin(); it != all.sessions.end(); ++it)
        if ((*it)->id == *id) {
            auto s = *it;
            all.sessions.erase(it);
            all.sessions.push_front(s);
            return s;
        }
    throw ApiError(404, "live session '" + *id + "' not found (closed, or replaced by newer ones)", "session", "not_found");
}

Json token_json(const Tokenizer& tok, TokenId id) { return {{"id", id}, {"piece", std::string(tok.token_piece(id, true))}}; }

Json step_json(const LiveSession& s, const ProbeStep& step, TokenId fed, double ms) {
    const Tokenizer& tok = s.model->tokenizer();
    Json candidates = Json::array();
    for (const ProbeCandidate& c : step.candidates) {
        Json j = token_json(tok, c.id);
        j["logit"] = c.logit;
        j["prob"] = c.prob;
        candidates.push_back(std::move(j));
    }
    Json out = {{"session", s.id},
                {"n_past", step.n_past},
                {"n_ctx", step.n_ctx},
                {"kv_visible", step.kv_visible},
                {"candidates", candidates},
                {"is_end", tok.is_end_of_generation(step.candidates.front().id)},
                {"ms", ms}};
    if (fed >= 0) out["token"] = token_json(tok, fed);
    if (!step.layers.empty()) {
        Json layers = Json::array();
        for (const LayerStats& l : step.layers)
            layers.push_back({{"norm", l.norm}, {"mean", l.mean}, {"std", l.std}, {"max", l.max}, {"min", l.min}});
        out["layers"] = layers;
    }
    if (!step.heads.empty()) {
        Json layers = Json::array();
        for (const auto& heads : step.heads) {
            Json hs = Json::array();
            for (const HeadStats& h : heads) {
                Json top = Json::array();
                for (const auto& [pos, w] : h.top) top.push_back({{"pos", pos}, {"weight", w}});
                hs.push_back({{"entropy", h.entropy}, {"top", top}});
            }
            layers.push_back(std::move(hs));
        }
        out["attention"] = layers;
    }
    return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void handle_explore_live_start(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    auto prompt = get_string(body, "prompt");
    if (!prompt || prompt->empty()) throw bad_field("prompt", "missing or empty");
    ProbeOptions po;
    po.top_k = static_cast<int>(get_int(body, "top_k", 1, 100).value_or(10));
    po.layer_stats = get_bool(body, "layers").value_or(true);
    po.attention_stats = get_bool(body, "attention").value_or(true);
    po.attention_top = static_cast<int>(get_int(body, "attention_top", 1, 32).value_or(4));
    po.n_ctx = static_cast<int>(get_int(body, "n_ctx", 16, std::max(16, held->model->n_ctx_train())).value_or(
        std::min(1024, held->model->n_ctx_train())));
    po.n_threads = state.options.n_threads;
    // The prompt as `kiln run -p` tokenizes it (so greedy steps give its tokens).
    EncodeOptions eo;
    const std::vector<TokenId> tokens = held->model->tokenizer().encode(*prompt, eo);
    if (tokens.empty()) throw bad_field("prompt", "gives no tokens");

    auto s = std::make_shared<LiveSession>();
    s->id = random_id("live_");
    s->model_name = held->name;
    s->model = held->model;
    s->probe = std::make_unique<Probe>(s->model, po);
    const auto t0 = std::chrono::steady_clock::now();
    const ProbeStep step = s->probe->feed(tokens);
    Json out = step_json(*s, step, -1, ms_since(t0));
    Json prompt_tokens = Json::array();
    for (TokenId id : tokens) prompt_tokens.push_back(token_json(s->model->tokenizer(), id));
    out["prompt_tokens"] = prompt_tokens;
    out["model"] = held->name;
    {
        std::lock_guard lock(state.live_mutex);
        LiveSessions& all = sessions_of(state);
        all.sessions.push_front(s);
        while (all.sessions.size() > LiveSessions::k_max_sessions) all.sessions.pop_back();
    }
    reply_json(res, out);
}

void handle_explore_live_step(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LiveSession> s = find_session(state, body);
    std::lock_guard lock(s->mutex);
    const int n_vocab = s->model->n_vocab();
    auto id = get_int(body, "token", 0, n_vocab - 1);
    if (!id) throw bad_field("token", "missing (the id to append; the page sends the top candidate for a greedy step)");
    const TokenId next = static_cast<TokenId>(*id);
    const auto t0 = std::chrono::steady_clock::now();
    const TokenId one[] = {next};
    const ProbeStep step = s->probe->feed(one);
    reply_json(res, step_json(*s, step, next, ms_since(t0)));
}

void handle_explore_live_close(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    auto id = get_string(body, "session");
    if (!id) throw bad_field("session", "missing");
    bool found = false;
    {
        std::lock_guard lock(state.live_mutex);
        LiveSessions& all = sessions_of(state);
        found = std::erase_if(all.sessions, [&](const auto& s) { return s->id == *id; }) > 0;
    }
    reply_json(res, {{"session", *id}, {"closed", found}});
}

}  // namespace kiln::server
