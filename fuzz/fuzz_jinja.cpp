// libFuzzer target for the Jinja interpreter: any template text must parse and
// render, or fail with a TemplateError — never crash, hang past the limits or
// leak. The input is a template; after a NUL byte, an optional JSON context
// replaces the default chat context.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/jinja.h"

namespace {

constexpr std::string_view k_default_context = R"({
  "messages": [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": [{"type": "text", "text": "Hi {{ there }}"}]},
    {"role": "assistant", "content": "", "reasoning_content": "think",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1, "y": [1.5, null, true]}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": true}"},
    {"role": "user", "content": "é ✓ \"q\" 'a' \\ \n"}
  ],
  "tools": [{"type": "function", "function": {"name": "f", "description": "d",
             "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}],
  "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>"
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    std::string_view source = input, context = k_default_context;
    if (size_t nul = input.find('\0'); nul != std::string_view::npos) {
        source = input.substr(0, nul);
        context = input.substr(nul + 1);
    }
    kiln::jinja::RenderOptions options;
    options.limits.max_loop_iterations = 200'000;
    options.limits.max_output_bytes = 1 << 20;
    options.limits.max_milliseconds = 2'000;
    options.limits.max_depth = 64;
    options.limits.max_stack_bytes = 512 * 1024;  // sanitizer frames are large
    std::tm now{};
    now.tm_year = 125;
    now.tm_mday = 1;
    options.now = now;
    try {
        kiln::jinja::Template tmpl(source);
        (void)tmpl.render_json(context, options);
    } catch (const kiln::jinja::TemplateError& e) {
        // The library turns unexpected C++ exceptions into "internal error" TemplateErrors;
        // here they are bugs (unless the template raised that text itself).
        if (!e.raised() && e.message().rfind("internal error", 0) == 0) {
            std::fprintf(stderr, "%s\n", e.what());
            std::abort();
        }
    }
    return 0;
}
