// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API.
// The request is turned into the OpenAI-shaped messages the chat template
// renders (system, text, tool_use / tool_result, thinking blocks), generated as
// a chat request, and answered as content blocks (thinking, text, tool_use) or
// the stream of named events message_start ... message_stop.
#include <httplib.h>

#include <optional>

#include "anthropic_request.h"
#include "generation_fields.h"
#include "job_runner.h"
#include "routes.h"

namespace kiln::server {

namespace {

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
            } else if (const auto* start = std::get_if<ToolCallStart>(&ev)) {
                close(chunks);
                blocks_.push_back({{"type", "tool_use"}, {"id", "toolu_" + start->id.substr(start->id.rfind('_') + 1)},
                                   {"name", start->name}, {"input", Json::object()}});
                if (chunks)
                    chunks->push_back({{"type", "content_block_start"}, {"index", blocks_.size() - 1}, {"content_block", blocks_.back()}});
                open_ = true;
                open_call_ = start->id;
            } else if (const auto* piece = std::get_if<ToolCallArguments>(&ev)) {
                if (chunks && piece->id == open_call_)
                    chunks->push_back(delta({{"type", "input_json_delta"}, {"partial_json", piece->text}}));
            } else if (const auto* call = std::get_if<ToolCall>(&ev)) {
                if (call->id == open_call_) {
                    blocks_.back()["input"] = call->arguments;
                    open_call_.clear();
                }
                close(chunks);
            } else if (const auto* end = std::get_if<ReplyEnd>(&ev)) {
                stop_reason_ = end->finish == ReplyFinish::ToolCalls ? "tool_use"
                               : end->finish == ReplyFinish::Length  ? "max_tokens"
                               : !end->stop_string.empty()           ? "stop_sequence"
                                                                     : "end_turn";
                if (!end->stop_string.empty() && stop_reason_ == "stop_sequence") stop_sequence_ = end->stop_string;
            }
        }
        if (e.kind == JobEvent::Kind::Done) {
            result_ = e.result;
            if (stop_reason_.empty()) stop_reason_ = e.result.finish == FinishReason::Stop ? "end_turn" : "max_tokens";
            // A stream that showed a tool_use block the token limit then cut ends "max_tokens".
            if (chunks && !open_call_.empty() && e.result.finish != FinishReason::Stop) stop_reason_ = "max_tokens";
            if (!e.result.stop_string.empty() && stop_reason_ != "tool_use") {
                stop_reason_ = "stop_sequence";
                stop_sequence_ = e.result.stop_string;
            }
            close(chunks);
            if (chunks) {
                Json usage = {{"output_tokens", result_.completion_tokens}};
                if (Json s = cache_shortfall(result_); !s.is_null()) usage["cache_shortfall"] = s;
                chunks->push_back({{"type", "message_delta"},
                                   {"delta", {{"stop_reason", stop_reason_}, {"stop_sequence", stop_sequence()}}},
                                   {"usage", usage}});
                chunks->push_back({{"type", "message_stop"}});
            }
        }
    }

    Json response() override {
        Json r = skeleton();
        r["content"] = blocks_;
        r["stop_reason"] = stop_reason_;
        r["stop_sequence"] = stop_sequence();
        r["usage"] = {{"input_tokens", result_.prompt_tokens - result_.reused_tokens},
                      {"cache_read_input_tokens", result_.reused_tokens},
                      {"cache_creation_input_tokens", 0},
                      {"output_tokens", result_.completion_tokens}};
        if (Json s = cache_shortfall(result_); !s.is_null()) r["usage"]["cache_shortfall"] = s;
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
    Json stop_sequence() const { return stop_sequence_ ? Json(*stop_sequence_) : Json(nullptr); }
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
        if (!open_call_.empty()) {
            // Announced, but its arguments did not parse (the reply's error says so):
            // a stream has shown its start and ends it here; a whole response leaves it out.
            open_call_.clear();
            if (!chunks) {
                blocks_.erase(blocks_.size() - 1);
                return;
            }
        }
        if (chunks) chunks->push_back({{"type", "content_block_stop"}, {"index", blocks_.size() - 1}});
    }

    std::string model_name_;
    int input_tokens_;
    std::string id_ = random_id("msg_");
    bool started_ = false, open_ = false;
    std::string open_call_;  // the tool_use block's call, announced and not yet complete
    Json blocks_ = Json::array();
    std::string stop_reason_;
    std::optional<std::string> stop_sequence_;  // the stop_sequences entry that ended the reply
    GenerationResult result_;
};

}  // namespace

void handle_messages(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    if (!get_int(body, "max_tokens", 1, 1 << 30)) throw bad_field("max_tokens", "missing (the Messages API requires it)");
    // The sampling fields under their OpenAI names, for the shared reader.
    Json fields = Json::object();
    for (const char* k : {"max_tokens", "temperature", "top_p", "top_k", "stream"})
        if (body.contains(k)) fields[k] = body[k];
    for (const char* k : k_speculative_fields)
        if (body.contains(k)) fields[k] = body[k];
    const std::vector<std::string> stops = get_strings(body, "stop_sequences", 16);
    if (!stops.empty()) fields["stop"] = stops;
    GenerationFields f = parse_generation_fields(fields, Api::Chat, model.model->n_vocab());
    ChatPrompt prompt = render_chat_prompt(model, anthropic_to_chat_body(body));
    std::vector<TokenId> ids = chat_prompt_tokens(model, prompt);
    auto channel = std::make_shared<Channel>();
    std::vector<Job> jobs;
    jobs.push_back(make_chat_job(model, prompt, ids, f, 0, channel));
    auto builder = std::make_shared<MessagesBuilder>(model, static_cast<int>(ids.size()));
    run_jobs(state, req, held, std::move(jobs), channel, builder, f.stream, res);
}

void handle_count_tokens(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    ChatPrompt prompt = render_chat_prompt(model, anthropic_to_chat_body(body));
    const size_t n = model.model->tokenizer().encode(prompt.text).size();
    res.set_content(json_text({{"input_tokens", n}}), "application/json");
}

}  // namespace kiln::server
