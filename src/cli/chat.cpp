// kiln chat [-m FILE]: an interactive conversation through the model's chat
// template, keeping the history with prefix reuse. /reset, /system TEXT,
// /tools, /exit; Ctrl-C stops the reply (or the tool call), not the program.
// Thinking is shown dimmed (or hidden with --hide-thinking). Tools (--tools,
// --skills-dir, --mcp, --mcp-config; chat_tools.h) run in the agent loop of
// kiln/agent.h: each call is printed, approved where it must be, run, and its
// result printed before the model goes on.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "chat_tools.h"
#include "generation_options.h"
#include "kiln/agent.h"
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
    ChatToolFlags tool_flags;
    tool_flags.add_to(app);
    std::string system, template_file, thinking, context_policy = "stop", prefill;
    bool hide_thinking = false;
    app.add_option("--system", system, "system message");
    app.add_option("--template", template_file, "a Jinja chat template to use instead of the file's");
    app.add_option("--prefill", prefill, "text each turn's reply starts with (the model continues it)");
    app.add_option("--thinking", thinking, "on | off: enable_thinking for templates that support it")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_flag("--hide-thinking", hide_thinking, "do not show the model's reasoning");
    app.add_option("--context-policy", context_policy,
                   "when the conversation outgrows the context: stop (the reply ends, finish length) or drop-oldest "
                   "(the oldest turns leave the prompt, the system prompt and latest turns stay)")
        ->check(CLI::IsMember({"stop", "drop-oldest"}));
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    flags.apply_tuned(app);
    const std::string path = resolve_model(flags.model);
    const bool tty_in = ::isatty(STDIN_FILENO), tty_out = ::isatty(STDOUT_FILENO);
    Style style{tty_out};
    if (tty_out) std::fprintf(stderr, "loading %s ...\n", path.c_str());
    auto model = Model::load(path, load_options(flags.experts_memory));
    for (const auto& note : model->load_notes())
        if (note.find("converted") != std::string::npos) std::fprintf(stderr, "note: %s\n", note.c_str());
    ChatOptions co;
    co.context = flags.context();
    co.context_policy = context_policy == "drop-oldest" ? ContextPolicy::DropOldest : ContextPolicy::Stop;
    if (!template_file.empty()) co.template_source = read_text_file(template_file);
    ChatSession chat(model, co);
    flags.attach_draft_model(chat.session().engine());
    if (!system.empty()) chat.set_system(system);
    ChatTurnOptions turn;
    turn.generate.max_tokens = flags.n_predict;
    turn.generate.sampling = flags.sampling();
    turn.generate.stop = flags.stop;
    turn.generate.ignore_eos = flags.ignore_eos;
    turn.generate.cancel = &install_interrupt_handler();
    turn.generate.spec = flags.speculation();
    if (!thinking.empty()) turn.thinking = thinking == "on";
    ChatTools tools(tool_flags);
    AgentOptions agent;
    agent.max_steps = tool_flags.max_steps;
    agent.tool_timeout = tools.timeout();
    if (!tools.set().empty() && !chat.format().has_tools())
        std::fprintf(stderr, "warning: the chat template shows no tool-call syntax; the model may not call the %zu tools\n",
                     tools.set().size());
    if (tty_in || flags.verbose) {
        const Context& ctx = chat.session().context();
        std::fprintf(stderr, "%s (%s), context %d, KV cache %.1f MiB; template: %s\n", model->file().path().c_str(),
                     model->architecture().c_str(), ctx.n_ctx(), ctx.memory_bytes() / 1048576.0, chat.template_origin().c_str());
        if (const Model* draft = chat.session().engine().draft_model())
            std::fprintf(stderr, "draft model %s (%s), its context %.1f MiB\n", draft->path().c_str(),
                         draft->architecture().c_str(), chat.session().engine().draft_memory_bytes() / 1048576.0);
        if (!tools.set().empty()) std::fprintf(stderr, "%zu tools offered (/tools lists them)\n", tools.set().size());
        if (tty_in)
            std::fprintf(stderr, "/reset clears the conversation, /system TEXT sets the system message, /tools lists the "
                                 "tools, /exit quits\n");
    }

    bool line_open = false;  // stdout's last text did not end with a newline
    auto show_event = [&](const ReplyEvent& ev) {
        if (const auto* t = std::get_if<TextDelta>(&ev)) {
            std::fputs(t->text.c_str(), stdout);
            if (!t->text.empty()) line_open = t->text.back() != '\n';
        } else if (const auto* th = std::get_if<ThinkingDelta>(&ev)) {
            if (!hide_thinking) std::fprintf(stdout, "%s%s%s", style.dim(), th->text.c_str(), style.reset());
        } else if (const auto* call = std::get_if<ToolCall>(&ev)) {
            nlohmann::json j = {{"id", call->id}, {"name", call->name}, {"arguments", call->arguments}};
            std::fprintf(stdout, "%s%stool call%s %s\n", line_open ? "\n" : "", style.bold(), style.reset(),
                         j.dump(2).c_str());
            line_open = false;
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
        if (line == "/tools") {
            tools.list(stdout);
            std::fflush(stdout);
            continue;
        }
        chat.add_user(line);
        clear_interrupt();
        agent.turn = turn;
        agent.turn.assistant_prefix = prefill;
        AgentCallbacks cb;
        cb.on_event = show_event;
        cb.approve = [&](const ToolCall& call, const AgentTool& tool) { return tools.approve(call, tool); };
        cb.on_call = [&](const ToolCall& call, const AgentTool& tool) {
            std::fprintf(stderr, "%srunning %s%s (%s)\n", style.dim(), call.name.c_str(), style.reset(), tool.origin.c_str());
        };
        cb.on_result = [&](const ToolCall& call, const ToolResult& result) {
            std::fprintf(stdout, "%s%s%s %s%s\n%s\n", line_open ? "\n" : "", style.bold(), result.is_error ? "error from" : "result of",
                         call.name.c_str(), style.reset(), result.content.c_str());
            std::fflush(stdout);
            line_open = false;
            tools.report_exits(stderr);
        };
        cb.on_malformed = [&](const std::string&) {
            std::fprintf(stderr, "%s[the unreadable call was sent back to the model as an error]%s\n", style.dim(),
                         style.reset());
        };
        AgentResult r = run_agent(chat, tools.set(), agent, cb);
        std::fputc('\n', stdout);
        line_open = false;
        std::fflush(stdout);
        if (r.finish == AgentFinish::StepLimit)
            std::fprintf(stderr, "[stopped after %d replies (--max-steps); the last calls were answered]\n",
                         static_cast<int>(r.replies.size()));
        if (flags.verbose)
            std::fprintf(stderr, "[%s; %zu replies, %zu tool calls; prompt %d tokens (%d reused), %d generated at %.1f t/s]\n",
                         std::string(agent_finish_name(r.finish)).c_str(), r.replies.size(), r.calls.size(),
                         r.usage.prompt_tokens, r.usage.reused_prompt_tokens, r.usage.completion_tokens,
                         r.decode_seconds > 0 ? r.usage.completion_tokens / r.decode_seconds : 0.0);
        if (flags.verbose) std::fprintf(stderr, "[%s]\n", spec_report(r.spec, flags.spec).c_str());
    }
    return 0;
}

}  // namespace kiln::cli
