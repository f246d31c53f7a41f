// libFuzzer target for the server's request parsing: any body must become typed
// fields and a rendered prompt, or an ApiError (a 400 naming the field) — never
// another exception, a crash or a hang. Covers the OpenAI chat and completion
// fields and the Anthropic and Responses → chat conversions, rendered through a ChatML template.
#include <cstdint>
#include <string>

#include "server/anthropic_request.h"
#include "server/generation_fields.h"
#include "server/responses_request.h"
#include "server/routes.h"

namespace {

constexpr const char* k_chatml =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function.name }}{{ c.function.arguments | tojson }}"
    "</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if tools %}{{ tools | tojson }}{% endif %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

const kiln::server::LoadedModel& model() {
    static kiln::server::LoadedModel* m = [] {
        auto* lm = new kiln::server::LoadedModel;
        lm->template_source = k_chatml;
        lm->chat_template.emplace(k_chatml);
        lm->bos_text = "<s>";
        lm->eos_text = "</s>";
        return lm;
    }();
    return *m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace kiln::server;
    const std::string body(reinterpret_cast<const char*>(data), size);
    Json j;
    try {
        j = parse_body(body);
    } catch (const ApiError&) {
        return 0;
    }
    for (Api api : {Api::Chat, Api::Completions}) {
        try {
            parse_generation_fields(j, api, 1000);
        } catch (const ApiError&) {
        }
    }
    try {
        render_chat_prompt(model(), j);
    } catch (const ApiError&) {
    }
    try {
        render_chat_prompt(model(), anthropic_to_chat_body(j));
    } catch (const ApiError&) {
    }
    try {
        render_chat_prompt(model(), responses_to_chat_body(j));
    } catch (const ApiError&) {
    }
    return 0;
}
