// kiln template (FILE.gguf | FILE.jinja) --messages M.json [...]: renders a chat
// prompt and writes it to stdout exactly, with nothing added.
#include <cstdio>
#include <fstream>
#include <optional>
#include <iostream>
#include <iterator>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "kiln/chat_template.h"
#include "kiln/error.h"
#include "kiln/reply_format.h"
#include "kiln/tokenizer.h"
#include "kiln/gguf/file.h"

namespace kiln::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string read_text(const std::string& path) {
    if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

ojson read_json(const std::string& path, const char* what) {
    std::string text = read_text(path);
    try {
        return ojson::parse(text);
    } catch (const ojson::parse_error& e) {
        throw Error(std::string(what) + " " + path + ": invalid JSON: " + e.what());
    }
}

bool is_gguf(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

}  // namespace

int cmd_template(int argc, char** argv) {
    CLI::App app{"Render a chat prompt with a model's chat template (GGUF) or a Jinja file; the prompt goes to stdout as is",
                 "template"};
    std::string path, messages_path, tools_path, thinking, bos, eos, name;
    std::vector<std::string> vars;
    bool no_gen = false;
    app.add_option("file", path, "GGUF model (its tokenizer.chat_template and BOS / EOS) or a Jinja template file")->required();
    app.add_option("--messages", messages_path,
                   "JSON file ('-' for stdin): an array of OpenAI-style messages, or an object with \"messages\" (and \"tools\")");
    bool capabilities = false;
    app.add_flag("--capabilities", capabilities,
                 "print the reasoning markers, tool-call syntax and end markers detected from the template (and the GGUF's vocabulary)");
    app.add_option("--tools", tools_path, "JSON file: an array of tool definitions (without it `tools` is undefined)");
    app.add_option("--thinking", thinking, "set enable_thinking (and thinking) to true or false")->check(CLI::IsMember({"on", "off"}));
    app.add_flag("--no-generation-prompt", no_gen, "add_generation_prompt = false (for assistant prefill)");
    app.add_option("--bos-token", bos, "BOS text (default: the GGUF's BOS token; empty for a .jinja file)");
    app.add_option("--eos-token", eos, "EOS text (default: the GGUF's EOS token; empty for a .jinja file)");
    app.add_option("--var", vars, "extra template variable key=VALUE (VALUE as JSON, else as a string); repeatable");
    app.add_option("--template-name", name, "a named template of the GGUF (tokenizer.chat_template.NAME)");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    chat::ChatRequest req;
    std::string source;
    std::optional<Tokenizer> vocab;
    if (is_gguf(path)) {
        gguf::File file = gguf::File::open(path);
        if (capabilities) {
            TokenizerLoadOptions lo;
            lo.require_end_of_generation = false;
            vocab = Tokenizer::from_gguf(file, lo);
        }
        chat::ModelTemplate mt = chat::model_template(file, name);
        if (!mt.source)
            throw Error(path + " has no chat template (" +
                        (name.empty() ? std::string("tokenizer.chat_template") : "tokenizer.chat_template." + name) +
                        "); pass a .jinja file instead");
        source = std::move(*mt.source);
        req.bos_token = mt.bos_token;
        req.eos_token = mt.eos_token;
    } else {
        if (!name.empty()) throw Error("--template-name applies to GGUF files only");
        source = read_text(path);
    }
    if (capabilities) {
        ChatFormat format = detect_chat_format(source, [&](std::string_view t) {
            return vocab && vocab->find_token(t) != k_no_token;
        });
        std::string report = describe_chat_format(format);
        std::fwrite(report.data(), 1, report.size(), stdout);
        if (!report.empty() && report.back() != '\n') std::fputc('\n', stdout);
        return 0;
    }
    if (messages_path.empty()) throw Error("--messages is required (or --capabilities)");
    if (app.count("--bos-token")) req.bos_token = bos;
    if (app.count("--eos-token")) req.eos_token = eos;

    ojson messages = read_json(messages_path, "--messages");
    if (messages.is_object()) {
        if (!messages.contains("messages")) throw Error("--messages " + messages_path + ": an object needs a \"messages\" array");
        if (messages.contains("tools") && !messages["tools"].is_null()) req.tools = messages["tools"];
        req.messages = messages["messages"];
    } else {
        req.messages = std::move(messages);
    }
    if (!tools_path.empty()) req.tools = read_json(tools_path, "--tools");
    if (!thinking.empty()) req.enable_thinking = thinking == "on";
    req.add_generation_prompt = !no_gen;
    for (const std::string& v : vars) {
        size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) throw Error("--var " + v + ": expected key=VALUE");
        std::string key = v.substr(0, eq), value = v.substr(eq + 1);
        ojson parsed = ojson::parse(value, nullptr, false);
        req.extra[key] = parsed.is_discarded() ? ojson(value) : parsed;
    }

    std::string prompt;
    try {
        jinja::Template tmpl(source);
        prompt = chat::apply_chat_template(tmpl, req);
    } catch (const jinja::TemplateError& e) {
        throw Error(path + ": " + e.what());
    }
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace kiln::cli
