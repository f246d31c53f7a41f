// Anthropic's Messages request -> the OpenAI-shaped chat body the chat routes
// read: system (string or text blocks) becomes a system message; user text and
// tool_result blocks become user and tool messages; assistant text, thinking and
// tool_use blocks become content, reasoning_content and tool_calls; tools'
// input_schema becomes parameters; tool_choice and thinking are mapped.
#pragma once

#include "request_fields.h"

namespace kiln::server {

Json anthropic_to_chat_body(const Json& body);

}  // namespace kiln::server
