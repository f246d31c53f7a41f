#include <chrono>

#include "chat/builtin_templates.h"
#include "kiln/chat.h"
#include "kiln/chat_template.h"
#include "kiln/error.h"
#include "kiln/jinja.h"

namespace kiln {

struct ChatSession::Impl {
    std::shared_ptr<const Model> model;
    Session session;
    std::optional<jinja::Template> tmpl;
    std::string origin;
    std::string bos_text, eos_text;
    ChatFormat format;
    ContextPolicy policy = ContextPolicy::Stop;
    int dropped_turns = 0;
    nlohmann::ordered_json prompt_messages;  // the messages the last prompt_tokens rendered
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();

    std::string render(const nlohmann::ordered_json& msgs, const ChatTurnOptions& o) const;
    chat::ChatRequest request(const nlohmann::ordered_json& msgs, const ChatTurnOptions& o) const;
    std::vector<TokenId> prompt_tokens(const ChatTurnOptions& o);

    Impl(std::shared_ptr<const Model> m, const ContextOptions& c) : model(m), session(m, c) {}
};

ChatSession::ChatSession(std::shared_ptr<const Model> model, const ChatOptions& options)
    : impl_(std::make_unique<Impl>(model, options.context)) {
    Impl& im = *impl_;
    im.policy = options.context_policy;
    const Tokenizer& tok = model->tokenizer();
    chat::ModelTemplate mt = chat::model_template(model->file());
    im.bos_text = mt.bos_token;
    im.eos_text = mt.eos_token;
    std::string source;
    if (options.template_source) {
        source = *options.template_source;
        im.origin = "option";
    } else if (mt.source) {
        source = *mt.source;
        im.origin = "file";
    } else if (auto b = chat::builtin_template_for(tok)) {
        source = b->source;
        im.origin = "built-in " + b->name + " (the file has no tokenizer.chat_template)";
    } else {
        throw Error(model->path() + ": the model has no chat template (tokenizer.chat_template) and its vocabulary "
                    "has no known turn markers; give a template file");
    }
    im.tmpl.emplace(source);
    im.format = detect_chat_format(source, [&](std::string_view t) { return tok.find_token(t) != k_no_token; });
}

ChatSession::~ChatSession() = default;

const ChatFormat& ChatSession::format() const { return impl_->format; }
const std::string& ChatSession::template_origin() const { return impl_->origin; }
Session& ChatSession::session() { return impl_->session; }
nlohmann::ordered_json& ChatSession::messages() { return impl_->messages; }

void ChatSession::set_system(const std::string& text) {
    auto& m = impl_->messages;
    if (!m.empty() && m[0].value("role", "") == "system") {
        m[0]["content"] = text;
        return;
    }
    m.insert(m.begin(), nlohmann::ordered_json{{"role", "system"}, {"content", text}});
}

void ChatSession::add_user(const std::string& text) {
    impl_->messages.push_back(nlohmann::ordered_json{{"role", "user"}, {"content", text}});
}

void ChatSession::add_message(nlohmann::ordered_json message) { impl_->messages.push_back(std::move(message)); }

void ChatSession::add_tool_result(const ToolCall& call, const std::string& content) {
    impl_->messages.push_back(nlohmann::ordered_json(tool_result_message(call, content)));
}

void ChatSession::reset() { impl_->messages = nlohmann::ordered_json::array(); }

std::string ChatSession::render(const ChatTurnOptions& o) const { return impl_->render(impl_->messages, o); }

int ChatSession::dropped_turns() const { return impl_->dropped_turns; }

std::string ChatSession::Impl::render(const nlohmann::ordered_json& msgs, const ChatTurnOptions& o) const {
    return chat::apply_chat_template(*tmpl, request(msgs, o));
}

chat::ChatRequest ChatSession::Impl::request(const nlohmann::ordered_json& msgs, const ChatTurnOptions& o) const {
    const Impl& im = *this;
    chat::ChatRequest req;
    req.messages = msgs;
    if (!o.tools.is_null() && !o.tools.empty()) req.tools = o.tools;
    req.add_generation_prompt = true;
    req.enable_thinking = o.thinking;
    req.bos_token = im.bos_text;
    req.eos_token = im.eos_text;
    return req;
}

// The prompt's tokens. With DropOldest, whole turns (a user message and what
// answered it) leave the front of the conversation, after any system messages,
// until the prompt leaves room for the reply: max_tokens, or a quarter of the
// context when unbounded (at most half of it).
std::vector<TokenId> ChatSession::Impl::prompt_tokens(const ChatTurnOptions& o) {
    dropped_turns = 0;
    prompt_messages = messages;
    const Tokenizer& tok = model->tokenizer();
    std::vector<TokenId> ids = tok.encode(render(messages, o) + o.assistant_prefix);
    if (policy != ContextPolicy::DropOldest) return ids;
    const int n_ctx = session.context().n_ctx();
    const int reply = o.generate.max_tokens > 0 ? std::min(o.generate.max_tokens, n_ctx / 2) : n_ctx / 4;
    nlohmann::ordered_json kept = messages;
    while (static_cast<int>(ids.size()) + reply > n_ctx) {
        size_t first = 0;
        while (first < kept.size() && kept[first].value("role", "") == "system") ++first;
        // The turn: from `first` up to (not including) the next user message.
        size_t end = first + 1;
        while (end < kept.size() && kept[end].value("role", "") != "user") ++end;
        if (first >= kept.size() || end >= kept.size()) break;  // the latest turn stays
        kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(first), kept.begin() + static_cast<std::ptrdiff_t>(end));
        ++dropped_turns;
        ids = tok.encode(render(kept, o) + o.assistant_prefix);
    }
    prompt_messages = kept;
    if (static_cast<int>(ids.size()) >= n_ctx)
        throw Error("the latest turn alone is " + std::to_string(ids.size()) + " tokens, more than the context of " +
                        std::to_string(n_ctx),
                    ErrorKind::ResourceExhausted);
    return ids;
}

ChatReply ChatSession::reply(const ChatTurnOptions& o, const ReplyCallback& on_event) {
    Impl& im = *impl_;
    std::vector<TokenId> ids = im.prompt_tokens(o);
    // The text of what is sent: the kept turns when DropOldest left some out.
    const std::string prompt = im.render(im.prompt_messages, o) + o.assistant_prefix;
    ReplyOptions ro;
    ro.starts_in_thinking = prompt_opens_thinking(im.format, prompt);
    ro.stop = o.generate.stop;
    ro.tools = o.tools;
    ReplyParser parser(im.format, ro);
    bool stopped_by_callback = false;
    auto deliver = [&](std::vector<ReplyEvent> events) {
        for (const ReplyEvent& ev : events)
            if (on_event && !on_event(ev)) stopped_by_callback = true;
    };
    if (!o.assistant_prefix.empty()) deliver(parser.push(o.assistant_prefix));
    GenerateOptions go = o.generate;
    go.stop.clear();  // the parser holds stop strings back itself
    // Checkpoints at the starts of the messages sent (after DropOldest: the kept ones).
    go.message_starts = chat::message_token_positions(im.model->tokenizer(), ids, prompt,
                                                      chat::message_offsets(*im.tmpl, im.request(im.prompt_messages, o), prompt));
    GenerationResult r = im.session.generate(ids, go, [&](const TokenEvent& e) {
        deliver(parser.push(e.text));
        return !parser.done() && !stopped_by_callback;
    });
    ReplyFinish finish = ReplyFinish::Stop;
    switch (r.finish) {
        case FinishReason::Stop: finish = ReplyFinish::Stop; break;
        case FinishReason::Length:
        case FinishReason::ContextFull: finish = ReplyFinish::Length; break;
        case FinishReason::Cancelled: finish = ReplyFinish::Cancelled; break;
    }
    // A reply that made complete tool calls finishes with tool_calls even when the
    // model rambled on to the token limit afterwards: the calls are what the
    // client acts on (text after them stays in the message's content). A call
    // that was closed but could not be read counts too (its error is already in
    // the message; errors added by finish() below are calls the limit cut off).
    if (finish == ReplyFinish::Length && (!parser.message().tool_calls.empty() || !parser.message().errors.empty()))
        finish = ReplyFinish::Stop;
    Usage usage{r.prompt_tokens, r.reused_tokens, r.completion_tokens, 0};
    ChatReply out;
    for (const ReplyEvent& ev : parser.finish(finish, usage)) {
        if (const auto* end = std::get_if<ReplyEnd>(&ev)) {
            out.finish = end->finish;
            out.usage = end->usage;
        }
        if (on_event) on_event(ev);
    }
    out.message = parser.message();
    out.prefill_seconds = r.prefill_seconds;
    out.decode_seconds = r.decode_seconds;
    out.spec = r.spec;
    im.messages.push_back(nlohmann::ordered_json(assistant_message(out.message, o.include_reasoning_in_history)));
    return out;
}

}  // namespace kiln
