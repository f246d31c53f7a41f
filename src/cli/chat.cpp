// kiln chat [-m FILE]: an interactive conversation through the model's chat
// template, keeping the history with prefix reuse. /reset, /system TEXT, /exit;
// Ctrl-C stops the reply, not the program. Thinking is shown dimmed (or hidden
// with --hide-thinking); tool calls are printed as JSON, and with --tools the
// user types each tool's result.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "generation_options.h"
#include "kiln/chat.h"
#include "kiln/error.h"

namespace kiln::cli {

namespace {

struct Style {
    bool color = false;
    const char* dim() const { return color ? "\033[2m" : ""; }
    const char* bold() const { return color ? "\033[1m" : ""; }
    const char* reset() const { return color ? "\033[0m" : ""; }
};

}  // namespace

int cmd_chat(int argc, char** argv) {
    CLI::App app{"Chat with a model through its chat template", "chat"};
    GenerationFlags flags;
    flags.add_to(app);
    std::string system, template_file, tools_file, thinking, context_policy = "stop";
    bool hide_thinking = false;
    app.add_option("--system", system, "system message");
    app.add_option("--template", template_file, "a Jinja chat template to use instead of the file's");
    app.add_option("--tools", tools_file, "a JSON file with OpenAI tool definitions; you type each tool's result");
    app.add_option("--thinking", thinking, "on | off: enable_thinking for templates that support it")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_flag("--hide-thinking", hide_thinking, "do not show the model's reasoning");
    app.add_option("--context-policy", context_policy,
                   "when the conversation outgrows the context: stop (the reply ends, finish length) or drop-oldest "
                   "(the oldest turns leave the prompt, the system prompt and latest turns stay)")
        ->check(CLI::IsMember({"stop", "drop-oldest"}));
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    const std::string path = resolve_model(flags.model);
    const bool tty_in = ::isatty(STDIN_FILENO), tty_out = ::isatty(STDOUT_FILENO);
    Style style{tty_out};
    if (tty_out) std::fprintf(stderr, "loading %s ...\n", path.c_str());
    auto model = Model::load(path);
    for (const auto& note : model->load_notes())
        if (note.find("converted") != std::string::npos) std::fprintf(stderr, "note: %s\n", note.c_str());
    ChatOptions co;
    co.context = flags.context();
    co.context_policy = context_policy == "drop-oldest" ? ContextPolicy::DropOldest : ContextPolicy::Stop;
    if (!template_file.empty()) co.template_source = read_text_file(template_file);
    ChatSession chat(model, co);
    if (!system.empty()) chat.set_system(system);
    ChatTurnOptions turn;
    turn.generate.max_tokens = flags.n_predict;
    turn.generate.sampling = flags.sampling();
    turn.generate.stop = flags.stop;
    turn.generate.ignore_eos = flags.ignore_eos;
    turn.generate.cancel = &install_interrupt_handler();
    if (!thinking.empty()) turn.thinking = thinking == "on";
    if (!tools_file.empty()) {
        turn.tools = nlohmann::json::parse(read_text_file(tools_file), nullptr, false);
        if (!turn.tools.is_array()) throw Error(tools_file + ": expected a JSON array of tool definitions");
    }
    if (tty_in || flags.verbose) {
        const Context& ctx = chat.session().context();
        std::fprintf(stderr, "%s (%s), context %d, KV cache %.1f MiB; template: %s\n", model->file().path().c_str(),
                     model->architecture().c_str(), ctx.n_ctx(), ctx.memory_bytes() / 1048576.0, chat.template_origin().c_str());
        if (tty_in) std::fprintf(stderr, "/reset clears the conversation, /system TEXT sets the system message, /exit quits\n");
    }

    auto show_event = [&](const ReplyEvent& ev) {
        if (const auto* t = std::get_if<TextDelta>(&ev)) {
            std::fputs(t->text.c_str(), stdout);
        } else if (const auto* th = std::get_if<ThinkingDelta>(&ev)) {
            if (!hide_thinking) std::fprintf(stdout, "%s%s%s", style.dim(), th->text.c_str(), style.reset());
        } else if (const auto* call = std::get_if<ToolCall>(&ev)) {
            nlohmann::json j = {{"id", call->id}, {"name", call->name}, {"arguments", call->arguments}};
            std::fprintf(stdout, "\n%stool call%s %s\n", style.bold(), style.reset(), j.dump(2).c_str());
        } else if (const auto* err = std::get_if<ReplyError>(&ev)) {
            std::fprintf(stderr, "\n[%s]\n", err->message.c_str());
        }
        std::fflush(stdout);
        return true;
    };

    std::string line;
    for (;;) {
        if (tty_in) std::fprintf(stderr, "%s> %s", style.bold(), style.reset());
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            chat.reset();
            if (!system.empty()) chat.set_system(system);
            continue;
        }
        if (line.rfind("/system ", 0) == 0) {
            system = line.substr(8);
            chat.set_system(system);
            continue;
        }
        chat.add_user(line);
        for (;;) {
            clear_interrupt();
            ChatReply r = chat.reply(turn, show_event);
            std::fputc('\n', stdout);
            std::fflush(stdout);
            if (flags.verbose)
                std::fprintf(stderr, "[%s; prompt %d tokens (%d reused), %d generated at %.1f t/s]\n",
                             std::string(reply_finish_name(r.finish)).c_str(), r.usage.prompt_tokens,
                             r.usage.reused_prompt_tokens, r.usage.completion_tokens,
                             r.decode_seconds > 0 ? r.usage.completion_tokens / r.decode_seconds : 0.0);
            if (r.finish != ReplyFinish::ToolCalls || r.message.tool_calls.empty()) break;
            // Ask for each tool's result, then let the model continue.
            for (const ToolCall& call : r.message.tool_calls) {
                std::fprintf(stderr, "result of %s (%s): ", call.name.c_str(), call.id.c_str());
                std::string result;
                if (!std::getline(std::cin, result)) return 0;
                chat.add_tool_result(call, result);
            }
        }
    }
    return 0;
}

}  // namespace kiln::cli
