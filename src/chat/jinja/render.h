// Rendering with the interpreter's own values (kiln's chat layer builds its
// contexts as Values, without a trip through JSON text). Not public: Value is
// the interpreter's internal model.
#pragma once

#include <string>

#include "chat/jinja/value.h"
#include "kiln/jinja.h"

namespace kiln::jinja {

// Renders with `context` (a dict Value): its keys are the template's variables.
// The context is copied on entry, so templates cannot modify the caller's values.
std::string render_value(const Template& t, const Value& context, const RenderOptions& options = {});

// Renders with a context built for this render alone (fresh containers, made
// under a RenderRegistry): used as is, without the defensive copy.
std::string render_owned(const Template& t, const Value& context, const RenderOptions& options = {});

}  // namespace kiln::jinja
