// The built-in chat templates are declared in the public kiln/chat_template.h
// (BuiltinTemplate, builtin_template_for): the server uses them too.
#pragma once

#include "kiln/chat_template.h"
