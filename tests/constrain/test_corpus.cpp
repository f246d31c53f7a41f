// The JSON Schema corpus (MaskBench, ../shared/testdata/jsonschema): for every
// schema kiln compiles, every valid instance must be accepted and every invalid
// one rejected, serialized compactly and indented. By default a deterministic
// sample runs (every 2nd schema, ~20 s); KILN_CONSTRAIN_CORPUS_FULL=1 runs all.
//
// Object keys: kiln's grammars fix the key order (properties in schema order,
// then the other keys), so each instance is tried in its own order and in the
// schema's order (for a root anyOf / oneOf, the order of each branch); a valid
// instance must be accepted in one of them, an invalid one rejected in all.
#include <gtest/gtest.h>
#include <lzma.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/constraint.h"
#include "kiln/error.h"
#include "support/test_support.h"

namespace {

using json = nlohmann::ordered_json;

std::string corpus_path() { return std::string(KILN_SOURCE_DIR) + "/../shared/testdata/jsonschema/maskbench.jsonl.xz"; }

bool xz_decompress(const std::string& path, std::string& out, std::string& why) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        why = "cannot open " + path;
        return false;
    }
    std::string in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    lzma_stream s = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&s, UINT64_MAX, 0) != LZMA_OK) {
        why = "lzma_stream_decoder failed";
        return false;
    }
    s.next_in = reinterpret_cast<const uint8_t*>(in.data());
    s.avail_in = in.size();
    std::vector<uint8_t> buf(1 << 20);
    for (;;) {
        s.next_out = buf.data();
        s.avail_out = buf.size();
        const lzma_ret r = lzma_code(&s, LZMA_FINISH);
        out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - s.avail_out);
        if (r == LZMA_STREAM_END) break;
        if (r != LZMA_OK) {
            lzma_end(&s);
            why = "xz data error in " + path;
            return false;
        }
    }
    lzma_end(&s);
    return true;
}

// ---- the schema's key order, for reordering instances ----

class KeyOrder {
public:
    // root_branch >= 0: at the top level, take that anyOf / oneOf branch rather
    // than the best-fitting one (branches with the same keys can order nested
    // objects differently).
    KeyOrder(const json& root, int root_branch) : root_(root), root_branch_(root_branch) {}

    size_t n_root_branches() {
        std::vector<json> base, branches;
        split_parts(root_, 0, base, branches);
        return branches.size();
    }

    json reorder(const json& v, const json& schema, int depth = 0) {
        if (depth > 40) return v;
        if (v.is_object()) {
            const std::vector<json> ps = parts_for(v, schema, depth);
            std::vector<std::string> order;
            for (const json& p : ps)
                if (p.contains("properties") && p["properties"].is_object())
                    for (auto it = p["properties"].begin(); it != p["properties"].end(); ++it) order.push_back(it.key());
            for (const json& p : ps)
                if (p.contains("required") && p["required"].is_array())
                    for (const json& k : p["required"])
                        if (k.is_string()) order.push_back(k.get<std::string>());
            json out = json::object();
            for (const std::string& k : order)
                if (v.contains(k) && !out.contains(k)) out[k] = reorder(v[k], property_schema(ps, k), depth + 1);
            for (auto it = v.begin(); it != v.end(); ++it)
                if (!out.contains(it.key())) out[it.key()] = reorder(*it, property_schema(ps, it.key()), depth + 1);
            return out;
        }
        if (v.is_array()) {
            const std::vector<json> ps = parts_for(v, schema, depth);
            json out = json::array();
            for (size_t i = 0; i < v.size(); ++i) out.push_back(reorder(v[i], item_schema(ps, i), depth + 1));
            return out;
        }
        return v;
    }

private:
    json resolve(const json& s, int depth = 0) {
        if (depth > 20 || !s.is_object() || !s.contains("$ref") || !s["$ref"].is_string()) return s;
        std::string r = s["$ref"].get<std::string>();
        if (r == "#") return resolve(root_, depth + 1);
        if (r.rfind("#/", 0) != 0) return s;
        try {
            std::string p = r.substr(1);
            std::string decoded;
            for (size_t i = 0; i < p.size(); ++i) {
                if (p[i] == '%' && i + 2 < p.size()) {
                    decoded += static_cast<char>(std::stoi(p.substr(i + 1, 2), nullptr, 16));
                    i += 2;
                } else {
                    decoded += p[i];
                }
            }
            return resolve(root_.at(json::json_pointer(decoded)), depth + 1);
        } catch (...) {
            return s;
        }
    }

    // The schemas whose keywords apply to `v`, in the order the converter lays
    // out keys: the schema, its $ref and allOf parts (recursively), then the
    // anyOf / oneOf branch that fits `v` best (most of its keys declared).
    std::vector<json> parts_for(const json& v, const json& s, int depth) {
        std::vector<json> base, branches;
        split_parts(s, depth, base, branches);
        if (!branches.empty() && depth == 0 && root_branch_ >= 0 && static_cast<size_t>(root_branch_) < branches.size()) {
            for (json& p : parts_for(v, branches[static_cast<size_t>(root_branch_)], depth + 1)) base.push_back(std::move(p));
        } else if (!branches.empty() && depth < 40) {
            size_t best = 0;
            long best_score = -1;
            for (size_t i = 0; i < branches.size(); ++i) {
                std::vector<json> b, more;
                split_parts(branches[i], depth + 1, b, more);
                long score = 0;
                for (const json& p : b)
                    if (v.is_object() && p.contains("properties") && p["properties"].is_object())
                        for (auto it = v.begin(); it != v.end(); ++it) score += p["properties"].contains(it.key());
                if (score > best_score) {
                    best_score = score;
                    best = i;
                }
            }
            for (json& p : parts_for(v, branches[best], depth + 1)) base.push_back(std::move(p));
        }
        return base;
    }

    void split_parts(const json& s, int depth, std::vector<json>& base, std::vector<json>& branches) {
        if (depth > 20) return;
        const json r = resolve(s);
        if (!r.is_object()) return;
        base.push_back(r);
        if (r.contains("allOf") && r["allOf"].is_array())
            for (const json& b : r["allOf"]) split_parts(b, depth + 1, base, branches);
        for (const char* k : {"anyOf", "oneOf"})
            if (r.contains(k) && r[k].is_array())
                for (const json& b : r[k]) branches.push_back(b);
    }

    json property_schema(const std::vector<json>& ps, const std::string& key) {
        for (const json& p : ps)
            if (p.contains("properties") && p["properties"].is_object() && p["properties"].contains(key)) return p["properties"][key];
        for (const json& p : ps)
            if (p.contains("additionalProperties") && p["additionalProperties"].is_object()) return p["additionalProperties"];
        return json(true);
    }

    json item_schema(const std::vector<json>& ps, size_t i) {
        for (const json& p : ps) {
            if (p.contains("prefixItems") && p["prefixItems"].is_array() && i < p["prefixItems"].size()) return p["prefixItems"][i];
            if (p.contains("items") && p["items"].is_array() && i < p["items"].size()) return p["items"][i];
            if (p.contains("items") && p["items"].is_object()) return p["items"];
        }
        return json(true);
    }

    const json& root_;
    int root_branch_ = -1;
};

std::string refusal_construct(const std::string& message) {
    // "JSON Schema <pointer>: <what>": the construct without the location.
    std::string what = message;
    if (what.rfind("JSON Schema ", 0) == 0) {
        const size_t colon = what.find(": ");
        if (colon != std::string::npos) what = what.substr(colon + 2);
    }
    if (what.rfind("pattern: ", 0) == 0) {
        const size_t off = what.find(": ", 9 + 10);
        const size_t at = what.find(" at offset ");
        if (at != std::string::npos) {
            const size_t colon = what.find(": ", at);
            return "pattern: " + (colon == std::string::npos ? what : what.substr(colon + 2));
        }
        (void)off;
    }
    if (what.rfind("$ref '", 0) == 0) return "$ref: " + what.substr(what.find("' ") + 2);
    if (what.rfind("format '", 0) == 0) return what;
    if (what.rfind("oneOf: branches", 0) == 0) return "oneOf: branches may overlap";
    if (what.rfind("allOf: '", 0) == 0) return what;
    return what;
}

struct Counts {
    size_t schemas = 0, with_tests = 0, compiled = 0, refused = 0, tested_instances = 0;
    size_t false_accepts = 0, false_rejects = 0, schemas_false_accept = 0, schemas_false_reject = 0;
    std::map<std::string, size_t> refusals;
    std::vector<std::string> failures;
};

TEST(JsonSchemaCorpus, ValidAcceptedInvalidRejected) {
    const std::string path = corpus_path();
    std::ifstream probe(path);
    if (!probe) KILN_SKIP_MISSING("JSON Schema corpus not found: " + path + " (../shared/testdata beside the repository)");
    std::string text, why;
    ASSERT_TRUE(xz_decompress(path, text, why)) << why;

    const char* full_env = std::getenv("KILN_CONSTRAIN_CORPUS_FULL");
    const bool full = full_env && std::string(full_env) == "1";
    const size_t stride = full ? 1 : 2;
    const auto t0 = std::chrono::steady_clock::now();

    Counts c;
    std::vector<std::pair<double, std::string>> slowest;
    std::vector<double> compile_ms;
    std::istringstream lines(text);
    std::string line;
    size_t index = 0;
    kiln::JsonSchemaOptions check_options;
    check_options.any_whitespace = true;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        if (index++ % stride != 0) continue;
        const json rec = json::parse(line);
        ++c.schemas;
        const json& tests = rec["tests"];
        if (!tests.empty()) ++c.with_tests;
        std::optional<kiln::Grammar> g;
        const auto ts = std::chrono::steady_clock::now();
        struct Timer {
            std::chrono::steady_clock::time_point t;
            std::string id;
            std::vector<std::pair<double, std::string>>* out;
            ~Timer() { out->push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), id}); }
        } timer{ts, rec["id"].get<std::string>(), &slowest};
        try {
            const auto tc = std::chrono::steady_clock::now();
            g = kiln::Grammar::from_json_schema(rec["schema"].dump(), check_options);
            compile_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tc).count());
        } catch (const kiln::Error& e) {
            ++c.refused;
            ++c.refusals[refusal_construct(e.what())];
            continue;
        }
        ++c.compiled;
        KeyOrder order(rec["schema"], -1);
        std::vector<KeyOrder> per_branch;
        for (size_t b = 0; b < std::min<size_t>(order.n_root_branches(), 8); ++b) per_branch.emplace_back(rec["schema"], static_cast<int>(b));
        bool fa = false, fr = false;
        for (const json& t : tests) {
            const bool valid = t["valid"].get<bool>();
            std::vector<json> forms{t["data"]};
            for (KeyOrder* o : {&order}) {
                json reordered = o->reorder(t["data"], rec["schema"]);
                if (reordered.dump() != t["data"].dump()) forms.push_back(reordered);
            }
            for (KeyOrder& o : per_branch) {
                json reordered = o.reorder(t["data"], rec["schema"]);
                if (std::none_of(forms.begin(), forms.end(), [&](const json& f) { return f.dump() == reordered.dump(); })) forms.push_back(reordered);
            }
            for (int indent : {-1, 2}) {
                ++c.tested_instances;
                bool accepted = false;
                std::string shown;
                for (const json& f : forms) {
                    shown = f.dump(indent, ' ', false, json::error_handler_t::replace);
                    if (kiln::validate(*g, shown).status == kiln::MatchStatus::Complete) {
                        accepted = true;
                        break;
                    }
                }
                if (valid && !accepted) {
                    ++c.false_rejects;
                    fr = true;
                    if (c.failures.size() < 40)
                        c.failures.push_back("false reject " + rec["id"].get<std::string>() + ": " + shown.substr(0, 300));
                } else if (!valid && accepted) {
                    ++c.false_accepts;
                    fa = true;
                    if (c.failures.size() < 40)
                        c.failures.push_back("FALSE ACCEPT " + rec["id"].get<std::string>() + ": " + shown.substr(0, 300));
                }
            }
        }
        c.schemas_false_accept += fa;
        c.schemas_false_reject += fr;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::printf("JSON Schema corpus (%s, every %zu-th of the file): %zu schemas (%zu with tests), %.1f s\n",
                full ? "full" : "sample", stride, c.schemas, c.with_tests, secs);
    std::printf("  compiled %zu (%.1f%%), refused %zu\n", c.compiled, 100.0 * c.compiled / std::max<size_t>(1, c.schemas), c.refused);
    std::printf("  instances checked %zu: false accepts %zu (in %zu schemas), false rejects %zu (in %zu schemas)\n",
                c.tested_instances, c.false_accepts, c.schemas_false_accept, c.false_rejects, c.schemas_false_reject);
    std::vector<std::pair<size_t, std::string>> by_count;
    for (const auto& [what, n] : c.refusals) by_count.push_back({n, what});
    std::sort(by_count.rbegin(), by_count.rend());
    std::printf("  refusals by construct:\n");
    for (size_t i = 0; i < by_count.size(); ++i) std::printf("    %5zu  %s\n", by_count[i].first, by_count[i].second.substr(0, 160).c_str());
    std::sort(compile_ms.begin(), compile_ms.end());
    if (!compile_ms.empty()) {
        auto pct = [&](double p) { return compile_ms[std::min(compile_ms.size() - 1, static_cast<size_t>(p * static_cast<double>(compile_ms.size())))]; };
        std::printf("  compile time of the compiled schemas: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.1f ms\n", pct(0.5), pct(0.95), pct(0.99),
                    compile_ms.back());
    }
    std::sort(slowest.rbegin(), slowest.rend());
    std::printf("  slowest schemas (compile + checks):");
    for (size_t i = 0; i < slowest.size() && i < 8; ++i) std::printf(" %s %.2fs;", slowest[i].second.c_str(), slowest[i].first);
    std::printf("\n");
    for (const std::string& f : c.failures) std::printf("  %s\n", f.c_str());
    EXPECT_EQ(c.false_accepts, 0u);
    EXPECT_EQ(c.false_rejects, 0u);
}

}  // namespace
