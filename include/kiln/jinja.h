// kiln — a sandboxed Jinja interpreter for chat templates.
//
// Renders the Jinja subset real model chat templates use, with the semantics of
// Python jinja2 in Hugging Face's environment (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps): Python's
// truthiness, comparisons, str() / repr() and undefined handling. docs/jinja.md
// lists what is supported and where kiln deviates on purpose.
//
// Templates are untrusted: parsing and rendering never crash or hang the
// process. Every failure, including the limits below, is a TemplateError (a
// kiln::Error) whose message starts with "line L, column C: ".
//
// A parsed Template is immutable; render() may be called from several threads
// at once. (The interpreter's own values render through chat/jinja/render.h,
// inside kiln.)
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/error.h"

namespace kiln::jinja {

struct Program;
struct TemplateAccess;

// Where a template failed: line and column are 1-based (0 when unknown).
class TemplateError : public kiln::Error {
public:
    TemplateError(const std::string& message, uint32_t line, uint32_t column, bool raised = false);
    uint32_t line() const { return line_; }
    uint32_t column() const { return column_; }
    // The message without the position prefix (for raise_exception: the template's own text).
    const std::string& message() const { return message_; }
    // True when the template itself called raise_exception(msg).
    bool raised() const { return raised_; }

private:
    std::string message_;
    uint32_t line_, column_;
    bool raised_;
};

// Sandbox limits; exceeding one is a TemplateError naming it.
struct Limits {
    uint32_t max_depth = 500;                     // nested macro calls, recursive loops and evaluation depth
    uint64_t max_loop_iterations = 10'000'000;    // loop iterations over the whole render
    uint64_t max_output_bytes = 64ull << 20;      // rendered text, and any single string or list built
    uint32_t max_milliseconds = 10'000;           // wall-clock time of one render (0: no limit)
    uint32_t max_stack_bytes = 1u << 20;          // native stack a render may use (deep nesting fails before it)
};

struct RenderOptions {
    Limits limits;
    // The time strftime_now() formats; unset: the local time at the call.
    std::optional<std::tm> now;
};

class Template {
public:
    // Parses `source`; throws TemplateError with the line and column of a syntax error.
    explicit Template(std::string_view source);
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;
    ~Template();

    // Renders with a context given as JSON text (an object), parsed keeping key order.
    std::string render_json(std::string_view context_json, const RenderOptions& options = {}) const;

    const std::string& source() const;

private:
    friend struct TemplateAccess;  // chat/jinja/render.h
    std::unique_ptr<Program> program_;
};

// Parses and renders in one call (a JSON object as context).
std::string render(std::string_view source, std::string_view context_json, const RenderOptions& options = {});

}  // namespace kiln::jinja
