// The public API: Template (parse once, render many) and render().
#include "chat/jinja/ast.h"
#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/render.h"
#include "kiln/jinja.h"

namespace kiln::jinja {

Template::Template(std::string_view source) {
    try {
        program_ = parse_program(source);
    } catch (const TemplateError&) {
        throw;
    } catch (const std::bad_alloc&) {
        throw TemplateError("out of memory while parsing the template", 0, 0);
    } catch (const std::exception& e) {
        throw TemplateError(std::string("internal error: ") + e.what(), 0, 0);  // not expected
    }
}

Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

const std::string& Template::source() const { return program_->source; }

struct TemplateAccess {
    static const Program& program(const Template& t) { return *t.program_; }
};

std::string render_value(const Template& t, const Value& context, const RenderOptions& options) {
    Interp interp(TemplateAccess::program(t), options);
    return interp.render(context, true);
}

std::string render_owned(const Template& t, const Value& context, const RenderOptions& options) {
    Interp interp(TemplateAccess::program(t), options);
    return interp.render(context, false);
}

std::string Template::render_json(std::string_view context_json, const RenderOptions& options) const {
    RenderRegistry registry;  // owns the parsed context's containers
    Value context;
    try {
        context = json_parse(context_json);
    } catch (const TemplateError& e) {
        throw TemplateError("context JSON: " + e.message(), 0, 0);
    }
    if (!context.is_dict()) throw TemplateError("context JSON must be an object", 0, 0);
    return render_owned(*this, context, options);
}

std::string render(std::string_view source, std::string_view context_json, const RenderOptions& options) {
    return Template(source).render_json(context_json, options);
}

}  // namespace kiln::jinja
