// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API.
// The request is turned into the OpenAI-shaped messages the chat template
// renders (system, text, tool_use / tool_result, thinking blocks), generated as
// a chat request, and answered as content blocks (thinking, text, tool_use) or
// the stream of named events message_start ... message_stop.
#include <httplib.h>

#include "generation_fields.h"
#include "job_runner.h"
#include "routes.h"

namespace kiln::server {

namespace {

// A text-or-blocks value as text (system prompts, tool results).
std::string blocks_text(const Json& v, const std::string& where) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) throw bad_field(where, "expected a string or an array of content blocks");
    std::string text;
    for (size_t i = 0; i < v.size(); ++i) {
        const Json& b = v[i];
        const std::string w = where + "[" + std::to_string(i) + "]";
        if (!b.is_object() || b.value("type", "") != "text")
            throw bad_field(w + ".type", "only text blocks are supported here");
        auto t = get_string(b, "text");
        if (!t) throw bad_field(w + ".text", "missing");
        text += *t;
    }
    return text;
}

// Anthropic messages -> the OpenAI chat body that render_chat_prompt reads.
Json to_chat_body(const Json& body) {
    Json messages = Json::array();
    if (const Json* system = field(body, "system")) messages.push_back({{"role", "system"}, {"content", blocks_text(*system, "system")}});
    const Json* in = get_array(body, "messages");
    if (!in) throw bad_field("messages", "missing");
    if (in->empty()) throw bad_field("messages", "must hold at least one message");
    for (size_t i = 0; i < in->size(); ++i) {
        const Json& m = (*in)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw bad_field(where, "expected an object");
        auto role = get_string(m, "role");
        if (!role || (*role != "user" && *role != "assistant")) throw bad_field(where + ".role", "expected 'user' or 'assistant'");
        const Json* content = field(m, "content");
        if (!content) throw bad_field(where + ".content", "missing");
        if (content->is_string()) {
            messages.push_back({{"role", *role}, {"content", *content}});
            continue;
        }
        if (!content->is_array()) throw bad_field(where + ".content", "expected a string or an array of content blocks");
        std::string text, thinking;
        Json tool_calls = Json::array();
        for (size_t k = 0; k < content->size(); ++k) {
            const Json& b = (*content)[k];
            const std::string w = where + ".content[" + std::to_string(k) + "]";
            if (!b.is_object()) throw bad_field(w, "expected a content block");
            const std::string type = get_string(b, "type").value_or("");
            if (type == "text") {
                text += get_string(b, "text").value_or("");
            } else if (type == "thinking" && *role == "assistant") {
                thinking += get_string(b, "thinking").value_or("");
            } else if (type == "redacted_thinking" && *role == "assistant") {
            } else if (type == "tool_use" && *role == "assistant") {
                auto id = get_string(b, "id");
                auto name = get_string(b, "name");
                if (!id || !name) throw bad_field(w, "a tool_use block needs id and name");
                const Json* input = get_object(b, "input");
                tool_calls.push_back({{"id", *id}, {"type", "function"},
                                      {"function", {{"name", *name}, {"arguments", input ? *input : Json::object()}}}});
            } else if (type == "tool_result" && *role == "user") {
                auto id = get_string(b, "tool_use_id");
                if (!id) throw bad_field(w + ".tool_use_id", "missing");
                const Json* c = field(b, "content");
                messages.push_back({{"role", "tool"}, {"tool_call_id", *id},
                                    {"content", c ? blocks_text(*c, w + ".content") : std::string()}});
            } else {
                throw ApiError(400, "'" + w + ".type': '" + type + "' blocks are not supported in " + *role + " messages",
                               w + ".type", "unsupported_value");
            }
        }
        if (!text.empty() || !tool_calls.empty() || !thinking.empty() || *role == "assistant") {
            Json msg = {{"role", *role}, {"content", text}};
            if (!thinking.empty()) msg["reasoning_content"] = thinking;
            if (!tool_calls.empty()) msg["tool_calls"] = tool_calls;
            messages.push_back(std::move(msg));
        }
    }
    Json chat = {{"messages", messages}};
    if (const Json* tools = get_array(body, "tools")) {
        Json out = Json::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const Json& t = (*tools)[i];
            const std::string w = "tools[" + std::to_string(i) + "]";
            if (!t.is_object()) throw bad_field(w, "expected an object");
            auto name = get_string(t, "name");
            if (!name) throw bad_field(w + ".name", "missing");
            Json fn = {{"name", *name}, {"parameters", get_object(t, "input_schema") ? t["input_schema"] : Json::object()}};
            if (auto d = get_string(t, "description")) fn["description"] = *d;
            out.push_back({{"type", "function"}, {"function", fn}});
        }
        chat["tools"] = out;
    }
    if (const Json* tc = get_object(body, "tool_choice")) {
        const std::string type = get_string(*tc, "type").value_or("");
        if (type == "auto" || type == "none") chat["tool_choice"] = type;
        else if (type == "any") chat["tool_choice"] = "required";
        else if (type == "tool") chat["tool_choice"] = Json{{"type", "function"}};
        else throw bad_field("tool_choice.type", "expected auto, any, tool or none");
    }
    if (const Json* thinking = get_object(body, "thinking")) {
        const std::string type = get_string(*thinking, "type").value_or("");
        if (type != "enabled" && type != "disabled") throw bad_field("thinking.type", "expected 'enabled' or 'disabled'");
        chat["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
    }
    return chat;
}

class MessagesBuilder : public ResponseBuilder {
public:
    MessagesBuilder(const LoadedModel& model, int input_tokens) : model_name_(model.name), input_tokens_(input_tokens) {}

    void add(const JobEvent& e, std::vector<Json>* chunks) override {
        if (chunks && !started_) {
            started_ = true;
            Json msg = skeleton();
            msg["content"] = Json::array();
            msg["usage"] = {{"input_tokens", input_tokens_}, {"output_tokens", 0}};
            chunks->push_back({{"type", "message_start"}, {"message", msg}});
        }
        for (const ReplyEvent& ev : e.reply) {
            if (const auto* t = std::get_if<TextDelta>(&ev)) {
                if (t->text.empty()) continue;
                open("text", chunks);
                blocks_.back()["text"] = blocks_.back()["text"].get<std::string>() + t->text;
                if (chunks) chunks->push_back(delta({{"type", "text_delta"}, {"text", t->text}}));
            } else if (const auto* t = std::get_if<ThinkingDelta>(&ev)) {
                if (t->text.empty()) continue;
                open("thinking", chunks);
                blocks_.back()["thinking"] = blocks_.back()["thinking"].get<std::string>() + t->text;
                if (chunks) chunks->push_back(delta({{"type", "thinking_delta"}, {"thinking", t->text}}));
            } else if (const auto* call = std::get_if<ToolCall>(&ev)) {
                close(chunks);
                blocks_.push_back({{"type", "tool_use"}, {"id", "toolu_" + call->id.substr(call->id.rfind('_') + 1)},
                                   {"name", call->name}, {"input", Json::object()}});
                if (chunks) {
                    chunks->push_back({{"type", "content_block_start"}, {"index", blocks_.size() - 1}, {"content_block", blocks_.back()}});
                    chunks->push_back(delta({{"type", "input_json_delta"}, {"partial_json", json_text(call->arguments)}}));
                }
                blocks_.back()["input"] = call->arguments;
                open_ = true;
                close(chunks);
            } else if (const auto* end = std::get_if<ReplyEnd>(&ev)) {
                stop_reason_ = end->finish == ReplyFinish::ToolCalls ? "tool_use"
                               : end->finish == ReplyFinish::Length  ? "max_tokens"
                                                                     : "end_turn";
            }
        }
        if (e.kind == JobEvent::Kind::Done) {
            result_ = e.result;
            if (stop_reason_.empty()) stop_reason_ = e.result.finish == FinishReason::Stop ? "end_turn" : "max_tokens";
            close(chunks);
            if (chunks) {
                chunks->push_back({{"type", "message_delta"},
                                   {"delta", {{"stop_reason", stop_reason_}, {"stop_sequence", nullptr}}},
                                   {"usage", {{"output_tokens", result_.completion_tokens}}}});
                chunks->push_back({{"type", "message_stop"}});
            }
        }
    }

    Json response() override {
        Json r = skeleton();
        r["content"] = blocks_;
        r["stop_reason"] = stop_reason_;
        r["usage"] = {{"input_tokens", result_.prompt_tokens - result_.reused_tokens},
                      {"cache_read_input_tokens", result_.reused_tokens},
                      {"cache_creation_input_tokens", 0},
                      {"output_tokens", result_.completion_tokens}};
        return r;
    }
    std::vector<Json> stream_end() override { return {}; }
    std::string frame(const Json& chunk) const override {
        return "event: " + chunk.value("type", std::string("message")) + "\ndata: " + json_text(chunk) + "\n\n";
    }
    std::string end_frame() const override { return {}; }
    std::string error_frame(int status, const std::string& message) const override {
        return frame(anthropic_error_body(status, message));
    }

private:
    Json skeleton() const {
        return {{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_name_},
                {"stop_reason", nullptr}, {"stop_sequence", nullptr}};
    }
    Json delta(Json d) const { return {{"type", "content_block_delta"}, {"index", blocks_.size() - 1}, {"delta", std::move(d)}}; }
    // Makes the last block one of `type`, closing another one that is open.
    void open(const std::string& type, std::vector<Json>* chunks) {
        if (open_ && blocks_.back()["type"] == type) return;
        close(chunks);
        Json block = {{"type", type}, {type == "thinking" ? "thinking" : "text", ""}};
        if (type == "thinking") block["signature"] = "";
        blocks_.push_back(block);
        open_ = true;
        if (chunks) chunks->push_back({{"type", "content_block_start"}, {"index", blocks_.size() - 1}, {"content_block", block}});
    }
    void close(std::vector<Json>* chunks) {
        if (!open_) return;
        open_ = false;
        if (chunks) chunks->push_back({{"type", "content_block_stop"}, {"index", blocks_.size() - 1}});
    }

    std::string model_name_;
    int input_tokens_;
    std::string id_ = random_id("msg_");
    bool started_ = false, open_ = false;
    Json blocks_ = Json::array();
    std::string stop_reason_;
    GenerationResult result_;
};

}  // namespace

void handle_messages(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    LoadedModel& model = state.model_for(body);
    if (!get_int(body, "max_tokens", 1, 1 << 30)) throw bad_field("max_tokens", "missing (the Messages API requires it)");
    // The sampling fields under their OpenAI names, for the shared reader.
    Json fields = Json::object();
    for (const char* k : {"max_tokens", "temperature", "top_p", "top_k", "stream"})
        if (body.contains(k)) fields[k] = body[k];
    const std::vector<std::string> stops = get_strings(body, "stop_sequences", 16);
    if (!stops.empty()) fields["stop"] = stops;
    GenerationFields f = parse_generation_fields(fields, Api::Chat, model.model->n_vocab());
    ChatPrompt prompt = render_chat_prompt(model, to_chat_body(body));
    std::vector<TokenId> ids = chat_prompt_tokens(model, prompt);
    auto channel = std::make_shared<Channel>();
    std::vector<Job> jobs;
    jobs.push_back(make_chat_job(model, prompt, ids, f.options, 0, channel));
    auto builder = std::make_shared<MessagesBuilder>(model, static_cast<int>(ids.size()));
    run_jobs(state, model, std::move(jobs), channel, builder, f.stream, res);
}

void handle_count_tokens(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    LoadedModel& model = state.model_for(body);
    ChatPrompt prompt = render_chat_prompt(model, to_chat_body(body));
    const size_t n = model.model->tokenizer().encode(prompt.text).size();
    res.set_content(json_text({{"input_tokens", n}}), "application/json");
}

}  // namespace kiln::server
