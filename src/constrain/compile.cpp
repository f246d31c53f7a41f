// Lowering the grammar IR to the byte program: literals become runs of single
// bytes, codepoint classes become alternatives of UTF-8 byte-range sequences,
// repetition becomes right-recursive helper rules (whose recursive reference is a
// tail call, so the matcher's stacks do not grow with the repetition count).
#include <algorithm>
#include <map>

#include "constrain/program.h"
#include "kiln/error.h"

namespace kiln::constrain {

namespace {

using Alt = std::vector<uint32_t>;  // elements without the end marker

// Splits a codepoint range of one UTF-8 length into ranges whose encodings are
// products of byte ranges (the method of RE2 and Rust's regex-syntax).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
    static const uint32_t k_len_max[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    for (int n = 0; n < 3; ++n) {
        if (lo <= k_len_max[n] && hi > k_len_max[n]) {
            utf8_sequences(lo, k_len_max[n], out);
            utf8_sequences(k_len_max[n] + 1, hi, out);
            return;
        }
    }
    if (hi < 0x80) {
        out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
        return;
    }
    const int len = hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
    for (int i = 1; i < len; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_sequences(lo, lo | m, out);
                utf8_sequences((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                utf8_sequences(lo, (hi & ~m) - 1, out);
                utf8_sequences(hi & ~m, hi, out);
                return;
            }
        }
    }
    std::string a, b;
    append_utf8(a, lo);
    append_utf8(b, hi);
    std::vector<std::pair<uint8_t, uint8_t>> seq;
    for (size_t i = 0; i < a.size(); ++i) seq.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
    out.push_back(std::move(seq));
}

class Lowering {
public:
    explicit Lowering(CompiledGrammar& g) : g_(g) {}

    void run() {
        const size_t n_ir = g_.ir.rules.size();
        for (size_t i = 0; i < n_ir; ++i) {
            if (!g_.ir.rules[i].defined)
                throw Error("grammar: rule '" + g_.ir.rules[i].name + "' is referenced but not defined");
            names_.push_back(g_.ir.rules[i].name);
            alts_.emplace_back();
        }
        for (size_t i = 0; i < n_ir; ++i) {
            current_ = static_cast<uint32_t>(i);
            alts_[i] = lower_alts(g_.ir.rules[i].body);
        }
        flatten();
    }

    std::vector<std::vector<Alt>> alts_;  // per program rule
    std::vector<std::string> names_;

private:
    uint32_t set_elem(const ByteSet& s) {
        auto it = set_ids_.find(s.bits);
        if (it != set_ids_.end()) return make_elem(k_kind_set, it->second);
        const auto id = static_cast<uint32_t>(g_.sets.size());
        g_.sets.push_back(s);
        set_ids_.emplace(s.bits, id);
        return make_elem(k_kind_set, id);
    }
    uint32_t byte_elem(uint8_t b) {
        ByteSet s;
        s.set(b);
        return set_elem(s);
    }

    uint32_t new_rule(const std::string& suffix, std::vector<Alt> alts) {
        const auto id = static_cast<uint32_t>(alts_.size());
        names_.push_back(names_[current_] + "-" + suffix);
        alts_.push_back(std::move(alts));
        return id;
    }

    std::vector<Alt> lower_alts(const Expr& e) {
        std::vector<Alt> out;
        if (e.kind == Expr::Kind::Alt) {
            for (const Expr& it : e.items) {
                Alt a;
                lower_item(it, a);
                out.push_back(std::move(a));
            }
        } else {
            Alt a;
            lower_item(e, a);
            out.push_back(std::move(a));
        }
        return out;
    }

    uint32_t class_rule(const std::vector<CpRange>& ranges) {
        auto it = class_rules_.find(ranges);
        if (it != class_rules_.end()) return it->second;
        std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
        for (const CpRange& r : ranges) utf8_sequences(r.lo, r.hi, seqs);
        // One alternative per distinct tail: byte ranges of the first byte with the
        // same continuation are merged, so the stacks after a first byte stay few.
        std::map<std::vector<std::pair<uint8_t, uint8_t>>, ByteSet> by_tail;
        std::vector<std::vector<std::pair<uint8_t, uint8_t>>> order;
        for (const auto& s : seqs) {
            std::vector<std::pair<uint8_t, uint8_t>> tail(s.begin() + 1, s.end());
            auto [pos, fresh] = by_tail.try_emplace(tail);
            if (fresh) order.push_back(tail);
            pos->second.set_range(s[0].first, s[0].second);
        }
        std::vector<Alt> alts;
        for (const auto& tail : order) {
            Alt a{set_elem(by_tail[tail])};
            for (auto [lo, hi] : tail) {
                ByteSet s;
                s.set_range(lo, hi);
                a.push_back(set_elem(s));
            }
            alts.push_back(std::move(a));
        }
        const uint32_t id = new_rule("char", std::move(alts));
        class_rules_.emplace(ranges, id);
        return id;
    }

    // The element standing for `e` once: itself if it lowers to one element,
    // else a helper rule.
    uint32_t single(const Expr& e, const char* suffix) {
        if (e.kind == Expr::Kind::Alt) return make_elem(k_kind_ref, new_rule(suffix, lower_alts(e)));
        Alt a;
        lower_item(e, a);
        if (a.size() == 1) return a[0];
        return make_elem(k_kind_ref, new_rule(suffix, {std::move(a)}));
    }

    void lower_item(const Expr& e, Alt& out) {
        switch (e.kind) {
            case Expr::Kind::Seq:
                for (const Expr& it : e.items) lower_item(it, out);
                return;
            case Expr::Kind::Alt:
                out.push_back(make_elem(k_kind_ref, new_rule("alt", lower_alts(e))));
                return;
            case Expr::Kind::Literal:
                for (unsigned char c : e.text) out.push_back(byte_elem(c));
                return;
            case Expr::Kind::Bytes:
                out.push_back(set_elem(e.bytes));
                return;
            case Expr::Kind::Class: {
                if (e.ranges.back().hi < 0x80) {
                    ByteSet s;
                    for (const CpRange& r : e.ranges)
                        s.set_range(static_cast<uint8_t>(r.lo), static_cast<uint8_t>(r.hi));
                    out.push_back(set_elem(s));
                } else {
                    out.push_back(make_elem(k_kind_ref, class_rule(e.ranges)));
                }
                return;
            }
            case Expr::Kind::Ref:
                out.push_back(make_elem(k_kind_ref, e.rule));
                return;
            case Expr::Kind::Repeat: {
                const uint32_t x = single(e.items[0], "item");
                exactly(x, e.min, out);
                if (e.max == k_unbounded) {
                    out.push_back(make_elem(k_kind_ref, star_rule(x)));
                } else if (e.max > e.min) {
                    out.push_back(make_elem(k_kind_ref, at_most(x, e.max - e.min)));
                }
                return;
            }
        }
    }

    // Counts above this are built from blocks of about sqrt(n) items, so that a
    // maxLength of 100000 is a few hundred rules rather than 100000.
    static constexpr uint32_t k_block_threshold = 64;

    static uint32_t block_size(uint32_t n) {
        uint32_t k = 1;
        while (k * k < n) ++k;
        return k;
    }

    // k copies of x as one rule.
    uint32_t block_rule(uint32_t x, uint32_t k) {
        auto key = std::pair{x, k};
        auto it = blocks_.find(key);
        if (it != blocks_.end()) return it->second;
        const uint32_t id = new_rule("block", {Alt(k, x)});
        blocks_.emplace(key, id);
        return id;
    }

    // x exactly n times.
    void exactly(uint32_t x, uint32_t n, Alt& out) {
        if (n <= k_block_threshold) {
            for (uint32_t i = 0; i < n; ++i) out.push_back(x);
            return;
        }
        const uint32_t k = block_size(n);
        const uint32_t b = make_elem(k_kind_ref, block_rule(x, k));
        for (uint32_t i = 0; i < n / k; ++i) out.push_back(b);
        for (uint32_t i = 0; i < n % k; ++i) out.push_back(x);
    }

    // x between 0 and n times. Large n: with n = a*k + r, lengths below a*k are
    // (up to a-1 blocks of k) then up to k-1 items; the rest are a blocks then up
    // to r items. The two sets of lengths are disjoint and cover 0..n.
    uint32_t at_most(uint32_t x, uint32_t n) {
        if (n <= k_block_threshold) return optional_chain(x, n);
        auto key = std::pair{x, n};
        auto it = at_most_.find(key);
        if (it != at_most_.end()) return it->second;
        const uint32_t k = block_size(n);
        const uint32_t a = n / k, r = n % k;
        const uint32_t block = make_elem(k_kind_ref, block_rule(x, k));
        Alt low, high;
        if (a > 1) low.push_back(make_elem(k_kind_ref, at_most(block, a - 1)));
        low.push_back(make_elem(k_kind_ref, at_most(x, k - 1)));
        exactly(block, a, high);
        if (r > 0) high.push_back(make_elem(k_kind_ref, at_most(x, r)));
        const uint32_t id = new_rule("upto", {std::move(low), std::move(high)});
        at_most_.emplace(key, id);
        return id;
    }

    // S ::= x S | ε
    uint32_t star_rule(uint32_t x) {
        auto it = star_rules_.find(x);
        if (it != star_rules_.end()) return it->second;
        const uint32_t id = new_rule("star", {});
        alts_[id] = {Alt{x, make_elem(k_kind_ref, id)}, Alt{}};
        star_rules_.emplace(x, id);
        return id;
    }

    // O_k ::= x O_{k-1} | ε, O_1 ::= x | ε: at most k more x.
    uint32_t optional_chain(uint32_t x, uint32_t k) {
        std::vector<uint32_t>& chain = chains_[x];
        while (chain.size() < k) {
            Alt a{x};
            if (!chain.empty()) a.push_back(make_elem(k_kind_ref, chain.back()));
            chain.push_back(new_rule("opt", {std::move(a), Alt{}}));
        }
        return chain[k - 1];
    }

    void flatten() {
        g_.rule_alt_begin.clear();
        for (const auto& rule : alts_) {
            g_.rule_alt_begin.push_back(static_cast<uint32_t>(g_.alt_starts.size()));
            for (const Alt& a : rule) {
                g_.alt_starts.push_back(static_cast<uint32_t>(g_.elems.size()));
                g_.elems.insert(g_.elems.end(), a.begin(), a.end());
                g_.elems.push_back(k_elem_end);
            }
        }
        g_.rule_alt_begin.push_back(static_cast<uint32_t>(g_.alt_starts.size()));
        g_.rule_names = names_;
    }

    CompiledGrammar& g_;
    uint32_t current_ = 0;
    std::map<std::array<uint64_t, 4>, uint32_t> set_ids_;
    std::map<std::vector<CpRange>, uint32_t, bool (*)(const std::vector<CpRange>&, const std::vector<CpRange>&)> class_rules_{
        [](const std::vector<CpRange>& a, const std::vector<CpRange>& b) {
            return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](const CpRange& x, const CpRange& y) {
                return x.lo != y.lo ? x.lo < y.lo : x.hi < y.hi;
            });
        }};
    std::map<uint32_t, uint32_t> star_rules_;
    std::map<uint32_t, std::vector<uint32_t>> chains_;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> blocks_, at_most_;
};

// Left recursion makes the pushdown closure grow stacks without consuming input.
// Edges A -> B where B can start A's expansion (all elements before it nullable);
// a cycle through an edge that is not a tail call is refused. A cycle of tail
// calls only (x* with a nullable x) is fine: the closure revisits the same stack.
void check_left_recursion(const CompiledGrammar& g) {
    const size_t n = g.rule_alt_begin.size() - 1;
    std::vector<char> nullable(n, 0);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            if (nullable[r]) continue;
            for (uint32_t a = g.rule_alt_begin[r]; a < g.rule_alt_begin[r + 1] && !nullable[r]; ++a) {
                bool all = true;
                for (uint32_t p = g.alt_starts[a]; g.elems[p] != k_elem_end; ++p) {
                    const uint32_t e = g.elems[p];
                    if (elem_kind(e) != k_kind_ref || !nullable[elem_index(e)]) {
                        all = false;
                        break;
                    }
                }
                if (all) nullable[r] = changed = true;
            }
        }
    }
    struct Edge {
        uint32_t to;
        bool tail;
    };
    std::vector<std::vector<Edge>> edges(n);
    for (size_t r = 0; r < n; ++r) {
        for (uint32_t a = g.rule_alt_begin[r]; a < g.rule_alt_begin[r + 1]; ++a) {
            for (uint32_t p = g.alt_starts[a]; g.elems[p] != k_elem_end; ++p) {
                const uint32_t e = g.elems[p];
                if (elem_kind(e) != k_kind_ref) break;
                edges[r].push_back({elem_index(e), g.elems[p + 1] == k_elem_end});
                if (!nullable[elem_index(e)]) break;
            }
        }
    }
    // Tarjan's strongly connected components, iteratively (grammars from JSON
    // Schemas can have thousands of rules).
    std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
    std::vector<char> on_stack(n, 0);
    std::vector<uint32_t> stack;
    int counter = 0, n_comp = 0;
    struct Frame {
        uint32_t v;
        size_t next;
    };
    for (uint32_t s = 0; s < n; ++s) {
        if (index[s] >= 0) continue;
        std::vector<Frame> work{{s, 0}};
        index[s] = low[s] = counter++;
        stack.push_back(s);
        on_stack[s] = 1;
        while (!work.empty()) {
            Frame& f = work.back();
            if (f.next < edges[f.v].size()) {
                const uint32_t w = edges[f.v][f.next++].to;
                if (index[w] < 0) {
                    index[w] = low[w] = counter++;
                    stack.push_back(w);
                    on_stack[w] = 1;
                    work.push_back({w, 0});
                } else if (on_stack[w]) {
                    low[f.v] = std::min(low[f.v], index[w]);
                }
                continue;
            }
            const uint32_t v = f.v;
            work.pop_back();
            if (!work.empty()) low[work.back().v] = std::min(low[work.back().v], low[v]);
            if (low[v] == index[v]) {
                for (;;) {
                    const uint32_t w = stack.back();
                    stack.pop_back();
                    on_stack[w] = 0;
                    comp[w] = n_comp;
                    if (w == v) break;
                }
                ++n_comp;
            }
        }
    }
    for (size_t r = 0; r < n; ++r)
        for (const Edge& e : edges[r])
            if (!e.tail && comp[e.to] == comp[r])
                throw Error("grammar: rule '" + g.rule_names[r] + "' is left-recursive (through '" +
                            g.rule_names[e.to] + "'); the matcher needs each recursion to consume a byte first");
}

// A grammar whose root cannot derive any text (a JSON Schema that no value
// satisfies: a required key that additionalProperties: false forbids, `false`,
// disjoint allOf parts) would leave generation with no token to choose; it is an
// error here instead. Productive rules by fixpoint: some alternative whose every
// element is a non-empty byte set or a productive rule.
void check_productive(const CompiledGrammar& g) {
    const size_t n = g.rule_alt_begin.size() - 1;
    std::vector<char> productive(n, 0);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            if (productive[r]) continue;
            for (uint32_t a = g.rule_alt_begin[r]; a < g.rule_alt_begin[r + 1] && !productive[r]; ++a) {
                bool all = true;
                for (uint32_t p = g.alt_starts[a]; all && g.elems[p] != k_elem_end; ++p) {
                    const uint32_t e = g.elems[p];
                    all = elem_kind(e) == k_kind_ref ? productive[elem_index(e)] != 0 : !g.sets[elem_index(e)].empty();
                }
                if (all) productive[r] = changed = true;
            }
        }
    }
    if (!productive[g.root])
        throw Error("grammar: rule '" + g.rule_names[g.root] + "' matches no text at all (for a JSON Schema: no value satisfies it)");
}

}  // namespace

CompiledGrammar compile_grammar(GrammarIR ir) {
    CompiledGrammar g;
    g.ir = std::move(ir);
    if (g.ir.rules.empty()) throw Error("grammar: no rules");
    Lowering low(g);
    low.run();
    g.root = g.ir.root;
    check_left_recursion(g);
    check_productive(g);
    return g;
}

}  // namespace kiln::constrain
