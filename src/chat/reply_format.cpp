// Format detection: which reasoning markers, tool-call syntax and end-of-turn
// markers a template uses, read from its literal text (raw text and string
// literals). Syntaxes are tried most specific first, so a template that mentions
// <tool_call> and <function=…> is Qwen XML before it is Hermes.
#include <algorithm>
#include <exception>

#include "chat/reply_template_scan.h"
#include "chat/reply_values.h"
#include "kiln/reply_format.h"

namespace kiln {

using reply_detail::TemplateScan;

std::string_view reasoning_syntax_name(ReasoningSyntax syntax) {
    switch (syntax) {
        case ReasoningSyntax::None: return "none";
        case ReasoningSyntax::Tags: return "tags";
        case ReasoningSyntax::Channels: return "channels";
    }
    return "none";
}

std::string_view tool_syntax_name(ToolSyntax syntax) {
    switch (syntax) {
        case ToolSyntax::None: return "none";
        case ToolSyntax::GptOss: return "gpt-oss";
        case ToolSyntax::Atem: return "atem";
        case ToolSyntax::KimiXtml: return "kimi-xtml";
        case ToolSyntax::Gemma4: return "gemma4";
        case ToolSyntax::InvokeXml: return "invoke-xml";
        case ToolSyntax::QwenXml: return "qwen-xml";
        case ToolSyntax::FunctionaryV31: return "functionary-v3.1";
        case ToolSyntax::GlmXml: return "glm-xml";
        case ToolSyntax::Kimi: return "kimi";
        case ToolSyntax::DeepSeek: return "deepseek";
        case ToolSyntax::Pythonic: return "pythonic";
        case ToolSyntax::MistralArgs: return "mistral-args";
        case ToolSyntax::MistralJson: return "mistral-json";
        case ToolSyntax::TaggedJson: return "tagged-json";
        case ToolSyntax::Granite: return "granite";
        case ToolSyntax::FunctionaryV32: return "functionary-v3.2";
        case ToolSyntax::Firefunction: return "firefunction";
        case ToolSyntax::GigaChat: return "gigachat";
        case ToolSyntax::CommandR: return "command-r";
        case ToolSyntax::Hermes: return "hermes";
        case ToolSyntax::Llama3: return "llama3";
    }
    return "none";
}

std::string_view reply_framing_name(ReplyFraming framing) {
    switch (framing) {
        case ReplyFraming::Markers: return "markers";
        case ReplyFraming::Harmony: return "harmony";
        case ReplyFraming::Atem: return "atem";
        case ReplyFraming::Recipients: return "recipients";
    }
    return "markers";
}

namespace {

// End-of-turn markers: a reply ends where the model writes one of these.
const char* const k_end_markers[] = {
    "<|im_end|>",       "<end_of_turn>",     "<turn|>",          "<|eot_id|>",      "<|eom_id|>",
    "<|end|>",          "<｜end▁of▁sentence｜>", "<|end_of_text|>", "<|endoftext|>",  "<|END_OF_TURN_TOKEN|>",
    "<end_of_sentence>", "[e~[",              "<seed:eos>",       "<|end_of_msg|>",  "<SPECIAL_12>",
    "</assistant>",     "<|observation|>",   "<|user|>",         "〈|EOS|〉",
};

struct Detector {
    const TemplateScan& scan;
    const std::function<bool(std::string_view)>& vocab;

    bool has(std::string_view s) const { return scan.has(s); }
    bool token(std::string_view s) const {
        if (!vocab || s.empty()) return false;
        try {
            return vocab(s);
        } catch (...) {
            return false;
        }
    }

    void framing(ChatFormat& f) const {
        if (has("<|channel|>") && has("<|message|>"))
            f.framing = ReplyFraming::Harmony;
        else if (has("<|start|>") && has("<|message|>") && has("<atem:"))
            f.framing = ReplyFraming::Atem;
        else if (has(">>>all"))
            f.framing = ReplyFraming::Recipients;
    }

    bool xtml() const { return has("<|open|>") && has("<|close|>") && has("<|sep|>"); }

    void reasoning(ChatFormat& f) const {
        ReasoningFormat& r = f.reasoning;
        auto tags = [&](std::string open, std::string close) {
            r.syntax = ReasoningSyntax::Tags;
            r.open = std::move(open);
            r.close = std::move(close);
        };
        if (f.framing == ReplyFraming::Harmony) {
            r.syntax = ReasoningSyntax::Channels;
            r.open = "<|channel|>analysis<|message|>";
            r.close = "<|end|>";
            return;
        }
        if (f.framing == ReplyFraming::Atem) {
            r.syntax = ReasoningSyntax::Channels;
            r.open = "to=self<|message|>";
            r.close = "<|eom|>";
            return;
        }
        if (has("<seed:think>"))
            tags("<seed:think>", "</seed:think>");
        else if (has("[THINK]") && has("[/THINK]"))
            tags("[THINK]", "[/THINK]");
        else if (has("<|START_THINKING|>"))
            tags("<|START_THINKING|>", "<|END_THINKING|>");
        else if (has("<|channel>"))
            tags("<|channel>thought", "<channel|>");  // Gemma 4
        else if (xtml() && scan.source_has("'think'"))
            tags("<|open|>think<|sep|>", "<|close|>think<|sep|>");  // Kimi K3, built by a macro
        else if (has("<think>") || has("</think>"))
            tags("<think>", "</think>");
        else if (has("[BEGIN FINAL RESPONSE]"))
            tags("", "[BEGIN FINAL RESPONSE]");  // Apriel: reasoning first, then the marker
        else if (token("<think>") && token("</think>"))
            tags("<think>", "</think>");  // the vocabulary knows the markers; the template does not say
        if (r.syntax != ReasoningSyntax::Tags) return;
        r.single_tokens = (r.open.empty() || token(r.open)) && token(r.close);
        r.can_disable = scan.reads_variable("enable_thinking") || scan.reads_variable("thinking");
        if (r.open.empty()) {
            r.prompt_can_open = true;
        } else if (xtml()) {
            // open_tag('think' if thinking else 'response'): the prompt opens the
            // think tag whenever thinking is on.
            r.prompt_can_open = true;
        } else {
            for (const std::string& ending : scan.generation_prompt_endings()) {
                std::string_view e = reply_detail::trim(ending);
                if (e.size() >= r.open.size() && e.substr(e.size() - r.open.size()) == r.open) r.prompt_can_open = true;
            }
        }
    }

    void tools(ChatFormat& f) const {
        ToolFormat& t = f.tools;
        auto set = [&](ToolSyntax s, std::string open, std::string close) {
            t.syntax = s;
            t.open = std::move(open);
            t.close = std::move(close);
        };
        switch (f.framing) {
            case ReplyFraming::Harmony:
                if (has("functions.") && has("<|call|>")) set(ToolSyntax::GptOss, "to=functions.", "<|call|>");
                return;
            case ReplyFraming::Atem:
                if (has("<atem:function_calls>"))
                    set(ToolSyntax::Atem, "<atem:function_calls>", "</atem:function_calls>");
                return;
            case ReplyFraming::Recipients:
                set(ToolSyntax::FunctionaryV32, ">>>", "");
                return;
            case ReplyFraming::Markers: break;
        }
        if (xtml() && scan.source_has("'tools'"))
            set(ToolSyntax::KimiXtml, "<|open|>tools<|sep|>", "<|close|>tools<|sep|>");
        else if (has("<|tool_call>"))
            set(ToolSyntax::Gemma4, "<|tool_call>", "<tool_call|>");
        else if (has("｜DSML｜") && has("function_calls>"))
            set(ToolSyntax::InvokeXml, "<｜DSML｜function_calls>", "</｜DSML｜function_calls>");
        else if (has("｜DSML｜"))
            set(ToolSyntax::InvokeXml, "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>");
        else if (has("<minimax:tool_call>"))
            set(ToolSyntax::InvokeXml, "<minimax:tool_call>", "</minimax:tool_call>");
        else if (has("<seed:tool_call>"))
            set(ToolSyntax::QwenXml, "<seed:tool_call>", "</seed:tool_call>");
        else if (has("<tool_call>") && has("<function=") && has("<parameter="))
            set(ToolSyntax::QwenXml, "<tool_call>", "</tool_call>");
        else if (has("<function="))
            set(ToolSyntax::FunctionaryV31, "<function=", "</function>");
        else if (has("<arg_key>"))
            set(ToolSyntax::GlmXml, "<tool_call>", "</tool_call>");
        else if (has("<|tool_calls_section_begin|>"))
            set(ToolSyntax::Kimi, "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>");
        else if (has("<｜tool▁calls▁begin｜>") || has("<｜tool▁call▁begin｜>"))
            set(ToolSyntax::DeepSeek, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>");
        else if (has("<|tool_call_start|>") || has("<|tool_list_start|>"))
            set(ToolSyntax::Pythonic, "<|tool_call_start|>", "<|tool_call_end|>");
        else if (has("[TOOL_CALLS]") && has("[ARGS]"))
            set(ToolSyntax::MistralArgs, "[TOOL_CALLS]", "");
        else if (has("[TOOL_CALLS]"))
            set(ToolSyntax::MistralJson, "[TOOL_CALLS]", "");
        else if (has("<|START_ACTION|>"))
            set(ToolSyntax::TaggedJson, "<|START_ACTION|>", "<|END_ACTION|>");
        else if (has("<|tool_call|>") && has("<|/tool_call|>"))
            set(ToolSyntax::TaggedJson, "<|tool_call|>", "<|/tool_call|>");
        else if (has("<|tool_call|>"))
            set(ToolSyntax::Granite, "<|tool_call|>", "");
        else if (has("<TOOLCALL>"))
            set(ToolSyntax::TaggedJson, "<TOOLCALL>", "</TOOLCALL>");
        else if (has("<tool_calls>"))
            set(ToolSyntax::TaggedJson, "<tool_calls>", "</tool_calls>");
        else if (has("functools["))
            set(ToolSyntax::Firefunction, "functools", "");
        else if (has("function call") && has("<|role_sep|>"))
            set(ToolSyntax::GigaChat, "function call<|role_sep|>", "");
        else if (has("Action:") && has("tool_name"))
            set(ToolSyntax::CommandR, "Action:", "");
        else if (has("<tool_call>"))
            set(ToolSyntax::Hermes, "<tool_call>", "</tool_call>");
        else if ((has("<|python_tag|>") || has("ipython")) && has("\"parameters\""))
            set(ToolSyntax::Llama3, "<|python_tag|>", "");
        if (t.syntax == ToolSyntax::MistralArgs || t.syntax == ToolSyntax::MistralJson)
            f.id_style = ToolCallIdStyle::Alnum9;
        t.single_tokens = token(t.open);
    }

    void markers(ChatFormat& f) const {
        switch (f.framing) {
            case ReplyFraming::Harmony:
                // <|end|> closes one message of a reply; the framing handles it.
                f.end_markers = {"<|return|>", "<|call|>"};
                return;
            case ReplyFraming::Atem:
                f.end_markers = {"<|eot|>"};
                return;
            default: break;
        }
        for (const char* m : k_end_markers)
            if (has(m)) f.end_markers.emplace_back(m);
        if (xtml()) f.end_markers.emplace_back("<|close|>message<|sep|>");
        auto wrap = [&](const char* m) { f.wrapper_markers.emplace_back(m); };
        if (has("<response></response>")) {  // Granite 3.3: <think>…</think><response>…</response>
            wrap("<response>");
            wrap("</response>");
        }
        if (has("<|START_RESPONSE|>")) {
            wrap("<|START_RESPONSE|>");
            wrap("<|END_RESPONSE|>");
        }
        if (xtml()) {
            wrap("<|open|>response<|sep|>");
            wrap("<|close|>response<|sep|>");
        }
        if (has("[END FINAL RESPONSE]")) wrap("[END FINAL RESPONSE]");
        if (f.tools.syntax == ToolSyntax::GigaChat) wrap("<|message_sep|>");
    }
};

}  // namespace

ChatFormat detect_chat_format(std::string_view template_source,
                              const std::function<bool(std::string_view)>& vocab_has_token) {
    ChatFormat f;
    try {
        TemplateScan scan(template_source);
        Detector d{scan, vocab_has_token};
        d.framing(f);
        d.reasoning(f);
        d.tools(f);
        d.markers(f);
    } catch (const std::exception&) {
        // Only allocation can fail here: report a template we cannot read as plain text.
        f = ChatFormat();
    }
    return f;
}

ChatFormat detect_chat_format(std::string_view template_source, const std::vector<std::string>& special_tokens) {
    return detect_chat_format(template_source, [&](std::string_view s) {
        return std::find(special_tokens.begin(), special_tokens.end(), s) != special_tokens.end();
    });
}

bool prompt_opens_thinking(const ChatFormat& format, std::string_view rendered_prompt) {
    const ReasoningFormat& r = format.reasoning;
    if (r.syntax != ReasoningSyntax::Tags) return false;
    if (r.open.empty()) return true;
    std::string_view p = reply_detail::trim(rendered_prompt);
    return p.size() >= r.open.size() && p.substr(p.size() - r.open.size()) == r.open;
}

}  // namespace kiln
