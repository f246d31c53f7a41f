// Ollama's API on the same port: /api/chat, /api/generate (NDJSON streams,
// `stream` true by default), /api/tags, /api/ps, /api/show, /api/version.
// Durations are nanoseconds; errors are {"error": "..."}.
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

#include "generation_fields.h"
#include "job_runner.h"
#include "kiln/chat_template.h"
#include "routes.h"

namespace kiln::server {

namespace {

// Clients read the version to decide which features to use; kiln answers as a
// recent Ollama (the routes here follow its current API docs).
constexpr const char* k_ollama_version = "0.12.0";

std::string rfc3339_now() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns));
    return buf;
}

// Ollama's options -> the OpenAI-named fields the shared reader takes; errors
// name the Ollama field.
GenerationFields ollama_fields(const Json& body, int n_vocab) {
    static const std::pair<const char*, const char*> k_names[] = {
        {"num_predict", "max_tokens"}, {"temperature", "temperature"}, {"top_k", "top_k"},
        {"top_p", "top_p"},           {"min_p", "min_p"},             {"typical_p", "typical_p"},
        {"seed", "seed"},             {"stop", "stop"},               {"repeat_penalty", "repeat_penalty"},
        {"presence_penalty", "presence_penalty"}, {"frequency_penalty", "frequency_penalty"}};
    Json fields = Json::object();
    fields["stream"] = get_bool(body, "stream").value_or(true);
    for (const char* k : k_speculative_fields)
        if (body.contains(k)) fields[k] = body[k];
    if (const Json* options = get_object(body, "options")) {
        for (const auto& [ollama, openai] : k_names) {
            auto it = options->find(ollama);
            if (it == options->end() || it->is_null()) continue;
            // num_predict -1 (until the end) and -2 (fill the context) are the default here.
            if (std::string(ollama) == "num_predict" && it->is_number_integer() && it->get<long long>() < 0) continue;
            fields[openai] = *it;
        }
        if (auto it = options->find("num_ctx"); it != options->end() && !it->is_null() && !it->is_number_integer())
            throw bad_field("options.num_ctx", "expected an integer");
    }
    try {
        return parse_generation_fields(fields, Api::Chat, n_vocab);
    } catch (const ApiError& e) {
        std::string param = e.param();
        for (const auto& [ollama, openai] : k_names)
            if (param == openai) param = ollama;
        throw ApiError(400, "'options." + param + "': " + std::string(e.what()).substr(e.param().size() + 4),
                       "options." + param);
    }
}

// keep_alive as Ollama reads it: seconds as a number, or a Go duration string
// ("5m", "1h30m", "300ms", "-1"; a bare number is seconds). Negative: keep.
std::optional<double> keep_alive_seconds(const Json& body) {
    const Json* k = field(body, "keep_alive");
    if (!k) return std::nullopt;
    if (k->is_number()) return k->get<double>();
    if (!k->is_string()) throw bad_field("keep_alive", "expected a duration string or seconds");
    const std::string s = k->get<std::string>();
    auto bad = [&] { return bad_field("keep_alive", "'" + s + "' is not a duration (e.g. 5m, 1h30m, 300ms, -1)"); };
    size_t i = 0;
    const bool negative = !s.empty() && s[0] == '-';
    if (negative || (!s.empty() && s[0] == '+')) ++i;
    if (i == s.size()) throw bad();
    double total = 0;
    while (i < s.size()) {
        size_t used = 0;
        double v = 0;
        try {
            v = std::stod(s.substr(i), &used);
        } catch (const std::exception&) {
            throw bad();
        }
        i += used;
        static const std::pair<const char*, double> k_units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3},
                                                                  {"s", 1}, {"m", 60}, {"h", 3600}};
        double unit = 0;
        for (const auto& [name, scale] : k_units) {
            const size_t n = std::char_traits<char>::length(name);
            if (s.compare(i, n, name) == 0) {  // the list has "ms" before "m" and "s"
                unit = scale;
                i += n;
                break;
            }
        }
        if (unit == 0) {
            if (i != s.size() || total != 0) throw bad();
            unit = 1;  // a bare number: seconds
        }
        total += v * unit;
    }
    return negative ? -total : total;
}

// Ollama's format ("json", or a JSON Schema object) as the chat body's response_format.
void add_ollama_format(const Json& body, Json& chat) {
    const Json* format = field(body, "format");
    if (!format) return;
    if (format->is_string()) {
        if (format->get<std::string>().empty()) return;  // Ollama's "no format"
        if (format->get<std::string>() != "json") throw bad_field("format", "expected \"json\" or a JSON Schema object");
        chat["response_format"] = {{"type", "json_object"}};
    } else if (format->is_object()) {
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", *format}}}};
    } else {
        throw bad_field("format", "expected \"json\" or a JSON Schema object");
    }
}

// What keep_alive asks of the model once the reply has been sent.
struct KeepAlive {
    std::optional<double> seconds;  // absent: as it was; < 0: keep; 0: unload; > 0: unload after that long idle
    bool unload_now() const { return seconds && *seconds == 0; }
};

KeepAlive check_ollama_common(const Json& body) { return {keep_alive_seconds(body)}; }

// Applies a keep_alive other than 0 (that one unloads; see run_ollama).
void apply_keep_alive(ModelCache& cache, const std::string& name, const KeepAlive& keep) {
    if (!keep.seconds || *keep.seconds == 0) return;
    if (*keep.seconds < 0) {
        cache.set_expiry(name, std::nullopt);
        return;
    }
    const auto span = std::chrono::duration_cast<ModelCache::Clock::duration>(
        std::chrono::duration<double>(std::min(*keep.seconds, 1e9)));
    cache.set_expiry(name, ModelCache::Clock::now() + span);
}

// RFC 3339 of a steady-clock deadline, for /api/ps.
std::string rfc3339_at(ModelCache::Clock::time_point t) {
    const auto wall = std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(t - ModelCache::Clock::now());
    const std::time_t secs = std::chrono::system_clock::to_time_t(wall);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

class OllamaBuilder : public ResponseBuilder {
public:
    OllamaBuilder(const LoadedModel& model, bool chat, bool raw_text) : model_name_(model.name), chat_(chat), raw_(raw_text) {}

    void add(const JobEvent& e, std::vector<Json>* chunks) override {
        std::string text, thinking;
        Json calls = Json::array();
        if (raw_ && e.kind == JobEvent::Kind::Token) text = e.token.text;
        for (const ReplyEvent& ev : e.reply) {
            if (const auto* t = std::get_if<TextDelta>(&ev)) text += t->text;
            else if (const auto* t = std::get_if<ThinkingDelta>(&ev)) thinking += t->text;
            else if (const auto* c = std::get_if<ToolCall>(&ev))
                calls.push_back({{"function", {{"name", c->name}, {"arguments", c->arguments}}}});
            else if (const auto* end = std::get_if<ReplyEnd>(&ev))
                done_reason_ = end->finish == ReplyFinish::Length ? "length" : "stop";
        }
        text_ += text;
        thinking_ += thinking;
        for (const Json& c : calls) calls_.push_back(c);
        if (chunks && (!text.empty() || !thinking.empty() || !calls.empty())) chunks->push_back(piece(text, thinking, calls, false));
        if (e.kind == JobEvent::Kind::Done) {
            result_ = e.result;
            if (done_reason_.empty())
                done_reason_ = e.result.finish == FinishReason::Length || e.result.finish == FinishReason::ContextFull ? "length" : "stop";
            if (chunks) chunks->push_back(final_piece("", "", Json::array()));
        }
    }
    Json response() override { return final_piece(text_, thinking_, calls_); }
    std::vector<Json> stream_end() override { return {}; }
    std::string frame(const Json& chunk) const override { return json_text(chunk) + "\n"; }
    std::string end_frame() const override { return {}; }
    std::string error_frame(int, const std::string& message) const override { return frame({{"error", message}}); }
    const char* stream_content_type() const override { return "application/x-ndjson"; }
    std::string keep_alive_frame() const override { return {}; }

private:
    Json piece(const std::string& text, const std::string& thinking, const Json& calls, bool done) const {
        Json r = {{"model", model_name_}, {"created_at", rfc3339_now()}};
        if (chat_) {
            Json msg = {{"role", "assistant"}, {"content", text}};
            if (!thinking.empty()) msg["thinking"] = thinking;
            if (!calls.empty()) msg["tool_calls"] = calls;
            r["message"] = msg;
        } else {
            r["response"] = text;
            if (!thinking.empty()) r["thinking"] = thinking;
        }
        r["done"] = done;
        return r;
    }
    Json final_piece(const std::string& text, const std::string& thinking, const Json& calls) const {
        Json r = piece(text, thinking, calls, true);
        const auto ns = [](double s) { return static_cast<int64_t>(s * 1e9); };
        r["done_reason"] = done_reason_;
        r["total_duration"] = ns(result_.prefill_seconds + result_.decode_seconds);
        r["load_duration"] = 0;
        r["prompt_eval_count"] = result_.prompt_tokens - result_.reused_tokens;
        if (Json s = cache_shortfall(result_); !s.is_null()) r["cache_shortfall"] = s;
        r["prompt_eval_duration"] = ns(result_.prefill_seconds);
        r["eval_count"] = result_.completion_tokens;
        r["eval_duration"] = ns(result_.decode_seconds);
        return r;
    }

    std::string model_name_;
    bool chat_, raw_;
    std::string text_, thinking_, done_reason_;
    Json calls_ = Json::array();
    GenerationResult result_;
};

Json model_details(const LoadedModel* m) {
    const std::string family = m ? m->model->architecture() : "";
    return {{"parent_model", ""}, {"format", "gguf"}, {"family", family},
            {"families", m ? Json::array({family}) : Json()}, {"parameter_size", ""}, {"quantization_level", ""}};
}

// A model listed by /api/tags (resident or not: then without its family) and /api/ps.
Json model_entry(const std::string& name, const std::string& path, const LoadedModel* m) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    // Ollama names carry a tag: a model named with one (smollm2:135m) keeps it.
    const size_t slash = name.rfind('/');
    const bool tagged = name.find(':', slash == std::string::npos ? 0 : slash + 1) != std::string::npos;
    const std::string tag_name = tagged ? name : name + ":latest";
    return {{"name", tag_name}, {"model", tag_name}, {"modified_at", rfc3339_now()},
            {"size", ec ? 0 : size}, {"digest", ""}, {"details", model_details(m)}};
}

// Runs the reply; keep_alive 0 unloads the model once it has been sent, unless
// other requests hold it; a positive one starts its expiry then.
void run_ollama(ServerState& state, const httplib::Request& req, std::shared_ptr<LoadedModel>& held, const ChatPrompt& prompt,
                const GenerationFields& f, bool chat, bool raw, httplib::Response& res, const KeepAlive& keep) {
    LoadedModel& model = *held;
    const std::string name = model.name;
    ModelCache* cache = state.models.get();
    const bool unload_after = keep.unload_now();
    std::function<void()> after;
    if (unload_after) after = [cache, name] { cache->unload_if_idle(name); };
    else if (keep.seconds) after = [cache, name, keep] { apply_keep_alive(*cache, name, keep); };
    auto channel = std::make_shared<Channel>();
    std::vector<Job> jobs;
    if (raw) {
        Job j;
        j.prompt = model.model->tokenizer().encode(prompt.text);
        if (static_cast<int>(j.prompt.size()) >= model.scheduler->n_ctx())
            throw ApiError(400, "the prompt is " + std::to_string(j.prompt.size()) + " tokens, the context holds " +
                                    std::to_string(model.scheduler->n_ctx()), "prompt");
        j.options = f.options;
        j.spec = f.spec;
        j.grammar = prompt.grammar;
        j.channel = channel;
        jobs.push_back(std::move(j));
    } else {
        jobs.push_back(make_chat_job(model, prompt, chat_prompt_tokens(model, prompt), f, 0, channel));
    }
    run_jobs(state, req, held, std::move(jobs), channel, std::make_shared<OllamaBuilder>(model, chat, raw), f.stream, res,
             after);
    if (!f.stream && unload_after) {
        held.reset();
        cache->unload_if_idle(name);
    } else if (!f.stream && keep.seconds) {
        apply_keep_alive(*cache, name, keep);
    }
}

}  // namespace

void handle_ollama_chat(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const KeepAlive keep = check_ollama_common(body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    GenerationFields f = ollama_fields(body, model.model->n_vocab());
    Json chat = {{"messages", body.contains("messages") ? body["messages"] : Json()}};
    if (const Json* msgs = get_array(body, "messages"))
        for (size_t i = 0; i < msgs->size(); ++i)
            if ((*msgs)[i].is_object() && field((*msgs)[i], "images"))
                throw ApiError(400, "'messages[" + std::to_string(i) + "].images': images are not supported",
                               "messages[" + std::to_string(i) + "].images");
    if (body.contains("tools")) chat["tools"] = body["tools"];
    if (auto think = get_bool(body, "think")) chat["chat_template_kwargs"] = {{"enable_thinking", *think}};
    add_ollama_format(body, chat);
    // A request without messages loads the model (it is loaded already).
    if (!field(body, "messages") || (chat["messages"].is_array() && chat["messages"].empty())) {
        const std::string name = model.name;
        held.reset();
        const bool unloaded = keep.unload_now() && state.models->unload_if_idle(name);
        if (!unloaded) apply_keep_alive(*state.models, name, keep);
        res.set_content(json_text({{"model", name}, {"created_at", rfc3339_now()},
                                   {"message", {{"role", "assistant"}, {"content", ""}}},
                                   {"done_reason", unloaded ? "unload" : "load"}, {"done", true}}),
                        "application/json");
        return;
    }
    run_ollama(state, req, held, render_chat_prompt(model, chat), f, true, false, res, keep);
}

void handle_ollama_generate(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const KeepAlive keep = check_ollama_common(body);
    std::shared_ptr<LoadedModel> held = state.generating_model_for(body);
    LoadedModel& model = *held;
    if (field(body, "suffix")) throw bad_field("suffix", "fill-in-the-middle is not supported yet");
    if (field(body, "images")) throw bad_field("images", "images are not supported");
    if (field(body, "template")) throw bad_field("template", "a per-request template is not supported; start the server with --chat-template-file");
    GenerationFields f = ollama_fields(body, model.model->n_vocab());
    const std::string prompt = get_string(body, "prompt").value_or("");
    if (prompt.empty()) {  // Ollama's preload (or, with keep_alive 0, unload) request
        const std::string name = model.name;
        held.reset();
        const bool unloaded = keep.unload_now() && state.models->unload_if_idle(name);
        if (!unloaded) apply_keep_alive(*state.models, name, keep);
        res.set_content(json_text({{"model", name}, {"created_at", rfc3339_now()}, {"response", ""},
                                   {"done_reason", unloaded ? "unload" : "load"}, {"done", true}}),
                        "application/json");
        return;
    }
    const bool raw = get_bool(body, "raw").value_or(false);
    if (raw) {
        ChatPrompt p;
        p.text = prompt;
        if (field(body, "format")) {
            Json chat;
            add_ollama_format(body, chat);
            p.grammar = response_grammar(chat["response_format"], "format");
        }
        run_ollama(state, req, held, p, f, false, true, res, keep);
        return;
    }
    Json messages = Json::array();
    if (auto system = get_string(body, "system")) messages.push_back({{"role", "system"}, {"content", *system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    Json chat = {{"messages", messages}};
    if (auto think = get_bool(body, "think")) chat["chat_template_kwargs"] = {{"enable_thinking", *think}};
    add_ollama_format(body, chat);
    run_ollama(state, req, held, render_chat_prompt(model, chat), f, false, false, res, keep);
}

void handle_ollama_tags(ServerState& state, const httplib::Request&, httplib::Response& res) {
    Json models = Json::array();
    for (const auto& a : state.models->available()) models.push_back(model_entry(a.name, a.path, a.loaded ? state.models->resident(a.name).get() : nullptr));
    res.set_content(json_text({{"models", models}}), "application/json");
}

void handle_ollama_ps(ServerState& state, const httplib::Request&, httplib::Response& res) {
    Json models = Json::array();
    for (const auto& a : state.models->available()) {
        const std::shared_ptr<LoadedModel> m = a.loaded ? state.models->resident(a.name) : nullptr;
        if (!m) continue;
        Json e = model_entry(m->name, m->model->path(), m.get());
        // Without a keep_alive deadline a model stays until evicted or unloaded.
        e["expires_at"] = a.expires ? rfc3339_at(*a.expires) : "2999-12-31T00:00:00Z";
        e["size_vram"] = 0;
        models.push_back(e);
    }
    res.set_content(json_text({{"models", models}}), "application/json");
}

void handle_ollama_show(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    const LoadedModel& m = *held;
    Json caps = Json::array({"completion"});
    if (m.format.has_tools()) caps.push_back("tools");
    if (m.format.has_reasoning()) caps.push_back("thinking");
    res.set_content(json_text({{"modelfile", ""},
                               {"parameters", ""},
                               {"template", m.template_source.value_or("")},
                               {"details", model_details(&m)},
                               {"model_info", {{"general.architecture", m.model->architecture()},
                                               {"general.context_length", m.model->n_ctx_train()},
                                               {"general.embedding_length", m.model->n_embd()},
                                               {"general.block_count", m.model->n_layer()}}},
                               {"capabilities", caps},
                               {"modified_at", rfc3339_now()}}),
                    "application/json");
}

void handle_ollama_version(ServerState&, const httplib::Request&, httplib::Response& res) {
    res.set_content(json_text({{"version", k_ollama_version}}), "application/json");
}

}  // namespace kiln::server
