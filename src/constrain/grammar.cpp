// Grammar: the public entry points, each a front end followed by compilation.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "constrain/converters.h"
#include "constrain/internals.h"
#include "constrain/mask_walker.h"
#include "constrain/program.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace kiln {

namespace constrain {

struct GrammarFactory {
    // The last few JSON Schemas compiled, by their text and options: a server
    // compiles a request's schema afresh each time, and a schema seen again gets
    // the same Grammar, whose matchers start from its pooled, warm walkers
    // (mask_walker.h) instead of building the automaton again. Bounded: k_cached
    // grammars, each with at most WalkerPool's idle walkers of bounded size.
    static Grammar cached_schema(std::string_view text, const JsonSchemaOptions& options, bool any_object) {
        static constexpr size_t k_cached = 8;
        static std::mutex mutex;
        static std::vector<std::pair<std::string, Grammar>> recent;  // most recent last
        if (!options.reuse_compiled) return make(any_object ? any_json_object_grammar(options) : json_schema_grammar(text, options));
        std::string key = (any_object ? "o" : "s") + std::to_string(options.any_whitespace) + "/" +
                          std::to_string(options.max_whitespace) + "/" + std::string(text);
        {
            std::lock_guard<std::mutex> lock(mutex);
            for (size_t i = 0; i < recent.size(); ++i) {
                if (recent[i].first != key) continue;
                std::rotate(recent.begin() + static_cast<std::ptrdiff_t>(i), recent.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                            recent.end());
                return recent.back().second;
            }
        }
        Grammar g = make(any_object ? any_json_object_grammar(options) : json_schema_grammar(text, options));
        std::lock_guard<std::mutex> lock(mutex);
        if (recent.size() >= k_cached) recent.erase(recent.begin());
        recent.emplace_back(std::move(key), g);
        return g;
    }

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
    return GrammarFactory::cached_schema(schema_json, options, false);
}

Grammar Grammar::from_regex(std::string_view pattern) { return GrammarFactory::make(constrain::regex_grammar(pattern)); }

Grammar Grammar::any_json_object(const JsonSchemaOptions& options) { return GrammarFactory::cached_schema("", options, true); }

std::string Grammar::to_gbnf() const { return constrain::print_gbnf(impl_->ir); }

size_t Grammar::n_rules() const { return impl_->ir.rules.size(); }

}  // namespace kiln
