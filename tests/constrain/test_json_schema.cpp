// JSON Schema compilation: accept / reject of instances per keyword, and one
// refusal test per construct that cannot be enforced exactly.
#include <gtest/gtest.h>

#include "constrain/constrain_test_util.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace {

using kiln::Grammar;
using kiln::MatchStatus;
using kiln::test::error_of;

Grammar schema(const std::string& s) {
    kiln::JsonSchemaOptions o;
    o.any_whitespace = true;
    return Grammar::from_json_schema(s, o);
}

bool accepts(const Grammar& g, std::string_view text) { return kiln::validate(g, text).status == MatchStatus::Complete; }

TEST(JsonSchema, Scalars) {
    Grammar g = schema(R"({"type":"integer"})");
    EXPECT_TRUE(accepts(g, "0"));
    EXPECT_TRUE(accepts(g, "-17"));
    EXPECT_FALSE(accepts(g, "01"));
    EXPECT_FALSE(accepts(g, "1.5"));
    EXPECT_FALSE(accepts(g, "\"1\""));
    Grammar n = schema(R"({"type":"number"})");
    for (const char* ok : {"0", "-0.5", "1e10", "2.5E-3", "12"}) EXPECT_TRUE(accepts(n, ok)) << ok;
    for (const char* bad : {".5", "1.", "+1", "1e", "NaN"}) EXPECT_FALSE(accepts(n, bad)) << bad;
    Grammar s = schema(R"({"type":"string"})");
    for (const char* ok : {R"("")", R"("a\"b\\c\/\n\u00e9")", "\"h\xC3\xA9llo\""}) EXPECT_TRUE(accepts(s, ok)) << ok;
    for (const char* bad : {R"("a)", "\"a\nb\"", R"("\x")", R"("\ud800")"}) EXPECT_FALSE(accepts(s, bad)) << bad;
    Grammar multi = schema(R"({"type":["null","boolean"]})");
    EXPECT_TRUE(accepts(multi, "null"));
    EXPECT_TRUE(accepts(multi, "false"));
    EXPECT_FALSE(accepts(multi, "0"));
    Grammar any = schema("{}");
    EXPECT_TRUE(accepts(any, R"({"a":[1,{"b":null}],"c":"d"})"));
    // A schema no value satisfies is refused: generation would have no token to choose.
    EXPECT_NE(error_of([] { schema("false"); }).find("matches no text at all"), std::string::npos);
    EXPECT_NE(error_of([] { schema(R"({"type":"object","required":["k"],"additionalProperties":false})"); }).find("no value satisfies it"), std::string::npos);
}

TEST(JsonSchema, IntegerAndNumberRanges) {
    Grammar g = schema(R"({"type":"integer","minimum":-15,"maximum":307})");
    for (int i = -40; i <= 400; ++i) EXPECT_EQ(accepts(g, std::to_string(i)), i >= -15 && i <= 307) << i;
    Grammar x = schema(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100})");
    EXPECT_FALSE(accepts(x, "0"));
    EXPECT_TRUE(accepts(x, "1"));
    EXPECT_TRUE(accepts(x, "99"));
    EXPECT_FALSE(accepts(x, "100"));
    Grammar d4 = schema(R"({"type":"integer","minimum":5,"exclusiveMinimum":true})");  // draft 4
    EXPECT_FALSE(accepts(d4, "5"));
    EXPECT_TRUE(accepts(d4, "6"));
    Grammar open = schema(R"({"type":"integer","minimum":10})");
    EXPECT_TRUE(accepts(open, "10"));
    EXPECT_TRUE(accepts(open, "123456789"));
    EXPECT_FALSE(accepts(open, "9"));
    EXPECT_FALSE(accepts(open, "-10"));
    Grammar num = schema(R"({"type":"number","minimum":0,"maximum":1})");
    for (const char* ok : {"0", "0.5", "1", "1.0", "1.000", "0.999"}) EXPECT_TRUE(accepts(num, ok)) << ok;
    for (const char* bad : {"1.01", "-0.1", "2", "1e0"}) EXPECT_FALSE(accepts(num, bad)) << bad;
    Grammar xn = schema(R"({"type":"number","exclusiveMinimum":-2,"exclusiveMaximum":3})");
    for (const char* ok : {"-1.99", "-1", "0", "2.999", "-0.5"}) EXPECT_TRUE(accepts(xn, ok)) << ok;
    for (const char* bad : {"-2", "-2.0", "-2.5", "3", "3.0", "3.1"}) EXPECT_FALSE(accepts(xn, bad)) << bad;
}

TEST(JsonSchema, Strings) {
    Grammar g = schema(R"({"type":"string","minLength":2,"maxLength":4})");
    EXPECT_FALSE(accepts(g, R"("a")"));
    EXPECT_TRUE(accepts(g, R"("ab")"));
    EXPECT_TRUE(accepts(g, "\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\""));  // 4 codepoints, 8 bytes
    EXPECT_TRUE(accepts(g, R"("\n\t")"));
    EXPECT_FALSE(accepts(g, R"("abcde")"));
    Grammar p = schema(R"({"type":"string","pattern":"^[A-Z]{2}-\\d+$"})");
    EXPECT_TRUE(accepts(p, R"("AB-123")"));
    EXPECT_FALSE(accepts(p, R"("AB-")"));
    EXPECT_FALSE(accepts(p, R"("xAB-1")"));
    Grammar search = schema(R"({"type":"string","pattern":"b+c"})");  // unanchored: a search
    EXPECT_TRUE(accepts(search, R"("aaabbbcdd")"));
    EXPECT_FALSE(accepts(search, R"("aaac")"));
    Grammar quote = schema(R"({"type":"string","pattern":"^a\"b$"})");
    EXPECT_TRUE(accepts(quote, R"("a\"b")"));
}

TEST(JsonSchema, LargeCounts) {
    // Built from blocks, not one rule per character: exact at the boundaries.
    for (uint32_t n : {65u, 100u, 4097u, 65535u}) {
        Grammar g = schema(R"({"type":"string","maxLength":)" + std::to_string(n) + "}");
        EXPECT_TRUE(accepts(g, "\"" + std::string(n, 'x') + "\"")) << n;
        EXPECT_FALSE(accepts(g, "\"" + std::string(n + 1, 'x') + "\"")) << n;
        EXPECT_TRUE(accepts(g, "\"" + std::string(n - 1, 'x') + "\"")) << n;
        EXPECT_TRUE(accepts(g, "\"\"")) << n;
    }
    Grammar min = schema(R"({"type":"string","minLength":1000,"maxLength":1003})");
    for (size_t n : {998u, 999u, 1000u, 1001u, 1003u, 1004u}) EXPECT_EQ(accepts(min, "\"" + std::string(n, 'y') + "\""), n >= 1000 && n <= 1003) << n;
    for (uint32_t n = 60; n < 140; ++n) {
        Grammar g = Grammar::from_gbnf("root ::= \"a\"{3," + std::to_string(n) + "}");
        EXPECT_EQ(kiln::validate(g, std::string(n, 'a')).status, MatchStatus::Complete) << n;
        EXPECT_EQ(kiln::validate(g, std::string(n + 1, 'a')).status, MatchStatus::Rejected) << n;
        EXPECT_EQ(kiln::validate(g, std::string(2, 'a')).status, MatchStatus::Incomplete) << n;
    }
}

TEST(JsonSchema, Formats) {
    Grammar date = schema(R"({"type":"string","format":"date"})");
    for (const char* ok : {R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")", R"("0001-01-01")"}) EXPECT_TRUE(accepts(date, ok)) << ok;
    for (const char* bad : {R"("2023-02-29")", R"("1900-02-29")", R"("2024-04-31")", R"("2024-13-01")", R"("0000-01-01")", R"("2024-1-01")"})
        EXPECT_FALSE(accepts(date, bad)) << bad;
    Grammar dt = schema(R"({"type":"string","format":"date-time"})");
    EXPECT_TRUE(accepts(dt, R"("2024-05-01T12:30:00Z")"));
    EXPECT_TRUE(accepts(dt, R"("2024-05-01t12:30:00.123+02:00")"));
    EXPECT_FALSE(accepts(dt, R"("2024-05-01T24:00:00Z")"));
    EXPECT_FALSE(accepts(dt, R"("2024-05-01T12:30:00")"));
    Grammar time = schema(R"({"type":"string","format":"time"})");
    EXPECT_TRUE(accepts(time, R"("23:59:59-05:00")"));
    EXPECT_FALSE(accepts(time, R"("23:60:00Z")"));
    Grammar uuid = schema(R"({"type":"string","format":"uuid"})");
    EXPECT_TRUE(accepts(uuid, R"("123e4567-E89B-12d3-a456-426614174000")"));
    EXPECT_FALSE(accepts(uuid, R"("123e4567e89b12d3a456426614174000")"));
    Grammar email = schema(R"({"type":"string","format":"email"})");
    EXPECT_TRUE(accepts(email, R"("a@b")"));
    EXPECT_FALSE(accepts(email, R"("ab")"));
}

TEST(JsonSchema, Objects) {
    Grammar g = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},
                           "required":["b"],"additionalProperties":false})");
    EXPECT_TRUE(accepts(g, R"({"b":"x"})"));
    EXPECT_TRUE(accepts(g, R"({"a":1,"b":"x","c":true})"));
    EXPECT_TRUE(accepts(g, R"({ "a" : 1 , "b" : "x" })"));
    EXPECT_FALSE(accepts(g, R"({"a":1})"));          // b missing
    EXPECT_FALSE(accepts(g, R"({"b":"x","d":1})"));  // no additional
    EXPECT_FALSE(accepts(g, R"({"b":"x",})"));
    EXPECT_FALSE(accepts(g, R"({"a":"1","b":"x"})"));
    Grammar add = schema(R"({"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":{"type":"integer"}})");
    EXPECT_TRUE(accepts(add, R"({"name":"x","n":1,"nam":2,"names":3})"));
    EXPECT_FALSE(accepts(add, R"({"name":"x","n":"1"})"));
    EXPECT_FALSE(accepts(add, R"({"name":"x","name":1})"));  // a declared key is not an additional one
    Grammar open = schema(R"({"type":"object","properties":{"a":{"const":1}}})");
    EXPECT_TRUE(accepts(open, R"({"a":1,"z":[true]})"));
    EXPECT_FALSE(accepts(open, R"({"a":1,"a":2})"));
    Grammar req_only = schema(R"({"type":"object","required":["id"]})");
    EXPECT_TRUE(accepts(req_only, R"({"id":null,"x":1})"));
    EXPECT_FALSE(accepts(req_only, R"({"x":1})"));
    // patternProperties (one pattern, no other additional key): a key the pattern
    // matches (searched), valued by its schema.
    Grammar pat = schema(R"({"type":"object","properties":{"id":{"type":"integer"}},"patternProperties":{"^x-[a-z]+$":{"type":"string"}},
                            "additionalProperties":false})");
    EXPECT_TRUE(accepts(pat, R"({"id":1,"x-foo":"a","x-bar":"b"})"));
    EXPECT_TRUE(accepts(pat, R"({"x-foo":"a"})"));
    EXPECT_TRUE(accepts(pat, R"({})"));
    EXPECT_FALSE(accepts(pat, R"({"x-foo":1})"));    // the pattern's schema
    EXPECT_FALSE(accepts(pat, R"({"x-Foo":"a"})"));  // not matched: no other key
    EXPECT_FALSE(accepts(pat, R"({"y":"a"})"));
    Grammar search = schema(R"({"patternProperties":{"[0-9]":{"const":true}},"additionalProperties":false})");
    EXPECT_TRUE(accepts(search, R"({"a1b":true,"22":true})"));
    EXPECT_FALSE(accepts(search, R"({"ab":true})"));
    EXPECT_FALSE(accepts(search, R"({"a1":false})"));
    Grammar any = Grammar::any_json_object({true, 0});
    EXPECT_TRUE(accepts(any, R"({"a":{"b":[1,2,{}]}})"));
    EXPECT_FALSE(accepts(any, "[1]"));
}

TEST(JsonSchema, Arrays) {
    Grammar g = schema(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
    EXPECT_FALSE(accepts(g, "[1]"));
    EXPECT_TRUE(accepts(g, "[1,2]"));
    EXPECT_TRUE(accepts(g, "[1, 2, 3]"));
    EXPECT_FALSE(accepts(g, "[1,2,3,4]"));
    EXPECT_FALSE(accepts(g, "[1,\"2\"]"));
    Grammar tuple = schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})");
    EXPECT_TRUE(accepts(tuple, R"([])"));
    EXPECT_TRUE(accepts(tuple, R"(["a"])"));
    EXPECT_TRUE(accepts(tuple, R"(["a",1])"));
    EXPECT_FALSE(accepts(tuple, R"(["a",1,2])"));
    EXPECT_FALSE(accepts(tuple, R"([1])"));
    Grammar old = schema(R"({"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"null"},"minItems":2})");
    EXPECT_TRUE(accepts(old, R"(["a",null,null])"));
    EXPECT_FALSE(accepts(old, R"(["a"])"));
    EXPECT_FALSE(accepts(old, R"(["a",1])"));
    Grammar unique_one = schema(R"({"type":"array","uniqueItems":true,"maxItems":1})");
    EXPECT_TRUE(accepts(unique_one, "[3]"));
}

TEST(JsonSchema, EnumConstAndCombinators) {
    Grammar e = schema(R"({"enum":["a",1,null,{"k":[true]}]})");
    for (const char* ok : {R"("a")", "1", "null", R"({"k":[true]})", R"({ "k" : [ true ] })"}) EXPECT_TRUE(accepts(e, ok)) << ok;
    EXPECT_FALSE(accepts(e, R"("b")"));
    Grammar typed = schema(R"({"type":"string","enum":["a",1,"bb"],"maxLength":1})");
    EXPECT_TRUE(accepts(typed, R"("a")"));
    EXPECT_FALSE(accepts(typed, "1"));
    EXPECT_FALSE(accepts(typed, R"("bb")"));
    Grammar any_of = schema(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})");
    EXPECT_TRUE(accepts(any_of, "5"));
    EXPECT_TRUE(accepts(any_of, R"("x")"));
    EXPECT_FALSE(accepts(any_of, R"("xy")"));
    Grammar one_of = schema(R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"]},
                                       {"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind"]}]})");
    EXPECT_TRUE(accepts(one_of, R"({"kind":"a","x":1})"));
    EXPECT_TRUE(accepts(one_of, R"({"kind":"b","y":"s"})"));
    EXPECT_FALSE(accepts(one_of, R"({"kind":"c"})"));
    Grammar forbidding = schema(R"({"oneOf":[{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":false},
                                          {"type":"object","properties":{"b":{}},"required":["b"],"additionalProperties":false}]})");
    EXPECT_TRUE(accepts(forbidding, R"({"a":1})"));
    EXPECT_FALSE(accepts(forbidding, R"({"a":1,"b":2})"));
    // oneOf over required keys: each branch without the other ("exactly one").
    Grammar one_key = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
                                 "oneOf":[{"required":["a"]},{"required":["b"]}]})");
    EXPECT_TRUE(accepts(one_key, R"({"a":1})"));
    EXPECT_TRUE(accepts(one_key, R"({"b":2})"));
    EXPECT_FALSE(accepts(one_key, R"({"a":1,"b":2})"));
    EXPECT_FALSE(accepts(one_key, R"({})"));
    // Listed values the other branch never matches (checked by compiling it).
    Grammar keyword_or_digits = schema(R"({"oneOf":[{"enum":["auto","none"]},{"type":"string","pattern":"^[0-9]+$"}]})");
    for (const char* ok : {R"("auto")", R"("none")", R"("42")"}) EXPECT_TRUE(accepts(keyword_or_digits, ok)) << ok;
    EXPECT_FALSE(accepts(keyword_or_digits, R"("auto1")"));
    Grammar const_or_range = schema(R"({"oneOf":[{"const":0},{"type":"integer","minimum":1,"maximum":9}]})");
    EXPECT_TRUE(accepts(const_or_range, "0"));
    EXPECT_TRUE(accepts(const_or_range, "9"));
    EXPECT_FALSE(accepts(const_or_range, "10"));
    Grammar all_of = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                       {"properties":{"b":{"type":"string"}},"required":["b"]}]})");
    EXPECT_TRUE(accepts(all_of, R"({"a":1,"b":"x"})"));
    EXPECT_FALSE(accepts(all_of, R"({"a":1})"));
    // additionalProperties of one allOf part still applies to keys another part declares.
    Grammar strict = schema(R"({"allOf":[{"properties":{"a":{}},"additionalProperties":false},{"properties":{"b":{}}}]})");
    EXPECT_TRUE(accepts(strict, R"({"a":1})"));
    EXPECT_FALSE(accepts(strict, R"({"a":1,"b":2})"));
}

TEST(JsonSchema, RefsAndRecursion) {
    Grammar g = schema(R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
                              "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"],"additionalProperties":false}},
                         "$ref":"#/$defs/node"})");
    EXPECT_TRUE(accepts(g, R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4}]}]})"));
    EXPECT_FALSE(accepts(g, R"({"value":1,"children":[{"children":[]}]})"));
    Grammar root = schema(R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})");
    EXPECT_TRUE(accepts(root, "[1,[2,[3,[]]]]"));
    EXPECT_FALSE(accepts(root, "[1,[\"x\"]]"));
    Grammar pointer = schema(R"({"definitions":{"a~b":{"type":"null"},"c/d":{"type":"boolean"}},
                               "properties":{"x":{"$ref":"#/definitions/a~0b"},"y":{"$ref":"#/definitions/c~1d"}}})");
    EXPECT_TRUE(accepts(pointer, R"({"x":null,"y":true})"));
    EXPECT_FALSE(accepts(pointer, R"({"x":true})"));
}

TEST(JsonSchema, WhitespacePolicy) {
    const char* s = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
    Grammar bounded = Grammar::from_json_schema(s, {false, 3});
    EXPECT_TRUE(accepts(bounded, R"({"a":1})"));
    EXPECT_TRUE(accepts(bounded, "{\n  \"a\": 1\n}"));
    EXPECT_FALSE(accepts(bounded, "{\n   \"a\": 1}"));  // four bytes
    EXPECT_FALSE(accepts(bounded, "{\r\"a\": 1}"));    // \r only with any_whitespace
    Grammar any = Grammar::from_json_schema(s, {true, 0});
    EXPECT_TRUE(accepts(any, "{\r\n        \"a\"   :   1 \t}"));
}

// One test per construct that is refused, each naming it.
// `not` where its complement is again a schema.
TEST(JsonSchema, NotOfSimpleForms) {
    Grammar not_null = schema(R"({"not":{"type":"null"}})");
    EXPECT_TRUE(accepts(not_null, "1"));
    EXPECT_TRUE(accepts(not_null, R"({"a":null})"));
    EXPECT_FALSE(accepts(not_null, "null"));
    Grammar not_num = schema(R"({"type":["number","string"],"not":{"type":"number","title":"t"}})");
    EXPECT_TRUE(accepts(not_num, R"("x")"));
    EXPECT_FALSE(accepts(not_num, "1"));
    EXPECT_FALSE(accepts(not_num, "1.5"));
    Grammar double_not = schema(R"({"not":{"not":{"type":"string","maxLength":2}}})");
    EXPECT_TRUE(accepts(double_not, R"("ab")"));
    EXPECT_FALSE(accepts(double_not, R"("abc")"));
    EXPECT_FALSE(accepts(double_not, "1"));
    Grammar no_key = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"not":{"required":["b"]}})");
    EXPECT_TRUE(accepts(no_key, R"({"a":1,"c":2})"));
    EXPECT_FALSE(accepts(no_key, R"({"a":1,"b":2})"));
    EXPECT_FALSE(accepts(no_key, R"({"b":2})"));
    Grammar nothing = schema(R"({"properties":{"a":{"not":{}}}})");
    EXPECT_TRUE(accepts(nothing, R"({"b":1})"));
    EXPECT_FALSE(accepts(nothing, R"({"a":1})"));
    EXPECT_NE(error_of([] { schema(R"({"not":true})"); }).find("matches no text at all"), std::string::npos);
    EXPECT_TRUE(accepts(schema(R"({"not":false})"), "1"));
}

TEST(JsonSchema, Refusals) {
    struct Case {
        const char* schema;
        const char* expected;
    };
    const Case cases[] = {
        {R"({"not":{"enum":[1,2]}})", "keyword 'not'"},
        {R"({"not":{"required":["a","b"]}})", "keyword 'not'"},
        {R"({"not":{"type":"integer"}})", "'not' of type integer"},
        {R"({"type":"object","patternProperties":{"^x":{}},"additionalProperties":false,"not":{"required":["a"]}})",
         "allOf: 'patternProperties' together with"},
        {R"({"if":{"type":"string"},"then":{"minLength":1}})", "keyword 'if'"},
        {R"({"type":"object","patternProperties":{"^x":{}}})", "unless additionalProperties is false"},
        {R"({"type":"object","patternProperties":{"^x":{},"^y":{}},"additionalProperties":false})", "more than one pattern"},
        {R"({"type":"object","properties":{"xa":{}},"patternProperties":{"^x":{}},"additionalProperties":false})",
         "declared property 'xa' matches the pattern"},
        {R"({"type":"object","properties":{"é":{}},"patternProperties":{"^x":{}},"additionalProperties":false})", "not printable ASCII"},
        {R"({"type":"object","required":["k"],"patternProperties":{"^x":{}},"additionalProperties":false})", "required key 'k' without a property"},
        {R"({"allOf":[{"patternProperties":{"^x":{}},"additionalProperties":false},{"properties":{"a":{}}}]})",
         "allOf: 'patternProperties' together with"},
        {R"({"type":"object","propertyNames":{"maxLength":3}})", "keyword 'propertyNames'"},
        {R"({"dependencies":{"a":["b"]}})", "keyword 'dependencies'"},
        {R"({"dependentRequired":{"a":["b"]}})", "keyword 'dependentRequired'"},
        {R"({"dependentSchemas":{"a":{}}})", "keyword 'dependentSchemas'"},
        {R"({"unevaluatedProperties":false})", "keyword 'unevaluatedProperties'"},
        {R"({"unevaluatedItems":false})", "keyword 'unevaluatedItems'"},
        {R"({"type":"array","contains":{"type":"integer"}})", "keyword 'contains'"},
        {R"({"type":"integer","multipleOf":3})", "keyword 'multipleOf'"},
        {R"({"type":"array","uniqueItems":true})", "keyword 'uniqueItems'"},
        {R"({"type":"object","minProperties":2})", "keyword 'minProperties'"},
        {R"({"type":"object","maxProperties":2})", "keyword 'maxProperties'"},
        {R"({"type":"string","format":"uri"})", "format 'uri'"},
        {R"({"type":"string","pattern":"^a","maxLength":3})", "minLength / maxLength together with 'pattern'"},
        {R"J({"type":"string","pattern":"(?=a)"})J", "lookaround"},
        {R"({"type":"string","pattern":"(a)\\1"})", "escape '\\1'"},
        {R"({"type":"string","pattern":"[^\\d]"})", "negated class"},
        {R"({"type":"string","maxLength":10000000})", "above 1000000"},
        {R"({"type":"number","minimum":0.5})", "fractional bound"},
        {R"({"type":"integer","maximum":1e300})", "beyond 9e15"},
        {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", "oneOf: branches 0 and 1 may both match"},
        // A listed value the other branch matches, and negations kiln cannot form.
        {R"({"oneOf":[{"const":"a"},{"type":"string"}]})", "oneOf: branches 0 and 1 may both match"},
        {R"({"oneOf":[{"required":["a","b"]},{"required":["c"]}]})", "oneOf: branches 0 and 1 may both match"},
        {R"({"oneOf":[{"enum":[0.5,2]},{"type":"number","minimum":1}]})", "oneOf: branches 0 and 1 may both match"},
        {R"({"$ref":"https://example.com/schema.json"})", "remote references"},
        {R"({"$ref":"#/definitions/missing"})", "does not resolve"},
        {R"({"type":"wat"})", "unknown type 'wat'"},
        {R"({"$dynamicRef":"#meta"})", "keyword '$dynamicRef'"},
        {R"({"allOf":[{"pattern":"a"},{"pattern":"b"}]})", "allOf: 'pattern' differs"},
        {"{not json", "not valid JSON"},
    };
    for (const Case& c : cases) {
        const std::string err = error_of([&] { schema(c.schema); });
        EXPECT_NE(err.find(c.expected), std::string::npos) << c.schema << " -> " << err;
    }
    // The location is named as a JSON pointer.
    EXPECT_NE(error_of([] { schema(R"({"properties":{"a":{"not":{"minimum":1}}}})"); }).find("#/properties/a: keyword 'not'"), std::string::npos);
}

TEST(JsonSchema, PrintsGbnfThatParsesAgain) {
    Grammar g = schema(R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":12},"s":{"type":"string","format":"date"}},"required":["n"]})");
    const std::string gbnf = g.to_gbnf();
    Grammar again = Grammar::from_gbnf(gbnf);
    for (const char* t : {R"({"n":12})", R"({"n":13})", R"({"n":1,"s":"2024-02-30"})", R"({"n":1,"s":"2024-02-29"})", R"({"n":1,"x":1})"})
        EXPECT_EQ(kiln::validate(g, t).status, kiln::validate(again, t).status) << t << "\n" << gbnf;
}

}  // namespace
