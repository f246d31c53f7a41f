// OpenAI's Responses request -> the chat body the chat routes read:
// instructions become a system message, input items (text parts, function
// calls and their outputs) become messages, function tools become chat tools.
#pragma once

#include "request_fields.h"

namespace kiln::server {

Json responses_to_chat_body(const Json& body);

}  // namespace kiln::server
