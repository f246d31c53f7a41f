// POST /v1/chat/completions: messages through the chat template, the reply
// through the ReplyParser (text, reasoning_content, tool_calls), in OpenAI's
// chat.completion / chat.completion.chunk shapes.
#include <httplib.h>

#include <algorithm>
#include <map>

#include "generation_fields.h"
#include "job_runner.h"
#include "kiln/chat_template.h"
#include "kiln/tool_grammar.h"
#include "routes.h"

namespace kiln::server {

namespace {

// A message's content as text: a string, or text parts joined.
Json normalize_content(const Json& content, const std::string& where) {
    if (content.is_null() || content.is_string()) return content;
    if (!content.is_array()) throw bad_field(where, "expected a string or an array of content parts");
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& part = content[i];
        const std::string p = where + "[" + std::to_string(i) + "]";
        if (!part.is_object()) throw bad_field(p, "expected a content part object");
        auto type = get_string(part, "type");
        if (!type) throw bad_field(p + ".type", "missing");
        if (*type != "text")
            throw ApiError(400, "'" + p + ".type': content parts of type '" + *type + "' are not supported (text only)",
                           p + ".type", "unsupported_value");
        auto t = get_string(part, "text");
        if (!t) throw bad_field(p + ".text", "missing");
        text += *t;
    }
    return text;
}

Json normalize_messages(const Json& body) {
    const Json* messages = get_array(body, "messages");
    if (!messages) throw bad_field("messages", "missing");
    if (messages->empty()) throw bad_field("messages", "must hold at least one message");
    if (messages->size() > 4096) throw bad_field("messages", "at most 4096 messages");
    Json out = Json::array();
    for (size_t i = 0; i < messages->size(); ++i) {
        const Json& m = (*messages)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw bad_field(where, "expected an object");
        auto role = get_string(m, "role");
        if (!role) throw bad_field(where + ".role", "missing");
        static const char* const k_roles[] = {"system", "developer", "user", "assistant", "tool", "function"};
        if (std::find(std::begin(k_roles), std::end(k_roles), *role) == std::end(k_roles))
            throw bad_field(where + ".role", "unknown role '" + *role + "'");
        Json copy = m;
        if (*role == "developer") copy["role"] = "system";  // OpenAI's newer name for it
        if (m.contains("content")) copy["content"] = normalize_content(m["content"], where + ".content");
        if (get_array(m, "tool_calls") && *role != "assistant")
            throw bad_field(where + ".tool_calls", "only assistant messages carry tool calls");
        out.push_back(std::move(copy));
    }
    return out;
}

// The reply's grammar for the offered tools: a forced call (required / named)
// in the model's own tool syntax, or for auto a lazy one that starts when the
// model opens a call. A forced call that cannot be enforced is a 400 naming why;
// auto stays unconstrained where it cannot be (a syntax without a grammar or a
// trigger, a schema kiln refuses) unless a tool asked for `strict`; an assistant
// prefill is read by the lazy stage as the reply's start.
void tool_constraint(const LoadedModel& model, ChatPrompt& out, const std::string& choice, const std::string& name,
                     bool parallel, bool strict_tools) {
    ToolCallConstraintOptions o;
    o.choice = choice == "required" ? ToolChoice::Required : choice == "named" ? ToolChoice::Named : ToolChoice::Auto;
    o.name = name;
    o.parallel = parallel;
    o.starts_in_thinking = prompt_opens_thinking(model.format, out.text);
    if (o.choice == ToolChoice::Auto && !tool_syntax_can_constrain(model.format.tools.syntax)) {
        if (strict_tools)
            throw ApiError(400, "'tools': strict arguments cannot be enforced in the '" +
                                    std::string(tool_syntax_name(model.format.tools.syntax)) + "' tool syntax",
                           "tools", "unsupported_value");
        return;
    }
    try {
        ToolCallConstraint c = tool_call_constraint(model.format, out.tools, o);
        // A prefill that opens a call must be one the grammar can go on from: the
        // same stage the scheduler makes reads it here (with no vocabulary: bytes only).
        if (!c.triggers.empty() && !out.assistant_prefix.empty()) {
            try {
                lazy_grammar_stage(c.grammar, TokenVocabulary::from_pieces({}, {}), c.triggers, out.assistant_prefix);
            } catch (const Error&) {
                throw ApiError(400, "'messages': the assistant prefill opens a tool call that breaks the tool's schema",
                               "messages", "invalid_value");
            }
        }
        out.grammar = std::make_shared<const Grammar>(std::move(c.grammar));
        out.grammar_triggers = std::move(c.triggers);
    } catch (const ApiError&) {
        throw;
    } catch (const Error& e) {
        if (o.choice == ToolChoice::Auto && !strict_tools) return;
        const std::string param = o.choice == ToolChoice::Named && std::string(e.what()).find("not among the tools") !=
                                                                      std::string::npos
                                      ? "tool_choice.function.name"
                                      : o.choice == ToolChoice::Auto ? "tools" : "tool_choice";
        throw ApiError(400, "'" + param + "': " + e.what(), param,
                       e.kind() == ErrorKind::Unsupported ? "unsupported_value" : "invalid_value");
    }
}

}  // namespace

ChatPrompt render_chat_prompt(const LoadedModel& model, const Json& body) {
    if (!model.chat_template)
        throw ApiError(400, "the model has no chat template; start the server with --chat-template-file", "messages",
                       "no_chat_template");
    ChatPrompt out;
    Json messages = normalize_messages(body);
    // A conversation that ends with the assistant's message is continued, not answered.
    if (messages.back().value("role", "") == "assistant" && !messages.back().contains("tool_calls")) {
        const Json& c = messages.back()["content"];
        out.assistant_prefix = c.is_string() ? c.get<std::string>() : "";
        messages.erase(messages.end() - 1);
        if (messages.empty()) throw bad_field("messages", "a conversation cannot be only an assistant prefill");
    }
    chat::ChatRequest req;
    req.messages = nlohmann::ordered_json::parse(messages.dump());
    req.bos_token = model.bos_text;
    req.eos_token = model.eos_text;
    std::string tool_choice = "auto";
    std::string forced_name;  // tool_choice {"type": "function", "function": {"name": ...}}
    if (const Json* tc = field(body, "tool_choice")) {
        if (tc->is_string()) {
            tool_choice = tc->get<std::string>();
            if (tool_choice != "auto" && tool_choice != "none" && tool_choice != "required")
                throw bad_field("tool_choice", "expected 'auto', 'none', 'required' or a named function");
        } else if (tc->is_object()) {
            tool_choice = "named";
            if (get_string(*tc, "type").value_or("") != "function") throw bad_field("tool_choice.type", "expected 'function'");
            const Json* fn = get_object(*tc, "function");
            if (!fn) throw bad_field("tool_choice.function", "missing");
            auto name = get_string(*fn, "name");
            if (!name) throw bad_field("tool_choice.function.name", "missing");
            forced_name = *name;
        } else {
            throw bad_field("tool_choice", "expected a string or an object");
        }
    }
    bool strict_tools = false;  // some tool asks for its arguments to be enforced (function.strict)
    if (const Json* tools = get_array(body, "tools")) {
        for (size_t i = 0; i < tools->size(); ++i) {
            const Json& t = (*tools)[i];
            const std::string where = "tools[" + std::to_string(i) + "]";
            if (block_type(t, where) != "function") throw bad_field(where + ".type", "expected 'function'");
            const Json* fn = get_object(t, "function");
            if (!fn) throw bad_field(where + ".function", "missing");
            if (!get_string(*fn, "name")) throw bad_field(where + ".function.name", "missing");
            get_object(*fn, "parameters");
            if (auto strict = get_bool(*fn, "strict")) strict_tools = strict_tools || *strict;
        }
        if (!tools->empty() && tool_choice != "none") {
            out.tools = *tools;
            req.tools = nlohmann::ordered_json::parse(tools->dump());
        }
    }
    const bool forced = tool_choice == "required" || tool_choice == "named";
    if (forced && out.tools.is_null())
        throw ApiError(400, "'tool_choice': '" + (tool_choice == "named" ? forced_name : tool_choice) +
                                "' needs at least one tool in 'tools'",
                       "tool_choice", "invalid_value");
    if (forced && !out.assistant_prefix.empty())
        throw ApiError(400, "'tool_choice' that forces a call together with an assistant prefill is not supported",
                       "tool_choice", "unsupported_value");
    const bool parallel = get_bool(body, "parallel_tool_calls").value_or(true);
    if (const Json* rf = get_object(body, "response_format")) out.grammar = response_grammar(*rf, "response_format");
    if (out.grammar && !out.assistant_prefix.empty())
        throw ApiError(400, "'response_format' together with an assistant prefill is not supported", "response_format",
                       "unsupported_value");
    if (out.grammar && !out.tools.is_null())
        throw ApiError(400, "'response_format' together with tools is not supported (the reply is either a call or the document)",
                       "response_format", "unsupported_value");
    if (const Json* kwargs = get_object(body, "chat_template_kwargs")) {
        for (const auto& [k, v] : kwargs->items()) {
            if (k == "enable_thinking") {
                if (!v.is_boolean()) throw bad_field("chat_template_kwargs.enable_thinking", "expected a boolean");
                req.enable_thinking = v.get<bool>();
            } else {
                req.extra[k] = nlohmann::ordered_json::parse(v.dump());
            }
        }
    }
    if (auto effort = get_string(body, "reasoning_effort")) {
        static const char* const k_efforts[] = {"none", "minimal", "low", "medium", "high"};
        if (std::find(std::begin(k_efforts), std::end(k_efforts), *effort) == std::end(k_efforts))
            throw bad_field("reasoning_effort", "expected none, minimal, low, medium or high");
        req.extra["reasoning_effort"] = *effort;
        if (*effort == "none" && !req.enable_thinking) req.enable_thinking = false;
    }
    try {
        out.text = chat::apply_chat_template(*model.chat_template, req);
        out.message_offsets = chat::message_offsets(*model.chat_template, req, out.text);
    } catch (const Error& e) {
        throw ApiError(400, std::string("the chat template failed on these messages: ") + e.what(), "messages",
                       "template_error");
    } catch (const std::exception& e) {
        throw ApiError(400, std::string("the chat template failed on these messages: ") + e.what(), "messages",
                       "template_error");
    }
    out.text += out.assistant_prefix;
    if (!out.tools.is_null()) tool_constraint(model, out, forced ? tool_choice : "auto", forced_name, parallel, strict_tools);
    return out;
}

Json token_logprob_json(const Tokenizer& tok, const TokenEvent& e) {
    auto entry = [&](TokenId id, float lp) {
        const std::string_view piece = tok.token_piece(id);
        Json bytes = Json::array();
        for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
        return Json{{"token", std::string(piece)}, {"logprob", lp}, {"bytes", bytes}};
    };
    Json j = entry(e.token, e.logprob);
    Json top = Json::array();
    for (const TokenLogprob& t : e.top) top.push_back(entry(t.token, t.logprob));
    j["top_logprobs"] = top;
    return j;
}

namespace {

class ChatBuilder : public ResponseBuilder {
public:
    ChatBuilder(const LoadedModel& model, int n, bool logprobs, bool include_usage)
        : tok_(model.model->tokenizer()), model_name_(model.name), logprobs_(logprobs), include_usage_(include_usage),
          choices_(static_cast<size_t>(n)) {}

    void add(const JobEvent& e, std::vector<Json>* chunks) override {
        Choice& c = choices_[static_cast<size_t>(e.index)];
        if (chunks && !c.started) {
            c.started = true;
            chunks->push_back(chunk(e.index, {{"role", "assistant"}, {"content", ""}}));
        }
        Json lp = nullptr;
        if (logprobs_ && e.kind == JobEvent::Kind::Token && e.token.token != k_no_token) {
            Json entry = token_logprob_json(tok_, e.token);
            c.logprobs.push_back(entry);
            lp = Json{{"content", Json::array({entry})}};
        }
        bool lp_sent = false;
        for (const ReplyEvent& ev : e.reply) {
            Json delta = Json::object();
            if (const auto* t = std::get_if<TextDelta>(&ev)) {
                if (t->text.empty()) continue;
                c.content += t->text;
                delta["content"] = t->text;
            } else if (const auto* t = std::get_if<ThinkingDelta>(&ev)) {
                if (t->text.empty()) continue;
                c.reasoning += t->text;
                delta["reasoning_content"] = t->text;
            } else if (const auto* start = std::get_if<ToolCallStart>(&ev)) {
                // The call's header, then its arguments as they come, as OpenAI streams them.
                const int index = static_cast<int>(c.call_index.size());
                c.call_index[start->id] = index;
                if (!chunks) continue;
                delta["tool_calls"] = Json::array({{{"index", index},
                                                    {"id", start->id},
                                                    {"type", "function"},
                                                    {"function", {{"name", start->name}, {"arguments", ""}}}}});
            } else if (const auto* piece = std::get_if<ToolCallArguments>(&ev)) {
                auto at = c.call_index.find(piece->id);
                if (!chunks || at == c.call_index.end()) continue;  // the parser always starts a call first
                delta["tool_calls"] = Json::array({{{"index", at->second}, {"function", {{"arguments", piece->text}}}}});
            } else if (const auto* call = std::get_if<ToolCall>(&ev)) {
                // The pieces streamed join to arguments_text: both forms carry the same string.
                c.tool_calls.push_back({{"id", call->id},
                                        {"type", "function"},
                                        {"function", {{"name", call->name}, {"arguments", call->arguments_text}}}});
                ++c.calls_done;
                continue;
            } else if (const auto* err = std::get_if<ReplyError>(&ev)) {
                c.errors.push_back(err->message);
                continue;
            } else if (const auto* end = std::get_if<ReplyEnd>(&ev)) {
                c.finish = std::string(reply_finish_name(end->finish));
                if (c.finish == "cancelled") c.finish = "stop";
                c.reasoning_tokens = end->usage.reasoning_tokens;
                continue;
            }
            if (chunks) {
                Json ch = chunk(e.index, delta);
                if (!lp_sent) ch["choices"][0]["logprobs"] = lp;
                lp_sent = true;
                chunks->push_back(std::move(ch));
            }
        }
        if (chunks && !lp_sent && !lp.is_null()) chunks->push_back(with_logprobs(chunk(e.index, Json::object()), lp));
        if (e.kind == JobEvent::Kind::Done) {
            c.result = e.result;
            c.done = true;
            if (c.finish.empty()) c.finish = e.result.finish == FinishReason::Stop ? "stop" : "length";
            if (chunks) {
                // A call the stream announced but the token limit cut: the stream
                // ends "length" (its deltas cannot be taken back); the whole
                // response lists only complete calls and keeps "tool_calls".
                const bool cut = e.result.finish == FinishReason::Length || e.result.finish == FinishReason::ContextFull;
                const std::string finish = cut && c.calls_done < c.call_index.size() ? "length" : c.finish;
                Json ch = chunk(e.index, Json::object());
                ch["choices"][0]["finish_reason"] = finish;
                if (!c.errors.empty()) ch["choices"][0]["errors"] = c.errors;
                chunks->push_back(std::move(ch));
            }
        }
    }

    Json response() override {
        Json choices = Json::array();
        for (size_t i = 0; i < choices_.size(); ++i) {
            const Choice& c = choices_[i];
            Json msg = {{"role", "assistant"}, {"content", c.content}};
            if (!c.reasoning.empty()) msg["reasoning_content"] = c.reasoning;
            if (!c.tool_calls.empty()) {
                msg["tool_calls"] = c.tool_calls;
                if (c.content.empty()) msg["content"] = nullptr;
            }
            Json choice = {{"index", i}, {"message", msg}, {"finish_reason", c.finish}, {"logprobs", nullptr}};
            if (logprobs_) choice["logprobs"] = {{"content", c.logprobs}};
            if (!c.errors.empty()) choice["errors"] = c.errors;
            choices.push_back(std::move(choice));
        }
        Json r = base("chat.completion");
        r["choices"] = choices;
        r["usage"] = usage();
        r["timings"] = timings();
        return r;
    }

    std::vector<Json> stream_end() override {
        if (!include_usage_) return {};
        Json r = base("chat.completion.chunk");
        r["choices"] = Json::array();
        r["usage"] = usage();
        r["timings"] = timings();
        return {r};
    }

private:
    struct Choice {
        bool started = false, done = false;
        std::string content, reasoning, finish;
        Json tool_calls = Json::array();
        std::map<std::string, int> call_index;  // streamed calls by id: their index in the stream
        size_t calls_done = 0;                  // of those, complete (the rest ended in an error)
        Json logprobs = Json::array();
        std::vector<std::string> errors;
        int reasoning_tokens = 0;
        GenerationResult result;
    };

    Json base(const char* object) const {
        return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_name_},
                {"system_fingerprint", "kiln"}};
    }
    Json chunk(int index, Json delta) const {
        Json r = base("chat.completion.chunk");
        r["choices"] = Json::array({{{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr},
                                     {"finish_reason", nullptr}}});
        return r;
    }
    static Json with_logprobs(Json ch, const Json& lp) {
        ch["choices"][0]["logprobs"] = lp;
        return ch;
    }
    Json usage() const {
        int reasoning = 0;
        for (const Choice& c : choices_) reasoning += c.reasoning_tokens;
        Json u = choices_usage(choices_);
        u["completion_tokens_details"] = {{"reasoning_tokens", reasoning}};
        return u;
    }
    Json timings() const { return choices_timings(choices_); }

    const Tokenizer& tok_;
    std::string model_name_;
    std::string id_ = random_id("chatcmpl-");
    int64_t created_ = unix_now();
    bool logprobs_, include_usage_;
    std::vector<Choice> choices_;
};

}  // namespace

std::vector<TokenId> chat_prompt_tokens(const LoadedModel& model, const ChatPrompt& prompt) {
    std::vector<TokenId> ids = model.model->tokenizer().encode(prompt.text);
    if (static_cast<int>(ids.size()) >= model.scheduler->n_ctx())
        throw ApiError(400,
                       "the prompt is " + std::to_string(ids.size()) + " tokens, the context holds " +
                           std::to_string(model.scheduler->n_ctx()) + " (start the server with a larger -c)",
                       "messages", "context_length_exceeded");
    return ids;
}

Job make_chat_job(const LoadedModel& model, const ChatPrompt& prompt, const std::vector<TokenId>& ids,
                  const GenerationFields& fields, int index, std::shared_ptr<Channel> channel) {
    const GenerateOptions& options = fields.options;
    Job j;
    j.prompt = ids;
    j.options = options;
    j.options.message_starts = chat::message_token_positions(model.model->tokenizer(), ids, prompt.text, prompt.message_offsets);
    j.spec = fields.spec;
    j.options.sampling.seed = options.sampling.seed + static_cast<uint64_t>(index);
    j.options.stop.clear();  // the parser holds stop strings back itself
    j.index = index;
    ReplyOptions ro;
    ro.starts_in_thinking = prompt_opens_thinking(model.format, prompt.text);
    ro.stop = options.stop;
    ro.tools = prompt.tools;
    j.parser = std::make_unique<ReplyParser>(model.format, ro);
    j.grammar = prompt.grammar;
    j.grammar_triggers = prompt.grammar_triggers;
    if (!j.grammar_triggers.empty()) j.grammar_prefix = prompt.assistant_prefix;
    // The prefill is part of the reply the parser reads (it may open a tool
    // call or a thought), but not of what the response returns.
    if (!prompt.assistant_prefix.empty())
        for (ReplyEvent& e : j.parser->push(prompt.assistant_prefix))
            if (!std::holds_alternative<TextDelta>(e) && !std::holds_alternative<ThinkingDelta>(e))
                j.prefill_reply.push_back(std::move(e));
    j.channel = std::move(channel);
    return j;
}

void handle_chat_input_tokens(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    const size_t n = held->model->tokenizer().encode(render_chat_prompt(*held, body).text).size();
    res.set_content(json_text({{"object", "response.input_tokens"}, {"input_tokens", n}}), "application/json");
}

void handle_chat_completions(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    GenerationFields f = parse_generation_fields(body, Api::Chat, model.model->n_vocab());
    ChatPrompt prompt = render_chat_prompt(model, body);
    std::vector<TokenId> ids = chat_prompt_tokens(model, prompt);
    auto channel = std::make_shared<Channel>();
    std::vector<Job> jobs;
    for (int i = 0; i < f.n; ++i) jobs.push_back(make_chat_job(model, prompt, ids, f, i, channel));
    auto builder = std::make_shared<ChatBuilder>(model, f.n, f.logprobs, f.include_usage);
    run_jobs(state, req, held, std::move(jobs), channel, builder, f.stream, res);
}

}  // namespace kiln::server
