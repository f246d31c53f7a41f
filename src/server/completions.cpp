// POST /v1/completions: raw text (or token ids) in, text out, as OpenAI's
// legacy text_completion shape. The prompt is tokenized as `kiln run -p` does,
// so a greedy request gives kiln run's text byte for byte.
#include <httplib.h>

#include "generation_fields.h"
#include "job_runner.h"
#include "routes.h"

namespace kiln::server {

namespace {

class CompletionBuilder : public ResponseBuilder {
public:
    CompletionBuilder(const LoadedModel& model, int n, bool logprobs, bool include_usage, std::string echo)
        : tok_(model.model->tokenizer()), model_name_(model.name), logprobs_(logprobs), include_usage_(include_usage),
          echo_(std::move(echo)), choices_(static_cast<size_t>(n)) {}

    void add(const JobEvent& e, std::vector<Json>* chunks) override {
        Choice& c = choices_[static_cast<size_t>(e.index)];
        std::string text;
        if (!c.started) {
            c.started = true;
            text = echo_;
        }
        Json lp = nullptr;
        if (e.kind == JobEvent::Kind::Token) {
            text += e.token.text;
            if (logprobs_ && e.token.token != k_no_token) {
                const std::string piece(tok_.token_piece(e.token.token));
                Json top = Json::object();
                for (const TokenLogprob& t : e.token.top) top[std::string(tok_.token_piece(t.token))] = t.logprob;
                c.tokens.push_back(piece);
                c.token_logprobs.push_back(e.token.logprob);
                c.top.push_back(top);
                c.offsets.push_back(c.text.size());
                lp = {{"tokens", {piece}}, {"token_logprobs", {e.token.logprob}}, {"top_logprobs", {top}},
                      {"text_offset", {c.text.size()}}};
            }
        }
        c.text += text;
        if (e.kind == JobEvent::Kind::Done) {
            c.result = e.result;
            c.finish = e.result.finish == FinishReason::Length || e.result.finish == FinishReason::ContextFull ? "length"
                                                                                                              : "stop";
        }
        if (!chunks) return;
        if (!text.empty() || !lp.is_null())
            chunks->push_back(chunk(e.index, text, lp, nullptr));
        if (e.kind == JobEvent::Kind::Done) chunks->push_back(chunk(e.index, "", nullptr, c.finish));
    }

    Json response() override {
        Json choices = Json::array();
        for (size_t i = 0; i < choices_.size(); ++i) {
            const Choice& c = choices_[i];
            Json lp = nullptr;
            if (logprobs_)
                lp = {{"tokens", c.tokens}, {"token_logprobs", c.token_logprobs}, {"top_logprobs", c.top},
                      {"text_offset", c.offsets}};
            choices.push_back({{"index", i}, {"text", c.text}, {"logprobs", lp}, {"finish_reason", c.finish}});
        }
        Json r = base();
        r["choices"] = choices;
        r["usage"] = usage();
        r["timings"] = timings();
        return r;
    }

    std::vector<Json> stream_end() override {
        if (!include_usage_) return {};
        Json r = base();
        r["choices"] = Json::array();
        r["usage"] = usage();
        r["timings"] = timings();
        return {r};
    }

private:
    struct Choice {
        bool started = false;
        std::string text, finish;
        Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(), offsets = Json::array();
        GenerationResult result;
    };
    Json base() const {
        return {{"id", id_}, {"object", "text_completion"}, {"created", created_}, {"model", model_name_},
                {"system_fingerprint", "kiln"}};
    }
    Json chunk(int index, const std::string& text, Json lp, Json finish) const {
        Json r = base();
        r["choices"] = Json::array({{{"index", index}, {"text", text}, {"logprobs", std::move(lp)},
                                     {"finish_reason", std::move(finish)}}});
        return r;
    }
    Json usage() const { return choices_usage(choices_); }
    Json timings() const { return choices_timings(choices_); }

    const Tokenizer& tok_;
    std::string model_name_;
    std::string id_ = random_id("cmpl-");
    int64_t created_ = unix_now();
    bool logprobs_, include_usage_;
    std::string echo_;
    std::vector<Choice> choices_;
};

// The prompt: a string, a one-string array, or token ids (one array of them).
std::vector<TokenId> prompt_tokens(const Json& body, const Tokenizer& tok, std::string& text) {
    const Json* p = field(body, "prompt");
    if (!p) throw bad_field("prompt", "missing");
    auto ids_of = [&](const Json& arr) {
        std::vector<TokenId> ids;
        for (const Json& v : arr) {
            if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= static_cast<long long>(tok.n_vocab()))
                throw bad_field("prompt", "token ids must be integers below " + std::to_string(tok.n_vocab()));
            ids.push_back(static_cast<TokenId>(v.get<long long>()));
        }
        text = tok.decode(ids);
        return ids;
    };
    if (p->is_string()) {
        text = p->get<std::string>();
        return tok.encode(text);
    }
    if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
        text = (*p)[0].get<std::string>();
        return tok.encode(text);
    }
    if (p->is_array() && !p->empty() && (*p)[0].is_number()) return ids_of(*p);
    if (p->is_array() && p->size() == 1 && (*p)[0].is_array()) return ids_of((*p)[0]);
    throw bad_field("prompt", "expected a string or token ids (one prompt per request; use n for several choices)");
}

}  // namespace

void handle_completions(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    GenerationFields f = parse_generation_fields(body, Api::Completions, model.model->n_vocab());
    if (field(body, "suffix")) throw bad_field("suffix", "fill-in-the-middle is not supported yet");
    if (auto best_of = get_int(body, "best_of", 1, 16); best_of && *best_of != f.n)
        throw bad_field("best_of", "only best_of = n is supported");
    const bool echo = get_bool(body, "echo").value_or(false);
    const Tokenizer& tok = model.model->tokenizer();
    std::string text;
    std::vector<TokenId> ids = prompt_tokens(body, tok, text);
    if (ids.empty()) throw bad_field("prompt", "the prompt has no tokens");
    if (static_cast<int>(ids.size()) >= model.scheduler->n_ctx())
        throw ApiError(400,
                       "the prompt is " + std::to_string(ids.size()) + " tokens, the context holds " +
                           std::to_string(model.scheduler->n_ctx()) + " (start the server with a larger -c)",
                       "prompt", "context_length_exceeded");
    auto channel = std::make_shared<Channel>();
    std::vector<Job> jobs;
    for (int i = 0; i < f.n; ++i) {
        Job j;
        j.prompt = ids;
        j.options = f.options;
        j.spec = f.spec;
        j.options.sampling.seed = f.options.sampling.seed + static_cast<uint64_t>(i);
        j.index = i;
        j.channel = channel;
        jobs.push_back(std::move(j));
    }
    auto builder = std::make_shared<CompletionBuilder>(model, f.n, f.logprobs, f.include_usage, echo ? text : "");
    run_jobs(state, req, held, std::move(jobs), channel, builder, f.stream, res);
}

}  // namespace kiln::server
