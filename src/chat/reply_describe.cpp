// The capabilities report of `kiln template FILE --capabilities`.
#include <sstream>

#include "kiln/reply_format.h"

namespace kiln {

namespace {

// Markers are shown as written; a newline or tab inside one is spelt out.
std::string shown(std::string_view marker) {
    std::string out;
    for (char c : marker) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else
            out += c;
    }
    return out;
}

std::string joined(const std::vector<std::string>& markers) {
    if (markers.empty()) return "(none)";
    std::string out;
    for (const std::string& m : markers) {
        if (!out.empty()) out += "  ";
        out += shown(m);
    }
    return out;
}

std::string tool_shape(const ToolFormat& t) {
    switch (t.syntax) {
        case ToolSyntax::Llama3: return "bare {\"name\": …, \"parameters\": {…}} or <|python_tag|>";
        case ToolSyntax::GptOss: return "<|channel|>commentary to=functions.NAME … <|message|>{…}<|call|>";
        case ToolSyntax::Atem: return "to=NAME<|message|><atem:function_calls><atem:invoke name=…>…";
        case ToolSyntax::FunctionaryV32: return ">>>NAME\\n{…}";
        default: break;
    }
    std::string s = shown(t.open);
    s += " …";
    if (!t.close.empty()) {
        s += ' ';
        s += shown(t.close);
    }
    return s;
}

}  // namespace

std::string describe_chat_format(const ChatFormat& f) {
    std::ostringstream o;
    o << "framing:          " << reply_framing_name(f.framing) << "\n";
    const ReasoningFormat& r = f.reasoning;
    if (!f.has_reasoning()) {
        o << "reasoning:        no\n";
    } else {
        o << "reasoning:        " << reasoning_syntax_name(r.syntax) << "  "
          << (r.open.empty() ? std::string("(starts inside)") : shown(r.open)) << " … " << shown(r.close);
        if (r.single_tokens) o << "  (single tokens)";
        o << "\n";
        if (r.syntax == ReasoningSyntax::Tags)
            o << "  starts open:    "
              << (r.open.empty() ? "always"
                                 : r.prompt_can_open ? "when the generation prompt ends with the opening marker"
                                                     : "no")
              << "\n";
        o << "  can disable:    " << (f.can_disable_thinking() ? "yes (enable_thinking / thinking)" : "no") << "\n";
    }
    if (!f.has_tools()) {
        o << "tools:            no\n";
    } else {
        o << "tools:            " << tool_syntax_name(f.tools.syntax) << "  " << tool_shape(f.tools);
        if (f.tools.single_tokens) o << "  (single token)";
        o << "\n";
        o << "  call ids:       "
          << (f.id_style == ToolCallIdStyle::Alnum9 ? "9 letters and digits" : "call_ + 24 letters and digits") << "\n";
    }
    o << "end markers:      " << joined(f.end_markers) << "\n";
    if (!f.wrapper_markers.empty()) o << "dropped wrappers: " << joined(f.wrapper_markers) << "\n";
    o << "capabilities:     reasoning=" << (f.has_reasoning() ? "yes" : "no")
      << " can_disable_thinking=" << (f.can_disable_thinking() ? "yes" : "no")
      << " tools=" << (f.has_tools() ? "yes" : "no") << "\n";
    return o.str();
}

}  // namespace kiln
