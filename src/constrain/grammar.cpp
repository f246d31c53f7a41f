// Grammar: the public entry points, each a front end followed by compilation.
#include <memory>

#include "constrain/converters.h"
#include "constrain/internals.h"
#include "constrain/mask_walker.h"
#include "constrain/program.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace kiln {

namespace constrain {

struct GrammarFactory {
    static Grammar make(GrammarIR ir) {
        CompiledGrammar g = compile_grammar(std::move(ir));
        g.walkers = std::make_shared<WalkerPool>();
        return Grammar(std::make_shared<const CompiledGrammar>(std::move(g)));
    }
};

}  // namespace constrain

using constrain::GrammarFactory;

Grammar Grammar::from_gbnf(std::string_view text, std::string_view root_rule) {
    return GrammarFactory::make(constrain::parse_gbnf(text, root_rule));
}

Grammar Grammar::from_gbnf(std::string_view text, std::span<const GrammarImport> imports, std::string_view root_rule) {
    constrain::GrammarIR predefined;
    for (const GrammarImport& import : imports) {
        if (import.name.empty() || import.name.find_first_not_of(
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != std::string::npos)
            throw Error("grammar import '" + import.name + "': a name is letters, digits, '-' and '_'");
        constrain::import_rules(predefined, constrain::Internals::compiled(import.grammar).ir, import.name);
    }
    return GrammarFactory::make(constrain::parse_gbnf(text, root_rule, std::move(predefined)));
}

Grammar Grammar::from_json_schema(std::string_view schema_json, const JsonSchemaOptions& options) {
    return GrammarFactory::make(constrain::json_schema_grammar(schema_json, options));
}

Grammar Grammar::from_regex(std::string_view pattern) { return GrammarFactory::make(constrain::regex_grammar(pattern)); }

Grammar Grammar::any_json_object(const JsonSchemaOptions& options) {
    return GrammarFactory::make(constrain::any_json_object_grammar(options));
}

std::string Grammar::to_gbnf() const { return constrain::print_gbnf(impl_->ir); }

size_t Grammar::n_rules() const { return impl_->ir.rules.size(); }

}  // namespace kiln
