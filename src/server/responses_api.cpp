// POST /v1/responses: OpenAI's Responses API. `input` (a string or items:
// messages, function_call, function_call_output) and `instructions` become the
// chat messages the template renders; the reply comes back as output items
// (reasoning, message with output_text, function_call), or as the typed event
// stream response.created ... response.completed. Completed responses are
// stored (`store`, default true) in the server's ResponseStore: a request with
// `previous_response_id` continues that conversation (its input items and
// output items come before the new input), and GET / DELETE
// /v1/responses/{id} read or drop a stored one.
#include <httplib.h>

#include <algorithm>
#include <functional>
#include <map>

#include "generation_fields.h"
#include "job_runner.h"
#include "responses_request.h"
#include "routes.h"

namespace kiln::server {

namespace {

std::string item_text(const Json& content, const std::string& where) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw bad_field(where, "expected a string or an array of content parts");
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& part = content[i];
        const std::string w = where + "[" + std::to_string(i) + "]";
        const std::string type = block_type(part, w);
        if (type != "input_text" && type != "output_text" && type != "text")
            throw ApiError(400, "'" + w + ".type': only text parts are supported, found '" + type + "'", w + ".type",
                           "unsupported_value");
        text += get_string(part, "text").value_or("");
    }
    return text;
}


class ResponsesBuilder : public ResponseBuilder {
public:
    // `on_done` receives the finished response object (to store it); may be empty.
    ResponsesBuilder(const LoadedModel& model, Json echo, std::function<void(const Json&)> on_done)
        : model_name_(model.name), echo_(std::move(echo)), on_done_(std::move(on_done)) {}

    void add(const JobEvent& e, std::vector<Json>* chunks) override {
        if (chunks && !started_) {
            started_ = true;
            Json r = response_object("in_progress");
            event(chunks, "response.created", {{"response", r}});
            event(chunks, "response.in_progress", {{"response", r}});
        }
        for (const ReplyEvent& ev : e.reply) {
            if (const auto* t = std::get_if<TextDelta>(&ev)) {
                if (t->text.empty()) continue;
                open("message", chunks);
                text_of_open_ += t->text;
                event(chunks, "response.output_text.delta", {{"item_id", items_.back()["id"]}, {"output_index", items_.size() - 1},
                                                             {"content_index", 0}, {"delta", t->text}, {"logprobs", Json::array()}});
            } else if (const auto* t = std::get_if<ThinkingDelta>(&ev)) {
                if (t->text.empty()) continue;
                open("reasoning", chunks);
                text_of_open_ += t->text;
                event(chunks, "response.reasoning_text.delta", {{"item_id", items_.back()["id"]}, {"output_index", items_.size() - 1},
                                                                {"content_index", 0}, {"delta", t->text}});
            } else if (const auto* start = std::get_if<ToolCallStart>(&ev)) {
                close(chunks);
                Json item = {{"id", random_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
                             {"call_id", start->id}, {"name", start->name}, {"arguments", ""}};
                items_.push_back(item);
                const size_t index = items_.size() - 1;
                call_item_[start->id] = index;
                event(chunks, "response.output_item.added", {{"output_index", index}, {"item", item}});
            } else if (const auto* piece = std::get_if<ToolCallArguments>(&ev)) {
                auto at = call_item_.find(piece->id);
                if (at == call_item_.end()) continue;  // the parser always starts a call first
                const size_t index = at->second;
                Json& item = items_[index];
                item["arguments"] = item["arguments"].get<std::string>() + piece->text;
                event(chunks, "response.function_call_arguments.delta",
                      {{"item_id", item["id"]}, {"output_index", index}, {"delta", piece->text}});
            } else if (const auto* call = std::get_if<ToolCall>(&ev)) {
                auto at = call_item_.find(call->id);
                if (at == call_item_.end()) continue;
                const size_t index = at->second;
                call_item_.erase(at);
                Json& item = items_[index];
                item["arguments"] = call->arguments_text;  // what the deltas joined to
                item["status"] = "completed";
                event(chunks, "response.function_call_arguments.done",
                      {{"item_id", item["id"]}, {"output_index", index}, {"name", call->name}, {"arguments", call->arguments_text}});
                event(chunks, "response.output_item.done", {{"output_index", index}, {"item", item}});
            } else if (const auto* end = std::get_if<ReplyEnd>(&ev)) {
                incomplete_ = end->finish == ReplyFinish::Length;
                reasoning_tokens_ = end->usage.reasoning_tokens;
            }
        }
        if (e.kind == JobEvent::Kind::Done) {
            result_ = e.result;
            close(chunks);
            // A call announced but then cut by the token limit or malformed: a stream
            // ends its item "incomplete" (and the response too when the limit cut
            // it); a whole response leaves it out.
            if (!call_item_.empty()) {
                if (chunks) {
                    for (const auto& [id, index] : call_item_) {
                        items_[index]["status"] = "incomplete";
                        event(chunks, "response.output_item.done", {{"output_index", index}, {"item", items_[index]}});
                    }
                    if (e.result.finish == FinishReason::Length || e.result.finish == FinishReason::ContextFull)
                        incomplete_ = true;
                } else {
                    std::vector<size_t> drop;
                    for (const auto& [id, index] : call_item_) drop.push_back(index);
                    std::sort(drop.rbegin(), drop.rend());
                    for (size_t index : drop) items_.erase(index);
                }
                call_item_.clear();
            }
            Json done = response_object(incomplete_ ? "incomplete" : "completed");
            if (on_done_) on_done_(done);
            event(chunks, "response.completed", {{"response", std::move(done)}});
        }
    }

    Json response() override { return response_object(incomplete_ ? "incomplete" : "completed"); }
    std::vector<Json> stream_end() override { return {}; }
    std::string frame(const Json& chunk) const override {
        return "event: " + chunk.value("type", std::string()) + "\ndata: " + json_text(chunk) + "\n\n";
    }
    std::string end_frame() const override { return {}; }
    std::string error_frame(int status, const std::string& message) const override {
        return frame({{"type", "error"}, {"code", status >= 500 ? "server_error" : "invalid_request_error"},
                      {"message", message}, {"param", nullptr}, {"sequence_number", sequence_}});
    }

private:
    void event(std::vector<Json>* chunks, const char* type, Json data) {
        if (!chunks) return;
        data["type"] = type;
        data["sequence_number"] = sequence_++;
        chunks->push_back(std::move(data));
    }
    // Makes the last output item an open one of `kind` (message or reasoning).
    void open(const std::string& kind, std::vector<Json>* chunks) {
        if (open_ && items_.back()["type"] == kind) return;
        close(chunks);
        Json item = kind == "message"
                        ? Json{{"id", random_id("msg_")}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"},
                               {"content", Json::array()}}
                        : Json{{"id", random_id("rs_")}, {"type", "reasoning"}, {"summary", Json::array()},
                               {"content", Json::array()}};
        items_.push_back(item);
        open_ = true;
        text_of_open_.clear();
        const size_t index = items_.size() - 1;
        event(chunks, "response.output_item.added", {{"output_index", index}, {"item", item}});
        if (kind == "message")
            event(chunks, "response.content_part.added", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                                          {"part", text_part("")}});
    }
    void close(std::vector<Json>* chunks) {
        if (!open_) return;
        open_ = false;
        Json& item = items_.back();
        const size_t index = items_.size() - 1;
        if (item["type"] == "message") {
            item["content"] = Json::array({text_part(text_of_open_)});
            item["status"] = "completed";
            event(chunks, "response.output_text.done", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                                        {"text", text_of_open_}, {"logprobs", Json::array()}});
            event(chunks, "response.content_part.done", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                                         {"part", text_part(text_of_open_)}});
        } else {
            item["content"] = Json::array({{{"type", "reasoning_text"}, {"text", text_of_open_}}});
            event(chunks, "response.reasoning_text.done", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                                           {"text", text_of_open_}});
        }
        event(chunks, "response.output_item.done", {{"output_index", index}, {"item", items_[index]}});
    }
    static Json text_part(const std::string& text) {
        return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
    }
    Json response_object(const char* status) const {
        Json r = echo_;
        r["id"] = id_;
        r["object"] = "response";
        r["created_at"] = created_;
        r["status"] = status;
        r["model"] = model_name_;
        r["output"] = std::string(status) == "in_progress" ? Json::array() : items_;
        r["error"] = nullptr;
        r["incomplete_details"] = std::string(status) == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json();
        if (std::string(status) != "in_progress") {
            const int input = result_.prompt_tokens, output = result_.completion_tokens;
            r["usage"] = {{"input_tokens", input},
                          {"input_tokens_details", prompt_tokens_details(result_)},
                          {"output_tokens", output},
                          {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens_}}},
                          {"total_tokens", input + output}};
        } else {
            r["usage"] = nullptr;
        }
        return r;
    }

    std::string model_name_;
    Json echo_;  // request fields the response object repeats
    std::function<void(const Json&)> on_done_;
    std::string id_ = random_id("resp_");
    int64_t created_ = unix_now();
    bool started_ = false, open_ = false, incomplete_ = false;
    int sequence_ = 0, reasoning_tokens_ = 0;
    Json items_ = Json::array();
    std::map<std::string, size_t> call_item_;  // calls announced, not yet complete: their item
    std::string text_of_open_;
    GenerationResult result_;
};

// `input` as a list of items (a string is one user message).
Json input_items(const Json& body) {
    const Json* input = field(body, "input");
    if (!input) throw bad_field("input", "missing");
    if (input->is_string()) return Json::array({{{"type", "message"}, {"role", "user"}, {"content", *input}}});
    if (!input->is_array()) throw bad_field("input", "expected a string or an array of items");
    return *input;
}

std::string response_id(const httplib::Request& req) { return req.matches[1].str(); }

StoredResponse stored_response(ServerState& state, const std::string& id, const char* param) {
    auto stored = state.responses->get(id);
    if (!stored)
        throw ApiError(404,
                       std::string(param ? "'" + std::string(param) + "': " : "") + "no stored response '" + id +
                           "' (sent with store false, deleted, or forgotten past --stored-responses " +
                           std::to_string(state.options.stored_responses) + ")",
                       param ? param : "", "not_found");
    return *stored;
}

}  // namespace

Json responses_to_chat_body(const Json& body) {
    Json messages = Json::array();
    if (auto instructions = get_string(body, "instructions")) messages.push_back({{"role", "system"}, {"content", *instructions}});
    const Json* input = field(body, "input");
    if (!input) throw bad_field("input", "missing");
    if (input->is_string()) {
        messages.push_back({{"role", "user"}, {"content", *input}});
    } else if (input->is_array()) {
        for (size_t i = 0; i < input->size(); ++i) {
            const Json& item = (*input)[i];
            const std::string where = "input[" + std::to_string(i) + "]";
            if (!item.is_object()) throw bad_field(where, "expected an object");
            const std::string type = get_string(item, "type").value_or("message");
            if (type == "message") {
                auto role = get_string(item, "role");
                if (!role) throw bad_field(where + ".role", "missing");
                const Json* content = field(item, "content");
                messages.push_back({{"role", *role}, {"content", content ? item_text(*content, where + ".content") : ""}});
            } else if (type == "function_call") {
                auto call_id = get_string(item, "call_id");
                auto name = get_string(item, "name");
                if (!call_id || !name) throw bad_field(where, "a function_call needs call_id and name");
                Json call = {{"id", *call_id}, {"type", "function"},
                             {"function", {{"name", *name}, {"arguments", get_string(item, "arguments").value_or("{}")}}}};
                // Consecutive calls belong to one assistant message.
                if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls"))
                    messages.back()["tool_calls"].push_back(call);
                else
                    messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}});
            } else if (type == "function_call_output") {
                auto call_id = get_string(item, "call_id");
                if (!call_id) throw bad_field(where + ".call_id", "missing");
                const Json* output = field(item, "output");
                messages.push_back({{"role", "tool"}, {"tool_call_id", *call_id},
                                    {"content", output ? item_text(*output, where + ".output") : ""}});
            } else if (type == "reasoning") {
                // A previous reply's reasoning: templates drop it from history.
            } else {
                throw ApiError(400, "'" + where + ".type': items of type '" + type + "' are not supported",
                               where + ".type", "unsupported_value");
            }
        }
    } else {
        throw bad_field("input", "expected a string or an array of items");
    }
    Json chat = {{"messages", messages}};
    if (const Json* tools = get_array(body, "tools")) {
        Json out = Json::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const Json& t = (*tools)[i];
            const std::string w = "tools[" + std::to_string(i) + "]";
            if (block_type(t, w) != "function")
                throw ApiError(400, "'" + w + ".type': only function tools are supported", w + ".type", "unsupported_value");
            out.push_back(flat_function_tool(t, w, "parameters"));
        }
        chat["tools"] = out;
    }
    if (const Json* tc = field(body, "tool_choice")) {
        if (tc->is_object()) {
            // Responses names the function flat: {"type": "function", "name": ...}.
            if (get_string(*tc, "type").value_or("") != "function")
                throw ApiError(400, "'tool_choice.type': only 'function' is supported", "tool_choice.type",
                               "unsupported_value");
            auto name = get_string(*tc, "name");
            if (!name) throw bad_field("tool_choice.name", "missing");
            chat["tool_choice"] = Json{{"type", "function"}, {"function", {{"name", *name}}}};
        } else {
            chat["tool_choice"] = *tc;
        }
    }
    if (const Json* p = field(body, "parallel_tool_calls")) chat["parallel_tool_calls"] = *p;
    if (const Json* reasoning = get_object(body, "reasoning"))
        if (auto effort = get_string(*reasoning, "effort")) chat["reasoning_effort"] = *effort;
    return chat;
}

void handle_responses(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    // The conversation so far: a stored response's input and output items, then this input.
    const std::optional<std::string> previous = get_string(body, "previous_response_id");
    Json conversation = Json::array();
    if (previous) {
        StoredResponse prior = stored_response(state, *previous, "previous_response_id");
        conversation = std::move(prior.input_items);
        for (const Json& item : prior.response["output"]) conversation.push_back(item);
    }
    for (const Json& item : input_items(body)) conversation.push_back(item);
    const bool store = get_bool(body, "store").value_or(true) && state.responses->enabled();
    std::shared_ptr<const Grammar> grammar;
    if (const Json* text = get_object(body, "text"))
        if (const Json* format = get_object(*text, "format")) grammar = response_grammar(*format, "text.format");
    Json fields = Json::object();
    if (body.contains("max_output_tokens")) fields["max_tokens"] = body["max_output_tokens"];
    for (const char* k : {"temperature", "top_p", "stream", "seed", "top_k", "min_p"})
        if (body.contains(k)) fields[k] = body[k];
    for (const char* k : k_speculative_fields)
        if (body.contains(k)) fields[k] = body[k];
    GenerationFields f;
    try {
        f = parse_generation_fields(fields, Api::Chat, model.model->n_vocab());
    } catch (const ApiError& e) {
        if (e.param() != "max_tokens") throw;
        throw ApiError(400, "'max_output_tokens'" + std::string(e.what()).substr(12), "max_output_tokens");
    }
    if (previous) responses_to_chat_body(body);  // errors name this request's own input items
    Json effective = body;
    effective["input"] = conversation;
    ChatPrompt prompt = render_chat_prompt(model, responses_to_chat_body(effective));
    if (grammar) {
        if (!prompt.tools.is_null())
            throw ApiError(400, "'text.format' together with tools is not supported (the reply is either a call or the document)",
                           "text.format", "unsupported_value");
        prompt.grammar = grammar;
    }
    std::vector<TokenId> ids = chat_prompt_tokens(model, prompt);
    Json echo = {{"instructions", body.value("instructions", Json())},
                 {"max_output_tokens", body.value("max_output_tokens", Json())},
                 {"temperature", f.options.sampling.temperature},
                 {"top_p", f.options.sampling.top_p},
                 {"tool_choice", body.value("tool_choice", Json("auto"))},
                 {"tools", body.value("tools", Json::array())},
                 {"parallel_tool_calls", get_bool(body, "parallel_tool_calls").value_or(true)},
                 {"text", body.contains("text") && body["text"].is_object() ? body["text"] : Json{{"format", {{"type", "text"}}}}},
                 {"reasoning", body.value("reasoning", Json{{"effort", nullptr}, {"summary", nullptr}})},
                 {"metadata", body.value("metadata", Json::object())},
                 {"store", store},
                 {"previous_response_id", previous ? Json(*previous) : Json()}};
    std::function<void(const Json&)> on_done;
    if (store) {
        ResponseStore* responses = state.responses.get();
        on_done = [responses, conversation](const Json& response) {
            responses->put(response["id"].get<std::string>(), {conversation, response});
        };
    }
    auto channel = std::make_shared<Channel>();
    std::vector<Job> jobs;
    jobs.push_back(make_chat_job(model, prompt, ids, f, 0, channel));
    run_jobs(state, req, held, std::move(jobs), channel, std::make_shared<ResponsesBuilder>(model, echo, std::move(on_done)), f.stream, res);
}

void handle_response_get(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    res.set_content(json_text(stored_response(state, response_id(req), nullptr).response), "application/json");
}

void handle_response_delete(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const std::string id = response_id(req);
    if (!state.responses->erase(id)) stored_response(state, id, nullptr);  // the 404
    res.set_content(json_text({{"id", id}, {"object", "response"}, {"deleted", true}}), "application/json");
}

void handle_response_input_items(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json items = stored_response(state, response_id(req), nullptr).input_items;
    res.set_content(json_text({{"object", "list"}, {"data", items}, {"has_more", false}}), "application/json");
}

}  // namespace kiln::server
