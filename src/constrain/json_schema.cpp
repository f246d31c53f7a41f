// placeholder
#include "constrain/converters.h"
#include "kiln/error.h"
namespace kiln::constrain {
GrammarIR json_schema_grammar(std::string_view, const JsonSchemaOptions&) { throw Error("todo"); }
GrammarIR any_json_object_grammar(const JsonSchemaOptions&) { throw Error("todo"); }
}
