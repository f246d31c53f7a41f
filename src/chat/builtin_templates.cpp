#include "chat/builtin_templates.h"

namespace kiln::chat {

namespace {

// Text of a message's content: a string, or the text parts of a list.
constexpr const char* k_content_macro = R"({%- macro text(content) -%}
{%- if content is string -%}{{ content }}{%- else -%}{%- for part in content -%}{%- if part['type'] == 'text' -%}{{ part['text'] }}{%- endif -%}{%- endfor -%}{%- endif -%}
{%- endmacro -%})";

// <start_of_turn>user / model turns; system text opens the first user turn.
constexpr const char* k_gemma_turns = R"(
{{- bos_token -}}
{%- set ns = namespace(system='') -%}
{%- for m in messages -%}
{%- if m['role'] == 'system' -%}
{%- set ns.system = ns.system + text(m['content']) + '\n\n' -%}
{%- else -%}
{%- set role = 'model' if m['role'] == 'assistant' else 'user' -%}
<start_of_turn>{{ role }}
{% if role == 'user' and ns.system %}{{ ns.system }}{% set ns.system = '' %}{% endif %}{{ text(m['content']) | trim }}<end_of_turn>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<start_of_turn>model
{% endif -%})";

constexpr const char* k_chatml = R"(
{%- for m in messages -%}
<|im_start|>{{ m['role'] }}
{{ text(m['content']) }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%})";

}  // namespace

std::optional<BuiltinTemplate> builtin_template_for(const Tokenizer& tok) {
    auto has = [&](const char* t) { return tok.find_token(t) != k_no_token; };
    if (has("<start_of_turn>") && has("<end_of_turn>"))
        return BuiltinTemplate{"gemma-turns", std::string(k_content_macro) + k_gemma_turns};
    if (has("<|im_start|>") && has("<|im_end|>")) return BuiltinTemplate{"chatml", std::string(k_content_macro) + k_chatml};
    return std::nullopt;
}

}  // namespace kiln::chat
