// response_format (OpenAI chat), text.format (Responses) and format (Ollama) as
// a grammar for the reply: compiled before the request is queued, so a schema
// kiln cannot enforce is a 400 that names the construct, never a reply that
// ignores it.
#include "api_error.h"
#include "request_fields.h"
#include "routes.h"

namespace kiln::server {

std::shared_ptr<const Grammar> response_grammar(const Json& format, const std::string& where) {
    if (!format.is_object()) throw bad_field(where, "expected an object");
    const auto type = get_string(format, "type");
    if (!type) throw bad_field(where + ".type", "missing");
    if (*type == "text") return nullptr;
    try {
        if (*type == "json_object") return std::make_shared<const Grammar>(Grammar::any_json_object());
        if (*type == "json_schema") {
            // OpenAI chat nests it ({json_schema: {name, schema, strict}}); Responses does not.
            const Json* spec = format.contains("json_schema") ? get_object(format, "json_schema") : &format;
            const std::string at = format.contains("json_schema") ? where + ".json_schema" : where;
            if (!spec) throw bad_field(at, "missing");
            get_bool(*spec, "strict");
            const Json* schema = field(*spec, "schema");
            if (!schema) throw bad_field(at + ".schema", "missing");
            if (!schema->is_object() && !schema->is_boolean()) throw bad_field(at + ".schema", "expected a JSON Schema object");
            return std::make_shared<const Grammar>(Grammar::from_json_schema(schema->dump()));
        }
    } catch (const ApiError&) {
        throw;
    } catch (const Error& e) {
        throw ApiError(400, "'" + where + "': " + e.what(), where, "unsupported_schema");
    }
    throw bad_field(where + ".type", "expected 'text', 'json_object' or 'json_schema'");
}

}  // namespace kiln::server
