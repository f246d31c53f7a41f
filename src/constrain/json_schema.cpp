// JSON Schema to grammar IR. The rule is exactness: every keyword that
// constrains an instance is either enforced exactly or refused with an error
// naming it and its location, so a compiled schema never accepts an invalid
// instance. Some encodings of valid instances may be rejected (a number bound
// disallows exponents, object keys come in the schema's order, enum values are
// written as nlohmann::json writes them); docs/structured_output.md lists them.
//
// Object keys are generated in the order of `properties`, then keys that are
// required without a property, then additional ones.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "constrain/converters.h"
#include "constrain/json_basics.h"
#include "constrain/program.h"
#include "constrain/recognizer.h"
#include "kiln/error.h"

namespace kiln::constrain {

namespace {

struct RangesLess {
    bool operator()(const std::vector<CpRange>& a, const std::vector<CpRange>& b) const {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                            [](const CpRange& x, const CpRange& y) { return x.lo != y.lo ? x.lo < y.lo : x.hi < y.hi; });
    }
};

using json = nlohmann::ordered_json;  // keeps the order of `properties`

// Keywords that constrain instances and that kiln does not enforce.
const std::set<std::string> k_refused = {
    "not", "then", "else", "propertyNames", "dependencies", "dependentRequired", "dependentSchemas",
    "unevaluatedProperties", "unevaluatedItems", "contains", "minContains", "maxContains", "multipleOf",
    "$dynamicRef", "$recursiveRef",
};

// Keywords kiln reads; anything else is an annotation and has no effect.
const std::set<std::string> k_type_keywords = {
    "type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf",
    "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties",
    "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "if",
};

enum TypeBit : unsigned {
    t_null = 1, t_boolean = 2, t_integer = 4, t_number = 8, t_string = 16, t_array = 32, t_object = 64,
    t_all = 127,
};

unsigned type_bit(const std::string& name, const std::string& where) {
    if (name == "null") return t_null;
    if (name == "boolean") return t_boolean;
    if (name == "integer") return t_integer;
    if (name == "number") return t_number | t_integer;
    if (name == "string") return t_string;
    if (name == "array") return t_array;
    if (name == "object") return t_object;
    throw Error("JSON Schema " + where + ": unknown type '" + name + "'");
}

unsigned value_type(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return t_null;
        case json::value_t::boolean: return t_boolean;
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return t_integer | t_number;
        case json::value_t::number_float: {
            const double d = v.get<double>();
            return std::isfinite(d) && d == std::floor(d) ? (t_integer | t_number) : t_number;
        }
        case json::value_t::string: return t_string;
        case json::value_t::array: return t_array;
        case json::value_t::object: return t_object;
        default: return 0;
    }
}

std::string pointer_token(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

// Names of generated rules: GBNF-safe (letters, digits, '-').
std::string rule_name(std::string_view hint) {
    std::string out;
    for (char c : hint) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) out += c;
        else if (!out.empty() && out.back() != '-') out += '-';
        if (out.size() >= 40) break;
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? "schema" : out;
}

class Converter {
public:
    Converter(const json& root, const JsonSchemaOptions& options, GrammarIR& ir)
        : root_(root), options_(options), ir_(ir), basics_(ir, options) {
        if (root.is_object() && root.contains("$schema") && root["$schema"].is_string()) {
            const std::string draft = root["$schema"].get<std::string>();
            for (const char* old : {"draft-03", "draft-04", "draft-06", "draft-07"})
                if (draft.find(old) != std::string::npos) legacy_ref_ = true;
        }
    }

    Expr convert(const json& s, const std::string& at) {
        if (++depth_ > 200) throw Error("JSON Schema " + at + ": schema nesting deeper than 200");
        Expr e = convert_inner(s, at);
        --depth_;
        return e;
    }

    JsonBasics& basics() { return basics_; }

private:
    bool nested_check_ = false;  // this converter is value_outside's: it runs no such check itself

    [[noreturn]] void refuse(const std::string& at, const std::string& what) const {
        throw Error("JSON Schema " + (at.empty() ? std::string("#") : at) + ": " + what);
    }

    // ---- references ----

    const json& resolve(const std::string& ref, const std::string& at) const {
        std::string r = ref;
        if (root_.is_object()) {
            for (const char* id_key : {"$id", "id"}) {
                auto it = root_.find(id_key);
                if (it != root_.end() && it->is_string()) {
                    std::string id = it->get<std::string>();
                    if (!id.empty() && id.back() == '#') id.pop_back();
                    if (!id.empty() && r.rfind(id, 0) == 0) r = r.substr(id.size());
                }
            }
        }
        if (r.empty() || r == "#") return root_;
        if (r.rfind("#/", 0) != 0) refuse(at, "$ref '" + ref + "' is not a JSON pointer into this document (remote references and anchors are not supported)");
        const json* cur = &root_;
        size_t pos = 2;
        while (pos <= r.size()) {
            size_t end = r.find('/', pos);
            if (end == std::string::npos) end = r.size();
            std::string token;
            for (size_t i = pos; i < end; ++i) {
                if (r[i] == '~' && i + 1 < end) {
                    token += r[i + 1] == '1' ? '/' : '~';
                    ++i;
                } else if (r[i] == '%' && i + 2 < end + 0 && i + 2 < r.size()) {
                    token += static_cast<char>(std::stoi(r.substr(i + 1, 2), nullptr, 16));
                    i += 2;
                } else {
                    token += r[i];
                }
            }
            if (cur->is_object()) {
                auto it = cur->find(token);
                if (it == cur->end()) refuse(at, "$ref '" + ref + "' does not resolve");
                cur = &*it;
            } else if (cur->is_array()) {
                size_t idx = 0;
                try {
                    idx = std::stoul(token);
                } catch (...) {
                    refuse(at, "$ref '" + ref + "' does not resolve");
                }
                if (idx >= cur->size()) refuse(at, "$ref '" + ref + "' does not resolve");
                cur = &(*cur)[idx];
            } else {
                refuse(at, "$ref '" + ref + "' does not resolve");
            }
            pos = end + 1;
        }
        return *cur;
    }

    Expr ref_rule(const std::string& ref, const std::string& at) {
        auto it = refs_.find(ref);
        if (it != refs_.end()) return e_ref(it->second);
        const json& target = resolve(ref, at);
        const uint32_t id = ir_.add_rule(rule_name(ref.substr(ref.rfind('/') == std::string::npos ? 0 : ref.rfind('/') + 1)));
        refs_.emplace(ref, id);
        ir_.define(id, convert(target, ref));
        return e_ref(id);
    }

    // ---- allOf / $ref with siblings: merging schemas ----

    static bool only_annotations(const json& s) {
        for (auto it = s.begin(); it != s.end(); ++it)
            if (k_type_keywords.count(it.key()) || k_refused.count(it.key())) return false;
        return true;
    }

    // `not` in the forms whose complement is again a schema: not {} / true
    // (nothing), not false (no constraint), not {not: X} (X), not {type: T} (the
    // other types), not {required: [k]} (k absent). The result joins the rest
    // through allOf, whose merge is exact or refused; other forms stay and are
    // refused by name.
    json rewrite_not(const json& s, const std::string& at) const {
        if (!s.is_object() || !s.contains("not")) return s;
        const json& n = s["not"];
        json rest = s;
        rest.erase("not");
        json part;
        if (n == json(true) || n == json::object()) return json(false);
        if (n == json(false)) return rest;
        if (!n.is_object()) refuse(at, "'not' must be a schema");
        json keys = json::object();  // n's keywords that are not annotations
        for (auto it = n.begin(); it != n.end(); ++it)
            if (k_type_keywords.count(it.key()) || k_refused.count(it.key())) keys[it.key()] = *it;
        if (keys.empty()) return json(false);  // annotations only: n matches everything
        if (keys.size() == 1 && keys.contains("not")) {
            part = keys["not"];
        } else if (keys.size() == 1 && keys.contains("type")) {
            const unsigned t = types_of(keys["type"], at + "/not");
            if ((t & t_integer) && !(t & t_number)) refuse(at, "'not' of type integer (numbers with a fraction) is not supported");
            const unsigned other = t_all & ~t;
            if (other == 0) return json(false);
            part = json{{"type", type_names(other)}};
        } else if (keys.size() == 1 && keys.contains("required") && keys["required"].is_array() && keys["required"].size() == 1 &&
                   keys["required"][0].is_string()) {
            part = json{{"properties", {{keys["required"][0].get<std::string>(), false}}}};
        } else {
            return s;
        }
        json all = rest.contains("allOf") ? rest["allOf"] : json::array();
        if (!all.is_array()) refuse(at, "allOf must be an array");
        all.push_back(part);
        rest["allOf"] = all;
        return rest;
    }

    // The schema with its $ref and allOf folded in, where that is exact.
    json flatten(const json& s_in, const std::string& at, int depth = 0) {
        if (depth > 32) refuse(at, "allOf / $ref chain deeper than 32 (recursive allOf)");
        const json s = rewrite_not(s_in, at);
        if (s.is_boolean()) return s;
        if (!s.is_object()) refuse(at, "a schema must be an object or a boolean");
        json rest = s;
        std::vector<json> parts;
        if (rest.contains("$ref")) {
            if (!rest["$ref"].is_string()) refuse(at, "$ref must be a string");
            const std::string ref = rest["$ref"].get<std::string>();
            if (legacy_ref_) return flatten(resolve(ref, at), ref, depth + 1);
            rest.erase("$ref");
            parts.push_back(flatten(resolve(ref, at), ref, depth + 1));
        }
        if (rest.contains("allOf")) {
            const json branches = rest["allOf"];
            rest.erase("allOf");
            if (!branches.is_array()) refuse(at, "allOf must be an array");
            for (size_t i = 0; i < branches.size(); ++i)
                parts.push_back(flatten(branches[i], at + "/allOf/" + std::to_string(i), depth + 1));
        }
        json out = rest;
        for (const json& p : parts) out = merge(out, p, at);
        return out;
    }

    json merge(const json& a, const json& b, const std::string& at) {
        if (a.is_boolean()) return a.get<bool>() ? b : a;
        if (b.is_boolean()) return b.get<bool>() ? a : b;
        json out = a;
        // patternProperties decide which keys additionalProperties sees: merging
        // them with the other side's object keywords is not done.
        auto has_object_keys = [](const json& x) {
            return x.contains("properties") || x.contains("additionalProperties") || x.contains("patternProperties");
        };
        auto has_patterns = [](const json& x) { return x.contains("patternProperties") && !x["patternProperties"].empty(); };
        if ((has_patterns(a) && has_object_keys(b)) || (has_patterns(b) && has_object_keys(a)))
            refuse(at, "allOf: 'patternProperties' together with another part's object keywords is not supported");
        // Properties: a key declared on one side only is still checked by the
        // other side's additionalProperties.
        if (a.contains("properties") || b.contains("properties") || a.contains("additionalProperties") ||
            b.contains("additionalProperties")) {
            const json pa = a.value("properties", json::object()), pb = b.value("properties", json::object());
            const json apa = a.value("additionalProperties", json(true)), apb = b.value("additionalProperties", json(true));
            json props = json::object();
            auto side = [](const json& p, const json& ap, const std::string& k) { return p.contains(k) ? p[k] : ap; };
            for (auto it = pa.begin(); it != pa.end(); ++it)
                props[it.key()] = combine(side(pa, apa, it.key()), side(pb, apb, it.key()));
            for (auto it = pb.begin(); it != pb.end(); ++it)
                if (!props.contains(it.key())) props[it.key()] = combine(side(pa, apa, it.key()), side(pb, apb, it.key()));
            if (!props.empty()) out["properties"] = props;
            const json ap = combine(apa, apb);
            if (ap != json(true)) out["additionalProperties"] = ap;
            else out.erase("additionalProperties");
        }
        for (auto it = b.begin(); it != b.end(); ++it) {
            const std::string& k = it.key();
            if (k == "properties" || k == "additionalProperties") continue;
            if (!out.contains(k)) {
                out[k] = *it;
                continue;
            }
            const json& x = out[k];
            const json& y = *it;
            if (x == y) continue;
            if (k == "type") {
                unsigned tx = types_of(x, at), ty = types_of(y, at);
                out[k] = type_names(tx & ty);
            } else if (k == "required") {
                json r = x;
                for (const json& n : y)
                    if (std::find(r.begin(), r.end(), n) == r.end()) r.push_back(n);
                out[k] = r;
            } else if (k == "minimum" || k == "minLength" || k == "minItems" || k == "minProperties") {
                if (!x.is_number() || !y.is_number()) refuse(at, "allOf: '" + k + "' is not a number");
                out[k] = x.get<double>() >= y.get<double>() ? x : y;
            } else if (k == "maximum" || k == "maxLength" || k == "maxItems" || k == "maxProperties") {
                if (!x.is_number() || !y.is_number()) refuse(at, "allOf: '" + k + "' is not a number");
                out[k] = x.get<double>() <= y.get<double>() ? x : y;
            } else if (k == "enum" || k == "const") {
                json ex = k == "const" ? json::array({x}) : x, ey = k == "const" ? json::array({y}) : y;
                json both = json::array();
                for (const json& v : ex)
                    if (std::find(ey.begin(), ey.end(), v) != ey.end()) both.push_back(v);
                out.erase(k);
                out["enum"] = both;
            } else if (k == "items" && x.is_object() && y.is_object()) {
                out[k] = combine(x, y);
            } else if (k_type_keywords.count(k) || k_refused.count(k)) {
                refuse(at, "allOf: '" + k + "' differs between the merged schemas");
            }
            // annotations: the first one wins
        }
        if (out.contains("const") && out.contains("enum")) {
            json both = json::array();
            for (const json& v : out["enum"])
                if (v == out["const"]) both.push_back(v);
            out.erase("const");
            out["enum"] = both;
        }
        return out;
    }

    static json combine(const json& x, const json& y) {
        if (x == json(true) || x == json::object()) return y;
        if (y == json(true) || y == json::object() || x == y) return x;
        if (x == json(false) || y == json(false)) return json(false);
        return json{{"allOf", json::array({x, y})}};
    }

    unsigned types_of(const json& t, const std::string& at) const {
        if (t.is_string()) return type_bit(t.get<std::string>(), at);
        if (t.is_array()) {
            unsigned bits = 0;
            for (const json& n : t) {
                if (!n.is_string()) refuse(at, "type entries must be strings");
                bits |= type_bit(n.get<std::string>(), at);
            }
            return bits;
        }
        refuse(at, "type must be a string or an array");
    }

    static json type_names(unsigned bits) {
        json out = json::array();
        if (bits & t_null) out.push_back("null");
        if (bits & t_boolean) out.push_back("boolean");
        if (bits & t_number) out.push_back("number");
        else if (bits & t_integer) out.push_back("integer");
        if (bits & t_string) out.push_back("string");
        if (bits & t_array) out.push_back("array");
        if (bits & t_object) out.push_back("object");
        return out;
    }

    // The JSON types a (flattened) schema can match, for oneOf's exclusivity test.
    unsigned possible_types(const json& s, const std::string& at) {
        if (s.is_boolean()) return s.get<bool>() ? static_cast<unsigned>(t_all) : 0u;
        unsigned bits = s.contains("type") ? types_of(s["type"], at) : t_all;
        if (s.contains("const")) bits &= value_type(s["const"]);
        if (s.contains("enum") && s["enum"].is_array()) {
            unsigned e = 0;
            for (const json& v : s["enum"]) e |= value_type(v);
            bits &= e;
        }
        return bits;
    }

    // Values a property is pinned to by const / enum, if it is.
    static std::optional<json> pinned(const json& s, const std::string& key) {
        if (!s.is_object() || !s.contains("properties") || !s["properties"].contains(key)) return std::nullopt;
        const json& p = s["properties"][key];
        if (!p.is_object()) return std::nullopt;
        if (p.contains("const")) return json::array({p["const"]});
        if (p.contains("enum") && p["enum"].is_array()) return p["enum"];
        return std::nullopt;
    }

    // Whether the value v is proven not to match schema b: b compiled on its own
    // (with this document's $refs) rejects v as written. Only for values whose
    // writing kiln's grammars never reject when the schema accepts them (see
    // docs/structured_output.md: no object key order, number formatting or
    // escapes involved): null, booleans, integers below 2^53, strings of printable
    // ASCII without quote or backslash. Anything else, or a b that is refused, is
    // not proven.
    bool value_outside(const json& v, const json& b, const std::string& at) {
        const bool safe = v.is_null() || v.is_boolean() ||
                          (v.is_number_integer() && std::abs(v.get<double>()) < 9007199254740992.0) ||
                          (v.is_string() && std::all_of(v.get_ref<const std::string&>().begin(), v.get_ref<const std::string&>().end(),
                                                        [](char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }));
        // b may lead back here (a $ref to an enclosing schema): one level only.
        if (!safe || nested_check_) return false;
        try {
            GrammarIR ir;
            const uint32_t root = ir.add_rule("root");
            ir.root = root;
            Converter c(root_, options_, ir);
            c.nested_check_ = true;
            ir.define(root, e_seq({c.convert(b, at)}));
            const CompiledGrammar g = compile_grammar(std::move(ir));
            Recognizer rec(&g);
            State st = rec.start();
            for (char ch : v.dump()) {
                st = rec.step(st, static_cast<uint8_t>(ch));
                if (st.dead()) return true;
                st = rec.compact(st, 0);
            }
            return !st.complete;
        } catch (const Error&) {
            return false;
        }
    }

    // oneOf branches as a union is exact only if no instance matches two of them:
    // different JSON types, or objects told apart by a required property pinned to
    // disjoint values.
    bool exclusive(const json& a, const json& b, const std::string& at) {
        const unsigned ta = possible_types(a, at), tb = possible_types(b, at);
        // number and integer overlap, and integer-valued floats are integers
        const unsigned na = ta & t_number ? ta | t_integer : ta, nb = tb & t_number ? tb | t_integer : tb;
        if ((na & nb) == 0) return true;
        // Objects where one requires a key the other forbids.
        auto forbids = [](const json& s, const std::string& key) {
            if (s.contains("properties") && s["properties"].is_object() && s["properties"].contains(key))
                return s["properties"][key] == json(false);
            return s.contains("additionalProperties") && s["additionalProperties"] == json(false) &&
                   !(s.contains("patternProperties") && !s["patternProperties"].empty());
        };
        auto requires_forbidden = [&](const json& x, const json& y) {
            if (!x.contains("required") || !x["required"].is_array()) return false;
            for (const json& k : x["required"])
                if (k.is_string() && forbids(y, k.get<std::string>())) return true;
            return false;
        };
        if ((na & nb) == t_object && a.is_object() && b.is_object() && (requires_forbidden(a, b) || requires_forbidden(b, a))) return true;
        if ((na & nb) == t_object && a.is_object() && b.is_object() && a.contains("required") && b.contains("required")) {
            for (const json& k : a["required"]) {
                if (!k.is_string()) continue;
                const std::string key = k.get<std::string>();
                if (std::find(b["required"].begin(), b["required"].end(), k) == b["required"].end()) continue;
                std::optional<json> va = pinned(a, key), vb = pinned(b, key);
                if (!va || !vb) continue;
                bool overlap = false;
                for (const json& v : *va)
                    if (std::find(vb->begin(), vb->end(), v) != vb->end()) overlap = true;
                if (!overlap) return true;
            }
        }
        if (a.contains("enum") && b.contains("enum") && a["enum"].is_array() && b["enum"].is_array()) {
            for (const json& v : a["enum"])
                if (std::find(b["enum"].begin(), b["enum"].end(), v) != b["enum"].end()) return false;
            return true;
        }
        // A branch of listed values (const / enum) none of which the other matches.
        auto values = [](const json& s) -> std::optional<json> {
            if (!s.is_object()) return std::nullopt;
            if (s.contains("const")) return json::array({s["const"]});
            if (s.contains("enum") && s["enum"].is_array()) return s["enum"];
            return std::nullopt;
        };
        auto all_outside = [&](const json& vs, const json& other) {
            return std::all_of(vs.begin(), vs.end(), [&](const json& v) { return value_outside(v, other, at); });
        };
        if (std::optional<json> va = values(a); va && all_outside(*va, b)) return true;
        if (std::optional<json> vb = values(b); vb && all_outside(*vb, a)) return true;
        return false;
    }

    // ---- the schema itself ----

    Expr convert_inner(const json& s_in, const std::string& at) {
        if (s_in.is_boolean()) return s_in.get<bool>() ? basics_.value() : e_nothing();
        if (!s_in.is_object()) refuse(at, "a schema must be an object or a boolean");
        // A bare $ref (with annotations) becomes a rule of its own: recursion.
        if (s_in.contains("$ref")) {
            json rest = s_in;
            rest.erase("$ref");
            // Up to draft 7, keywords beside $ref are ignored.
            if (legacy_ref_ || only_annotations(rest)) {
                if (!s_in["$ref"].is_string()) refuse(at, "$ref must be a string");
                return ref_rule(s_in["$ref"].get<std::string>(), at);
            }
        }
        json s = (s_in.contains("$ref") || s_in.contains("allOf") || s_in.contains("not")) ? flatten(s_in, at) : s_in;
        if (s.is_boolean()) return s.get<bool>() ? basics_.value() : e_nothing();

        for (auto it = s.begin(); it != s.end(); ++it) {
            if (k_refused.count(it.key())) refuse(at, "keyword '" + it.key() + "' is not supported");
            if (it.key() == "if" && (s.contains("then") || s.contains("else"))) refuse(at, "keyword 'if' is not supported");
            if (it.key() == "$ref") refuse(at, "$ref with sibling keywords could not be merged");
        }

        // anyOf / oneOf: each branch with the sibling keywords folded in.
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!s.contains(key)) continue;
            const json branches = s[key];
            if (!branches.is_array() || branches.empty()) refuse(at, std::string(key) + " must be a non-empty array");
            json rest = s;
            rest.erase(key);
            std::vector<json> merged;
            for (size_t i = 0; i < branches.size(); ++i) {
                const std::string bat = at + "/" + key + "/" + std::to_string(i);
                merged.push_back(merge(flatten(rest, at), flatten(branches[i], bat), bat));
            }
            bool rewritten = false;
            if (std::string(key) == "oneOf") {
                auto overlap = [&](const std::vector<json>& bs) -> std::optional<std::pair<size_t, size_t>> {
                    for (size_t i = 0; i < bs.size(); ++i)
                        for (size_t j = i + 1; j < bs.size(); ++j)
                            if (!exclusive(bs[i], bs[j], at)) return std::pair{i, j};
                    return std::nullopt;
                };
                if (const auto ij = overlap(merged)) {
                    // "Exactly one" is the union of each branch without the others:
                    // branch i and `not` of every other branch, where each `not` is a
                    // form rewrite_not complements exactly (e.g. not {required: [k]}:
                    // oneOf over required keys) and allOf's merge is exact. The
                    // branches so made are exclusive by construction; that is checked.
                    const std::string why = "oneOf: branches " + std::to_string(ij->first) + " and " + std::to_string(ij->second) +
                                            " may both match an instance (only exclusive branches are supported)";
                    std::vector<json> excl;
                    try {
                        for (size_t i = 0; i < merged.size(); ++i) {
                            json all = json::array({merged[i]});
                            for (size_t j = 0; j < branches.size(); ++j)
                                if (j != i) all.push_back(json{{"not", branches[j]}});
                            const std::string bat = at + "/" + key + "/" + std::to_string(i);
                            json b = flatten(json{{"allOf", std::move(all)}}, bat);
                            if (b.is_object() && b.contains("not")) refuse(at, why);  // a `not` kiln cannot complement
                            excl.push_back(std::move(b));
                        }
                    } catch (const Error&) {
                        refuse(at, why);
                    }
                    if (overlap(excl)) refuse(at, why);
                    merged = std::move(excl);
                    rewritten = true;
                }
            }
            // Without sibling keywords the branches are converted as written, so a
            // branch that is a $ref stays a rule reference (recursion through "#").
            const bool bare = only_annotations(rest) && !rewritten;
            std::vector<Expr> alts;
            for (size_t i = 0; i < merged.size(); ++i)
                alts.push_back(convert(bare ? branches[i] : merged[i], at + "/" + key + "/" + std::to_string(i)));
            return e_alt(std::move(alts));
        }

        unsigned types = s.contains("type") ? types_of(s["type"], at) : t_all;

        if (s.contains("enum") || s.contains("const")) return enum_values(s, types, at);

        std::vector<Expr> alts;
        if (types & t_null) alts.push_back(basics_.null());
        if (types & t_boolean) alts.push_back(basics_.boolean());
        if (types & t_number) alts.push_back(number(s, false, at));
        else if (types & t_integer) alts.push_back(number(s, true, at));
        if (types & t_string) alts.push_back(string(s, at));
        if (types & t_array) alts.push_back(array(s, at));
        if (types & t_object) alts.push_back(object(s, at));
        return e_alt(std::move(alts));
    }

    // A JSON value written as a literal, with the whitespace policy between tokens.
    Expr literal(const json& v) {
        if (v.is_object()) {
            std::vector<Expr> parts{e_lit("{"), basics_.ws()};
            bool first = true;
            for (auto it = v.begin(); it != v.end(); ++it) {
                if (!first) parts.insert(parts.end(), {e_lit(","), basics_.ws()});
                first = false;
                parts.insert(parts.end(), {e_lit(json(it.key()).dump()), basics_.ws(), e_lit(":"), basics_.ws(), literal(*it), basics_.ws()});
            }
            parts.push_back(e_lit("}"));
            return e_seq(std::move(parts));
        }
        if (v.is_array()) {
            std::vector<Expr> parts{e_lit("["), basics_.ws()};
            for (size_t i = 0; i < v.size(); ++i) {
                if (i) parts.insert(parts.end(), {e_lit(","), basics_.ws()});
                parts.insert(parts.end(), {literal(v[i]), basics_.ws()});
            }
            parts.push_back(e_lit("]"));
            return e_seq(std::move(parts));
        }
        return e_lit(v.dump(-1, ' ', false, json::error_handler_t::replace));
    }

    Expr enum_values(const json& s, unsigned types, const std::string& at) {
        json values = json::array();
        if (s.contains("const")) values.push_back(s["const"]);
        if (s.contains("enum")) {
            if (!s["enum"].is_array()) refuse(at, "enum must be an array");
            for (const json& v : s["enum"]) {
                if (s.contains("const") && v != s["const"]) continue;
                if (!s.contains("const")) values.push_back(v);
            }
        }
        // Other keywords still apply to the listed values: keep those the rest of
        // the schema accepts (checked with its own grammar).
        json rest = s;
        rest.erase("enum");
        rest.erase("const");
        rest.erase("type");
        std::optional<Grammar> check;
        if (!only_annotations(rest)) check = Grammar::from_json_schema(sub_document(rest), JsonSchemaOptions{true, 0});
        std::vector<Expr> alts;
        for (const json& v : values) {
            if (!(value_type(v) & types)) continue;
            if (check && validate(*check, v.dump(-1, ' ', false, json::error_handler_t::replace)).status != MatchStatus::Complete) continue;
            alts.push_back(literal(v));
        }
        return e_alt(std::move(alts));
    }

    // `rest` as a document of its own that keeps the root's definitions, so that
    // its references still resolve.
    std::string sub_document(const json& rest) {
        json doc = rest;
        if (root_.is_object()) {
            for (const char* k : {"$defs", "definitions"})
                if (root_.contains(k) && !doc.contains(k)) doc[k] = root_[k];
            if (rest.dump().find("\"$ref\":\"#/properties") != std::string::npos || rest.dump().find("\"$ref\":\"#\"") != std::string::npos)
                refuse(at_root_, "enum with keywords whose $ref points into the root schema");
        }
        return doc.dump();
    }

    static std::optional<double> number_of(const json& s, const char* key, const std::string& at) {
        if (!s.contains(key)) return std::nullopt;
        if (s[key].is_boolean()) return std::nullopt;  // draft 4 exclusive flags, read with the bound
        if (!s[key].is_number()) throw Error("JSON Schema " + at + ": '" + key + "' must be a number");
        return s[key].get<double>();
    }

    Expr number(const json& s, bool integer_only, const std::string& at) {
        std::optional<double> lo = number_of(s, "minimum", at), hi = number_of(s, "maximum", at);
        std::optional<double> xlo = number_of(s, "exclusiveMinimum", at), xhi = number_of(s, "exclusiveMaximum", at);
        bool lo_excl = false, hi_excl = false;
        // Draft 4: exclusiveMinimum / exclusiveMaximum are flags on the bound.
        if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean()) lo_excl = s["exclusiveMinimum"].get<bool>();
        if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean()) hi_excl = s["exclusiveMaximum"].get<bool>();
        if (xlo && (!lo || *xlo >= *lo)) {
            lo = xlo;
            lo_excl = true;
        }
        if (xhi && (!hi || *xhi <= *hi)) {
            hi = xhi;
            hi_excl = true;
        }
        if (!lo && !hi) return integer_only ? basics_.integer() : basics_.number();
        constexpr double k_limit = 9.0e15;  // integers exactly representable in a double
        for (auto [b, name] : {std::pair{lo, "minimum"}, std::pair{hi, "maximum"}})
            if (b && std::fabs(*b) > k_limit) refuse(at, std::string("'") + name + "' beyond 9e15 is not supported");
        if (integer_only) {
            std::optional<int64_t> l, h;
            if (lo) l = static_cast<int64_t>(lo_excl ? std::floor(*lo) + 1 : std::ceil(*lo));
            if (hi) h = static_cast<int64_t>(hi_excl ? std::ceil(*hi) - 1 : std::floor(*hi));
            if (l && h && *l > *h) return e_nothing();
            return basics_.integer_range(l, h);
        }
        for (auto [b, name] : {std::pair{lo, "minimum"}, std::pair{hi, "maximum"}})
            if (b && *b != std::floor(*b))
                refuse(at, std::string("'") + name + "' with a fractional bound on a number is not supported");
        std::optional<NumberBound> l, h;
        if (lo) l = NumberBound{static_cast<int64_t>(*lo), lo_excl};
        if (hi) h = NumberBound{static_cast<int64_t>(*hi), hi_excl};
        return basics_.number_range(l, h);
    }

    static std::optional<uint64_t> count_of(const json& s, const char* key, const std::string& at) {
        if (!s.contains(key)) return std::nullopt;
        const json& v = s[key];
        if (!v.is_number() || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()))
            throw Error("JSON Schema " + at + ": '" + key + "' must be a non-negative integer");
        return static_cast<uint64_t>(v.get<double>());
    }

    Expr string(const json& s, const std::string& at) {
        constexpr uint64_t k_max_length = 1000000;
        // Plain values, not optionals: GCC 12 warns of an uninitialised read through them.
        const std::optional<uint64_t> min_length = count_of(s, "minLength", at), max_length = count_of(s, "maxLength", at);
        const uint64_t lo = min_length.value_or(0), hi = max_length.value_or(0);
        const bool has_min = lo > 0, has_max = max_length.has_value();
        const bool has_pattern = s.contains("pattern"), has_format = s.contains("format");
        if (has_pattern || has_format) {
            if (has_min || has_max) refuse(at, std::string("minLength / maxLength together with '") + (has_pattern ? "pattern" : "format") + "' is not supported");
            if (has_pattern && has_format) refuse(at, "'pattern' together with 'format' is not supported");
        }
        Expr content;
        if (has_pattern) {
            if (!s["pattern"].is_string()) refuse(at, "'pattern' must be a string");
            try {
                content = regex_expr(s["pattern"].get<std::string>(), RegexMode::JsonString, ir_);
            } catch (const Error& e) {
                refuse(at, std::string("pattern: ") + e.what());
            }
        } else if (has_format) {
            if (!s["format"].is_string()) refuse(at, "'format' must be a string");
            std::optional<Expr> f = basics_.format_content(s["format"].get<std::string>());
            if (!f) refuse(at, "format '" + s["format"].get<std::string>() + "' is not supported");
            content = std::move(*f);
        } else {
            if (!has_min && !has_max) return basics_.string();
            if (lo > k_max_length || hi > k_max_length) refuse(at, "minLength / maxLength above 1000000 is not supported");
            content = e_repeat(basics_.string_char(), static_cast<uint32_t>(lo), has_max ? static_cast<uint32_t>(hi) : k_unbounded);
        }
        return e_seq({e_lit("\""), std::move(content), e_lit("\"")});
    }

    Expr array(const json& s, const std::string& at) {
        constexpr uint64_t k_max_items = 100000;
        if (s.contains("uniqueItems") && s["uniqueItems"] == json(true)) {
            const std::optional<uint64_t> mx = count_of(s, "maxItems", at);
            if (!mx || *mx > 1) refuse(at, "keyword 'uniqueItems' is not supported");
        }
        std::vector<json> prefix;
        json rest = json(true);
        if (s.contains("prefixItems")) {
            if (!s["prefixItems"].is_array()) refuse(at, "prefixItems must be an array");
            for (const json& p : s["prefixItems"]) prefix.push_back(p);
            if (s.contains("items")) rest = s["items"];
        } else if (s.contains("items") && s["items"].is_array()) {
            for (const json& p : s["items"]) prefix.push_back(p);
            if (s.contains("additionalItems")) rest = s["additionalItems"];
        } else if (s.contains("items")) {
            rest = s["items"];
        }
        const uint64_t min = count_of(s, "minItems", at).value_or(0);
        std::optional<uint64_t> max = count_of(s, "maxItems", at);
        if (min > k_max_items || (max && *max > k_max_items))
            refuse(at, "minItems / maxItems above 100000 is not supported");
        const bool rest_false = rest == json(false);
        Expr ws = basics_.ws();
        // Position j (0-based) of the prefix: items at j.. with j already written.
        const size_t k = prefix.size();
        std::vector<Expr> prefix_items;
        for (size_t j = 0; j < k; ++j) prefix_items.push_back(convert(prefix[j], at + "/prefixItems/" + std::to_string(j)));
        Expr rest_item = rest_false ? e_nothing() : convert(rest, at + "/items");
        auto sep = [&](size_t j) { return j == 0 ? e_empty() : e_seq({e_lit(","), ws}); };
        // After the prefix: between lo and hi more items of `rest`.
        const uint64_t lo = min > k ? min - k : 0;
        std::optional<uint64_t> hi;
        if (max) hi = *max > k ? *max - k : 0;
        Expr tail;
        if (rest_false || (hi && *hi == 0)) {
            tail = lo > 0 ? e_nothing() : e_empty();
        } else {
            Expr one = e_seq({rest_item, ws});
            Expr more = e_seq({e_lit(","), ws, one});
            if (k > 0) {
                tail = e_repeat(more, static_cast<uint32_t>(lo), hi ? static_cast<uint32_t>(*hi) : k_unbounded);
            } else {
                Expr after = e_repeat(more, static_cast<uint32_t>(lo > 0 ? lo - 1 : 0), hi ? static_cast<uint32_t>(*hi - 1) : k_unbounded);
                tail = lo > 0 ? e_seq({one, after}) : e_opt(e_seq({one, after}));
            }
        }
        // Prefix items from the last backwards: each optional once minItems is met.
        Expr body = std::move(tail);
        for (size_t j = k; j-- > 0;) {
            if (max && j >= *max) {
                body = e_empty();
                continue;
            }
            Expr item = e_seq({sep(j), prefix_items[j], ws, std::move(body)});
            body = j >= min ? e_opt(std::move(item)) : std::move(item);
        }
        return e_seq({e_lit("["), ws, std::move(body), e_lit("]")});
    }

    struct Property {
        std::string name;
        json schema;
        bool required;
    };

    // A key that is none of `names` (no escapes beyond those json_string_char
    // writes): a trie over the names, leaving it at the first differing character.
    Expr other_key(const std::vector<std::string>& names) {
        if (names.empty()) return basics_.string();
        std::vector<std::u32string> cps;
        for (const std::string& n : names) {
            std::u32string u;
            for (size_t i = 0; i < n.size();) {
                const auto c = static_cast<unsigned char>(n[i]);
                const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
                uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
                for (size_t k = 1; k < len && i + k < n.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(n[i + k]) & 0x3F);
                u += static_cast<char32_t>(cp);
                i += len;
            }
            cps.push_back(u);
        }
        std::sort(cps.begin(), cps.end());
        cps.erase(std::unique(cps.begin(), cps.end()), cps.end());
        // The rest of a key that has left every name: one rule, referenced last in
        // each trie node's alternative (a tail call), so a key that leaves the trie
        // at any node reaches the same parse stacks and the allowed-token walk
        // shares their states instead of building them again per node.
        const uint32_t free_rule = ir_.add_rule("key-free");
        ir_.define(free_rule, e_seq({e_star(basics_.string_char()), e_lit("\"")}));
        const Expr free_tail = e_ref(free_rule);
        std::map<std::vector<CpRange>, uint32_t, RangesLess> escape_rules;  // escapable codepoints -> rule
        // Node: the names sharing a prefix of length d, as an index range of cps.
        std::function<Expr(size_t, size_t, size_t)> node = [&](size_t b, size_t e, size_t d) -> Expr {
            std::vector<Expr> alts;
            bool is_name = false;
            std::vector<CpRange> used;
            size_t i = b;
            while (i < e) {
                if (cps[i].size() == d) {
                    is_name = true;
                    ++i;
                    continue;
                }
                const char32_t c = cps[i][d];
                size_t j = i;
                while (j < e && cps[j].size() > d && cps[j][d] == c) ++j;
                used.push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c)});
                alts.push_back(e_seq({json_string_char({{static_cast<uint32_t>(c), static_cast<uint32_t>(c)}}), node(i, j, d + 1)}));
                i = j;
            }
            if (!is_name) alts.push_back(e_lit("\""));
            const std::vector<CpRange> others = negate_ranges(used);
            if (!others.empty()) {
                // The escapes of `others` are the same at almost every node (names
                // rarely hold a quote, backslash, slash or control): one rule each.
                std::vector<CpRange> escapable;
                for (const CpRange& r : others)
                    for (const CpRange& x : std::initializer_list<CpRange>{{0, 0x1F}, {'"', '"'}, {'/', '/'}, {'\\', '\\'}})
                        if (std::max(r.lo, x.lo) <= std::min(r.hi, x.hi)) escapable.push_back({std::max(r.lo, x.lo), std::min(r.hi, x.hi)});
                auto [esc, fresh] = escape_rules.try_emplace(normalize_ranges(escapable), 0);
                if (fresh) {
                    esc->second = ir_.add_rule("key-escape");
                    ir_.define(esc->second, e_alt(json_string_escapes(others)));
                }
                const std::vector<CpRange> raw = json_string_raw(others);
                Expr ch = raw.empty() ? e_ref(esc->second) : e_alt({e_class(raw), e_ref(esc->second)});
                alts.push_back(e_seq({std::move(ch), free_tail}));
            }
            const uint32_t id = ir_.add_rule("key");
            ir_.define(id, e_alt(std::move(alts)));
            return e_ref(id);
        };
        return e_seq({e_lit("\""), node(0, cps.size(), 0)});
    }

    Expr object(const json& s, const std::string& at) {
        if (s.contains("patternProperties") && !s["patternProperties"].is_object()) refuse(at, "'patternProperties' must be an object");
        std::vector<Property> props;
        std::set<std::string> required;
        if (s.contains("required")) {
            if (!s["required"].is_array()) refuse(at, "'required' must be an array");
            for (const json& r : s["required"]) {
                if (!r.is_string()) refuse(at, "'required' entries must be strings");
                required.insert(r.get<std::string>());
            }
        }
        json additional = s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
        if (s.contains("properties")) {
            if (!s["properties"].is_object()) refuse(at, "'properties' must be an object");
            for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it)
                props.push_back({it.key(), *it, required.count(it.key()) > 0});
        }
        const bool has_patterns = s.contains("patternProperties") && !s["patternProperties"].empty();
        // Required keys without a property: valued by additionalProperties.
        for (const json& r : s.value("required", json::array())) {
            const std::string name = r.get<std::string>();
            if (std::none_of(props.begin(), props.end(), [&](const Property& p) { return p.name == name; })) {
                if (has_patterns) refuse(at, "patternProperties: required key '" + name + "' without a property is not supported");
                props.push_back({name, additional, true});
            }
        }
        size_t n_required = 0;
        for (const Property& p : props) n_required += p.required;
        const bool additional_allowed = additional != json(false);
        if (std::optional<uint64_t> mn = count_of(s, "minProperties", at); mn && *mn > n_required)
            refuse(at, "keyword 'minProperties' is not supported (beyond the required keys)");
        if (std::optional<uint64_t> mx = count_of(s, "maxProperties", at); mx && (additional_allowed || has_patterns || *mx < props.size()))
            refuse(at, "keyword 'maxProperties' is not supported");

        Expr ws = basics_.ws();
        std::vector<std::string> names;
        for (const Property& p : props) names.push_back(p.name);
        Expr tail_first, tail_more;  // additional members (before none / after some)
        if (has_patterns) {
            // Exact where no key can fall under two rules: one pattern, no other
            // additional key, and no declared name that the pattern matches. A key is
            // then a string the pattern matches (a search, as for `pattern`).
            const json& pp = s["patternProperties"];
            if (pp.size() > 1) refuse(at, "keyword 'patternProperties' with more than one pattern is not supported");
            if (additional_allowed)
                refuse(at, "keyword 'patternProperties' is not supported unless additionalProperties is false (other keys would need the pattern's complement)");
            const std::string pattern = pp.begin().key();
            const std::string pat_at = at + "/patternProperties/" + pointer_token(pattern);
            const json key_schema = json{{"type", "string"}, {"pattern", pattern}};
            Expr key = string(key_schema, pat_at);
            // kiln narrows \d \w \s to ASCII (rejecting more than Python's re): a
            // name is judged by kiln's reading only where the two agree.
            const Grammar key_grammar = Grammar::from_json_schema(key_schema.dump());
            for (const std::string& n : names) {
                if (std::any_of(n.begin(), n.end(), [](char c) { return c < 0x20 || c > 0x7e || c == '"' || c == '\\'; }))
                    refuse(at, "patternProperties: declared property '" + n + "' is not printable ASCII (cannot tell whether the pattern matches it)");
                if (validate(key_grammar, json(n).dump()).status == MatchStatus::Complete)
                    refuse(at, "patternProperties: declared property '" + n + "' matches the pattern (it would need both schemas)");
            }
            Expr value = convert(pp.begin().value(), pat_at);
            const uint32_t member = ir_.add_rule("pattern-member");
            ir_.define(member, e_seq({std::move(key), ws, e_lit(":"), ws, value, ws}));
            Expr more = e_star(e_seq({e_lit(","), ws, e_ref(member)}));
            tail_first = e_opt(e_seq({e_ref(member), more}));
            tail_more = e_star(e_seq({e_lit(","), ws, e_ref(member)}));
        } else if (additional_allowed) {
            Expr value = convert(additional, at + "/additionalProperties");
            const uint32_t member = ir_.add_rule("member");
            ir_.define(member, e_seq({other_key(names), ws, e_lit(":"), ws, value, ws}));
            Expr more = e_star(e_seq({e_lit(","), ws, e_ref(member)}));
            tail_first = e_opt(e_seq({e_ref(member), more}));
            tail_more = e_star(e_seq({e_lit(","), ws, e_ref(member)}));
        } else {
            tail_first = e_empty();
            tail_more = e_empty();
        }
        // rest[i][c]: members from property i on, c = whether one was written.
        std::vector<std::array<Expr, 2>> rest(props.size() + 1);
        rest[props.size()] = {tail_first, tail_more};
        for (size_t i = props.size(); i-- > 0;) {
            const Property& p = props[i];
            Expr value = convert(p.schema, at + "/properties/" + pointer_token(p.name));
            const uint32_t member = ir_.add_rule(rule_name(p.name) + "-kv");
            ir_.define(member, e_seq({e_lit(json(p.name).dump(-1, ' ', false, json::error_handler_t::replace)), ws, e_lit(":"), ws, value, ws}));
            for (int c = 0; c < 2; ++c) {
                Expr with = e_seq({c ? e_seq({e_lit(","), ws}) : e_empty(), e_ref(member), rest[i + 1][1]});
                Expr e = p.required ? std::move(with) : e_alt({std::move(with), rest[i + 1][c]});
                // Shared tails become rules so the grammar stays linear in the keys.
                const uint32_t id = ir_.add_rule(rule_name(p.name) + (c ? "-rest-c" : "-rest"));
                ir_.define(id, std::move(e));
                rest[i][c] = e_ref(id);
            }
        }
        return e_seq({e_lit("{"), ws, rest[0][0], e_lit("}")});
    }

    const json& root_;
    JsonSchemaOptions options_;
    GrammarIR& ir_;
    JsonBasics basics_;
    std::map<std::string, uint32_t> refs_;
    int depth_ = 0;
    bool legacy_ref_ = false;  // drafts 3 to 7: $ref replaces its siblings
    std::string at_root_ = "#";
};

}  // namespace

GrammarIR json_schema_grammar(std::string_view schema_json, const JsonSchemaOptions& options) {
    json schema;
    try {
        schema = json::parse(schema_json);
    } catch (const json::exception& e) {
        throw Error(std::string("JSON Schema: not valid JSON: ") + e.what());
    }
    // Copies and writes of nlohmann::json recurse over nesting: bound it before any.
    {
        std::vector<std::pair<const json*, int>> todo{{&schema, 0}};
        while (!todo.empty()) {
            auto [v, d] = todo.back();
            todo.pop_back();
            if (d > 512) throw Error("JSON Schema: nested deeper than 512 levels");
            if (v->is_structured())
                for (const json& child : *v) todo.push_back({&child, d + 1});
        }
    }
    GrammarIR ir;
    const uint32_t root = ir.add_rule("root");
    ir.root = root;
    Converter c(schema, options, ir);
    Expr body = c.convert(schema, "#");
    ir.define(root, e_seq({std::move(body)}));
    return ir;
}

GrammarIR any_json_object_grammar(const JsonSchemaOptions& options) {
    GrammarIR ir;
    const uint32_t root = ir.add_rule("root");
    ir.root = root;
    JsonBasics basics(ir, options);
    ir.define(root, basics.object());
    return ir;
}

}  // namespace kiln::constrain
