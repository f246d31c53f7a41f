// Fuzz target: the constraint front ends (GBNF, regex, JSON Schema) and the
// matcher. The first byte picks the front end, the rest is its text; a grammar
// that compiles is then run over slices of the same bytes. The only allowed
// failure is kiln::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/constraint.h"
#include "kiln/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        kiln::Grammar g = [&] {
            switch (data[0] % 3) {
                case 0: return kiln::Grammar::from_gbnf(text);
                case 1: return kiln::Grammar::from_regex(text);
                default: return kiln::Grammar::from_json_schema(text, kiln::JsonSchemaOptions{(data[0] & 4) != 0, 4});
            }
        }();
        (void)g.to_gbnf();
        (void)kiln::validate(g, text);
        kiln::GrammarMatcher m(g);
        for (size_t i = 0; i + 3 < text.size() && i < 64; i += 3) {
            if (m.accept_bytes(std::string_view(text).substr(i, 3)) && (i & 4)) m.rollback(1);
        }
        (void)m.is_complete();
    } catch (const kiln::Error&) {
    }
    return 0;
}
