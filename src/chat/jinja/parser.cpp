// Recursive-descent parser following jinja2's grammar and precedence:
//   condexpr > or > and > not > compare > + - > ~ > * / // % > ** > unary - +
//   > primary with postfix (. [] ()) and then filters (|) and tests (is).
// Nesting is bounded (k_max_depth) so hostile input cannot exhaust the stack,
// neither here nor later when the tree is evaluated or destroyed.
#include <cstring>

#include "chat/jinja/ast.h"
#include "chat/jinja/error.h"
#include "chat/jinja/lexer.h"

namespace kiln::jinja {

uint32_t Program::intern(const std::string& name) {
    auto it = symbol_ids.find(name);
    if (it != symbol_ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(symbols.size());
    symbols.push_back(name);
    symbol_ids.emplace(name, id);
    globals.push_back(find_global(name));
    undefined_names.push_back(undefined_literal("'" + name + "' is undefined"));
    return id;
}

Value Program::undefined_literal(std::string hint) {
    auto obj = std::make_unique<StrObj>(std::move(hint));
    obj->is_ascii();
    obj->length();
    obj->refs = HeapObject::k_immortal;
    StrObj* raw = obj.get();
    literals.push_back(std::move(obj));
    return Value::undefined_from(raw);
}

Value Program::literal(std::string s) {
    auto obj = std::make_unique<StrObj>(std::move(s));
    // Fill the lazy caches now: threads rendering the template only read them.
    obj->is_ascii();
    obj->length();
    obj->refs = HeapObject::k_immortal;
    StrObj* raw = obj.get();
    literals.push_back(std::move(obj));
    return Value::from_obj(raw);
}

namespace {

constexpr int k_max_depth = 256;

class Parser {
public:
    Parser(Program& prog, std::vector<Token> tokens) : prog_(prog), toks_(std::move(tokens)) {}

    Body parse_template() {
        Body body = subparse({});
        if (cur().type != Tok::Eof) fail_at(cur(), "unexpected " + describe(cur()));
        return body;
    }

private:
    Program& prog_;
    std::vector<Token> toks_;
    size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
    std::vector<MacroDef*> macros_;  // enclosing macro definitions (for caller/varargs/kwargs)

    struct Depth {
        Parser& p;
        int n;
        Depth(Parser& parser, uint32_t pos, int count = 1) : p(parser), n(count) {
            p.depth_ += n;
            if (p.depth_ > k_max_depth) p.fail_pos(pos, "template nested too deeply (more than " + std::to_string(k_max_depth) + " levels)");
        }
        void add(uint32_t pos) {
            ++n;
            if (++p.depth_ > k_max_depth) p.fail_pos(pos, "template nested too deeply (more than " + std::to_string(k_max_depth) + " levels)");
        }
        ~Depth() { p.depth_ -= n; }
    };

    const Token& cur() const { return toks_[i_]; }
    const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
    const Token& next() {
        const Token& t = toks_[i_];
        if (i_ + 1 < toks_.size()) ++i_;
        return t;
    }

    [[noreturn]] void fail_pos(uint32_t offset, const std::string& msg) {
        uint32_t line, col;
        offset_to_line_col(prog_.source, offset, line, col);
        throw TemplateError(msg, line, col);
    }
    [[noreturn]] void fail_at(const Token& t, const std::string& msg) { fail_pos(t.offset, msg); }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case Tok::Name: return "'" + t.text + "'";
            case Tok::String: return "string";
            case Tok::Data: return "template data";
            default: return std::string(token_name(t.type));
        }
    }

    bool is_name(const Token& t, std::string_view name) const { return t.type == Tok::Name && t.text == name; }
    bool skip_if(Tok type) {
        if (cur().type != type) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(cur(), name)) return false;
        next();
        return true;
    }
    const Token& expect(Tok type) {
        if (cur().type != type) {
            if (cur().type == Tok::Eof) fail_at(cur(), "unexpected end of template, expected " + std::string(token_name(type)) + ".");
            fail_at(cur(), "expected token " + std::string(token_name(type)) + ", got " + describe(cur()));
        }
        return next();
    }
    void expect_name(std::string_view name) {
        if (!is_name(cur(), name)) fail_at(cur(), "expected token '" + std::string(name) + "', got " + describe(cur()));
        next();
    }

    // --- statements ---------------------------------------------------------------

    bool at_end_token(const std::vector<std::string_view>& ends) const {
        if (cur().type != Tok::Name) return false;
        for (auto e : ends)
            if (cur().text == e) return true;
        return false;
    }

    Body subparse(const std::vector<std::string_view>& ends) {
        Body body;
        while (cur().type != Tok::Eof) {
            const Token& t = cur();
            if (t.type == Tok::Data) {
                body.push_back(std::make_unique<TextStmt>(t.offset, t.text));
                next();
            } else if (t.type == Tok::VarBegin) {
                next();
                ExprPtr e = parse_tuple(false, true, {}, false, false);
                expect(Tok::VarEnd);
                body.push_back(std::make_unique<OutputStmt>(e->pos, std::move(e)));
            } else if (t.type == Tok::BlockBegin) {
                next();
                if (!ends.empty() && at_end_token(ends)) return body;
                parse_statement(body);
                expect(Tok::BlockEnd);
            } else {
                fail_at(t, "unexpected " + describe(t));
            }
        }
        return body;
    }

    Body parse_statements(const std::vector<std::string_view>& ends, bool drop_needle, uint32_t open_pos) {
        skip_if(Tok::Colon);
        expect(Tok::BlockEnd);
        Body body = subparse(ends);
        if (cur().type == Tok::Eof) {
            std::string want;
            for (size_t n = 0; n < ends.size(); ++n) want += (n ? " or '" : "'") + std::string(ends[n]) + "'";
            uint32_t line, col;
            offset_to_line_col(prog_.source, open_pos, line, col);
            fail_at(cur(), "unexpected end of template: looking for " + want + " to close the tag opened at line " +
                               std::to_string(line));
        }
        if (drop_needle) next();
        return body;
    }

    void parse_statement(Body& body) {
        const Token& t = cur();
        if (t.type != Tok::Name) fail_at(t, "tag name expected");
        Depth d(*this, t.offset);
        const std::string name = t.text;
        const uint32_t pos = t.offset;
        if (name == "for") return body.push_back(parse_for());
        if (name == "if") return body.push_back(parse_if());
        if (name == "set") return body.push_back(parse_set());
        if (name == "macro") return body.push_back(parse_macro());
        if (name == "call") return body.push_back(parse_call_block());
        if (name == "filter") return body.push_back(parse_filter_block());
        if (name == "with") return body.push_back(parse_with());
        if (name == "block") return body.push_back(parse_block());
        if (name == "generation") {
            next();
            auto s = std::make_unique<ScopeStmt>(pos);
            s->body = parse_statements({"endgeneration"}, true, pos);
            return body.push_back(std::move(s));
        }
        if (name == "print") {
            next();
            bool first = true;
            while (cur().type != Tok::BlockEnd) {
                if (!first) expect(Tok::Comma);
                first = false;
                ExprPtr e = parse_expression(true);
                body.push_back(std::make_unique<OutputStmt>(e->pos, std::move(e)));
            }
            return;
        }
        if (name == "break" || name == "continue") {
            next();
            if (loop_depth_ == 0) fail_pos(pos, "'" + name + "' outside loop");
            return body.push_back(std::make_unique<BareStmt>(name == "break" ? StmtKind::Break : StmtKind::Continue, pos));
        }
        if (name == "extends" || name == "include" || name == "import" || name == "from")
            fail_pos(pos, "'" + name + "' is not allowed: templates cannot load other templates in the sandbox");
        if (name == "autoescape") fail_pos(pos, "'autoescape' blocks are not supported");
        fail_pos(pos, "Encountered unknown tag '" + name + "'.");
    }

    StmtPtr parse_for() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<ForStmt>(pos);
        s->target = parse_assign_target(true, false, {"in"}, false);
        expect_name("in");
        s->iter = parse_tuple(false, false, {"recursive"}, false, false);
        if (skip_name("if")) s->filter = parse_expression(true);
        s->recursive = skip_name("recursive");
        ++loop_depth_;
        s->body = parse_statements({"endfor", "else"}, false, pos);
        --loop_depth_;
        if (next().text == "endfor") return s;
        s->else_body = parse_statements({"endfor"}, true, pos);
        return s;
    }

    StmtPtr parse_if() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<IfStmt>(pos);
        while (true) {
            ExprPtr test = parse_tuple(false, false, {}, false, false);
            Body body = parse_statements({"elif", "else", "endif"}, false, pos);
            s->branches.emplace_back(std::move(test), std::move(body));
            const Token& t = next();
            if (t.text == "elif") continue;
            if (t.text == "else") s->else_body = parse_statements({"endif"}, true, pos);
            break;
        }
        return s;
    }

    StmtPtr parse_set() {
        const uint32_t pos = next().offset;
        Target target = parse_assign_target(true, false, {}, true);
        if (skip_if(Tok::Assign)) {
            auto s = std::make_unique<SetStmt>(pos);
            s->target = std::move(target);
            s->value = parse_tuple(false, true, {}, false, false);
            return s;
        }
        auto s = std::make_unique<SetBlockStmt>(pos);
        s->target = std::move(target);
        while (cur().type == Tok::Pipe) {
            next();
            s->filters.push_back(parse_one_filter(nullptr));
        }
        s->body = parse_statements({"endset"}, true, pos);
        return s;
    }

    void parse_signature(MacroDef& def) {
        expect(Tok::LParen);
        while (cur().type != Tok::RParen) {
            if (!def.params.empty()) expect(Tok::Comma);
            const Token& n = expect(Tok::Name);
            for (const auto& existing : def.param_names)
                if (existing == n.text) fail_at(n, "duplicate argument '" + n.text + "' in function definition");
            def.params.push_back(prog_.intern(n.text));
            def.param_names.push_back(n.text);
            if (n.text == "caller") def.explicit_caller = true;
            if (skip_if(Tok::Assign)) def.defaults.push_back(parse_expression(true));
            else if (!def.defaults.empty()) fail_at(n, "non-default argument follows default argument");
        }
        expect(Tok::RParen);
    }

    // Macro and call-block bodies are functions: loops outside them cannot be
    // broken from inside.
    Body parse_function_body(MacroDef& def, std::string_view end, uint32_t pos) {
        int saved_loops = loop_depth_;
        loop_depth_ = 0;
        macros_.push_back(&def);
        Body body = parse_statements({end}, true, pos);
        macros_.pop_back();
        loop_depth_ = saved_loops;
        return body;
    }

    StmtPtr parse_macro() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<MacroStmt>(pos);
        const Token& n = expect(Tok::Name);
        s->def.name = n.text;
        s->sym = prog_.intern(n.text);
        parse_signature(s->def);
        s->def.body = parse_function_body(s->def, "endmacro", pos);
        return s;
    }

    StmtPtr parse_call_block() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<CallBlockStmt>(pos);
        s->caller.name = "caller";
        if (cur().type == Tok::LParen) parse_signature(s->caller);
        ExprPtr call = parse_expression(true);
        if (call->kind != ExprKind::Call) fail_pos(pos, "expected call");
        s->call = std::move(call);
        s->caller.body = parse_function_body(s->caller, "endcall", pos);
        return s;
    }

    StmtPtr parse_filter_block() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<FilterBlockStmt>(pos);
        s->filters.push_back(parse_one_filter(nullptr));
        while (cur().type == Tok::Pipe) {
            next();
            s->filters.push_back(parse_one_filter(nullptr));
        }
        s->body = parse_statements({"endfilter"}, true, pos);
        return s;
    }

    StmtPtr parse_with() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<WithStmt>(pos);
        while (cur().type != Tok::BlockEnd) {
            if (!s->assigns.empty()) expect(Tok::Comma);
            Target t = parse_assign_target(true, false, {}, false);
            expect(Tok::Assign);
            s->assigns.emplace_back(std::move(t), parse_expression(true));
        }
        s->body = parse_statements({"endwith"}, true, pos);
        return s;
    }

    StmtPtr parse_block() {
        const uint32_t pos = next().offset;
        auto s = std::make_unique<ScopeStmt>(pos);
        s->new_scope = true;
        const Token& n = expect(Tok::Name);
        std::string name = n.text;
        skip_name("scoped");
        skip_name("required");
        if (cur().type == Tok::Sub)
            fail_at(cur(), "Block names in Jinja have to be valid Python identifiers and may not contain hyphens, use an underscore instead.");
        s->body = parse_statements({"endblock"}, true, pos);
        skip_name(name);
        return s;
    }

    // --- assignment targets ----------------------------------------------------------

    Target parse_assign_target(bool with_tuple, bool name_only, const std::vector<std::string_view>& extra_end,
                               bool with_namespace) {
        Depth d(*this, cur().offset);
        if (name_only) {
            const Token& n = expect(Tok::Name);
            Target t;
            t.sym = prog_.intern(n.text);
            t.pos = n.offset;
            return t;
        }
        if (!with_tuple) return target_primary(with_namespace);
        // parse_tuple(simplified=True): a comma-separated list of primaries
        const uint32_t pos = cur().offset;
        std::vector<Target> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect(Tok::Comma);
            if (is_tuple_end(extra_end)) break;
            items.push_back(target_primary(with_namespace));
            if (cur().type == Tok::Comma) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (items.empty()) fail_at(cur(), "Expected an expression, got " + describe(cur()));
            return std::move(items[0]);
        }
        Target t;
        t.kind = Target::Kind::Tuple;
        t.items = std::move(items);
        t.pos = pos;
        return t;
    }

    Target target_primary(bool with_namespace) {
        const Token& t = cur();
        if (t.type == Tok::Name) {
            if (t.text == "true" || t.text == "false" || t.text == "True" || t.text == "False" || t.text == "none" ||
                t.text == "None")
                fail_at(t, "can't assign to 'const'");
            next();
            Target out;
            out.pos = t.offset;
            out.sym = prog_.intern(t.text);
            if (with_namespace && cur().type == Tok::Dot) {
                next();
                const Token& attr = expect(Tok::Name);
                out.kind = Target::Kind::NsAttr;
                out.attr = attr.text;
                out.attr_key = prog_.literal(attr.text);
            }
            return out;
        }
        if (t.type == Tok::LParen) {
            Depth d(*this, t.offset);
            next();
            Target inner = parse_assign_target(true, false, {}, false);
            expect(Tok::RParen);
            return inner;
        }
        if (t.type == Tok::String || t.type == Tok::Int || t.type == Tok::Float) fail_at(t, "can't assign to 'const'");
        if (t.type == Tok::LBracket) fail_at(t, "can't assign to 'list'");
        if (t.type == Tok::LBrace) fail_at(t, "can't assign to 'dict'");
        fail_at(t, "unexpected " + describe(t));
    }

    bool is_tuple_end(const std::vector<std::string_view>& extra_end) const {
        Tok t = cur().type;
        if (t == Tok::VarEnd || t == Tok::BlockEnd || t == Tok::RParen || t == Tok::Eof) return true;
        return at_end_token(extra_end);
    }

    // --- expressions ----------------------------------------------------------------------

    ExprPtr parse_expression(bool with_condexpr) {
        Depth d(*this, cur().offset);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
        Depth d(*this, cur().offset, 0);
        uint32_t pos = cur().offset;
        ExprPtr expr1 = parse_or();
        while (skip_name("if")) {
            d.add(pos);
            auto c = std::make_unique<CondExpr>(pos);
            c->test = parse_or();
            if (skip_name("else")) c->otherwise = parse_condexpr();
            c->then = std::move(expr1);
            expr1 = std::move(c);
            pos = cur().offset;
        }
        return expr1;
    }

    ExprPtr parse_or() {
        Depth d(*this, cur().offset, 0);
        uint32_t pos = cur().offset;
        ExprPtr left = parse_and();
        while (skip_name("or")) {
            d.add(pos);
            auto e = std::make_unique<LogicExpr>(ExprKind::Or, pos);
            e->left = std::move(left);
            e->right = parse_and();
            left = std::move(e);
            pos = cur().offset;
        }
        return left;
    }

    ExprPtr parse_and() {
        Depth d(*this, cur().offset, 0);
        uint32_t pos = cur().offset;
        ExprPtr left = parse_not();
        while (skip_name("and")) {
            d.add(pos);
            auto e = std::make_unique<LogicExpr>(ExprKind::And, pos);
            e->left = std::move(left);
            e->right = parse_not();
            left = std::move(e);
            pos = cur().offset;
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name(cur(), "not")) {
            const uint32_t pos = next().offset;
            Depth d(*this, pos);
            auto e = std::make_unique<UnaryExpr>(ExprKind::Not, pos);
            e->operand = parse_not();
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        Depth d(*this, cur().offset, 0);
        const uint32_t pos = cur().offset;
        ExprPtr expr = parse_math1();
        std::unique_ptr<CompareExpr> cmp;
        while (true) {
            CmpOp op;
            Tok t = cur().type;
            if (t == Tok::Eq) op = CmpOp::Eq;
            else if (t == Tok::Ne) op = CmpOp::Ne;
            else if (t == Tok::Lt) op = CmpOp::Lt;
            else if (t == Tok::Le) op = CmpOp::Le;
            else if (t == Tok::Gt) op = CmpOp::Gt;
            else if (t == Tok::Ge) op = CmpOp::Ge;
            else if (is_name(cur(), "in")) op = CmpOp::In;
            else if (is_name(cur(), "not") && is_name(look(), "in")) {
                next();
                op = CmpOp::NotIn;
            } else {
                break;
            }
            next();
            d.add(pos);
            if (!cmp) {
                cmp = std::make_unique<CompareExpr>(pos);
                cmp->first = std::move(expr);
            }
            cmp->rest.emplace_back(op, parse_math1());
        }
        if (cmp) return cmp;
        return expr;
    }

    ExprPtr parse_math1() {
        Depth d(*this, cur().offset, 0);
        uint32_t pos = cur().offset;
        ExprPtr left = parse_concat();
        while (cur().type == Tok::Add || cur().type == Tok::Sub) {
            BinOp op = cur().type == Tok::Add ? BinOp::Add : BinOp::Sub;
            next();
            d.add(pos);
            auto e = std::make_unique<BinaryExpr>(pos, op);
            e->left = std::move(left);
            e->right = parse_concat();
            left = std::move(e);
            pos = cur().offset;
        }
        return left;
    }

    ExprPtr parse_concat() {
        Depth d(*this, cur().offset, 0);
        const uint32_t pos = cur().offset;
        ExprPtr first = parse_math2();
        if (cur().type != Tok::Tilde) return first;
        auto c = std::make_unique<ConcatExpr>(pos);
        c->parts.push_back(std::move(first));
        while (cur().type == Tok::Tilde) {
            next();
            d.add(pos);
            c->parts.push_back(parse_math2());
        }
        return c;
    }

    ExprPtr parse_math2() {
        Depth d(*this, cur().offset, 0);
        uint32_t pos = cur().offset;
        ExprPtr left = parse_pow();
        while (true) {
            BinOp op;
            Tok t = cur().type;
            if (t == Tok::Mul) op = BinOp::Mul;
            else if (t == Tok::Div) op = BinOp::Div;
            else if (t == Tok::FloorDiv) op = BinOp::FloorDiv;
            else if (t == Tok::Mod) op = BinOp::Mod;
            else break;
            next();
            d.add(pos);
            auto e = std::make_unique<BinaryExpr>(pos, op);
            e->left = std::move(left);
            e->right = parse_pow();
            left = std::move(e);
            pos = cur().offset;
        }
        return left;
    }

    ExprPtr parse_pow() {
        Depth d(*this, cur().offset, 0);
        uint32_t pos = cur().offset;
        ExprPtr left = parse_unary(true);
        while (cur().type == Tok::Pow) {
            next();
            d.add(pos);
            auto e = std::make_unique<BinaryExpr>(pos, BinOp::Pow);
            e->left = std::move(left);
            e->right = parse_unary(true);
            left = std::move(e);
            pos = cur().offset;
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        Depth d(*this, cur().offset);
        const Token& t = cur();
        const uint32_t pos = t.offset;
        ExprPtr node;
        if (t.type == Tok::Sub || t.type == Tok::Add) {
            ExprKind k = t.type == Tok::Sub ? ExprKind::Neg : ExprKind::Pos;
            next();
            auto u = std::make_unique<UnaryExpr>(k, pos);
            u->operand = parse_unary(false);
            node = std::move(u);
        } else {
            node = parse_primary(false);
        }
        node = parse_postfix(std::move(node), d);
        if (with_filter) node = parse_filter_expr(std::move(node), d);
        return node;
    }

    ExprPtr parse_primary(bool with_namespace) {
        const Token& t = cur();
        const uint32_t pos = t.offset;
        switch (t.type) {
            case Tok::Name: {
                next();
                const std::string& n = t.text;
                if (n == "true" || n == "True") return std::make_unique<ConstExpr>(pos, Value::boolean(true));
                if (n == "false" || n == "False") return std::make_unique<ConstExpr>(pos, Value::boolean(false));
                if (n == "none" || n == "None") return std::make_unique<ConstExpr>(pos, Value::none());
                (void)with_namespace;
                uint32_t sym = prog_.intern(n);
                if (sym == prog_.sym_caller || sym == prog_.sym_varargs || sym == prog_.sym_kwargs) {
                    for (MacroDef* m : macros_) {
                        if (sym == prog_.sym_caller) m->uses_caller = true;
                        if (sym == prog_.sym_varargs) m->uses_varargs = true;
                        if (sym == prog_.sym_kwargs) m->uses_kwargs = true;
                    }
                }
                return std::make_unique<NameExpr>(pos, sym);
            }
            case Tok::String: {
                std::string s = next().text;
                while (cur().type == Tok::String) s += next().text;
                return std::make_unique<ConstExpr>(pos, prog_.literal(std::move(s)));
            }
            case Tok::Int: return std::make_unique<ConstExpr>(pos, Value::integer(next().ival));
            case Tok::Float: return std::make_unique<ConstExpr>(pos, Value::floating(next().fval));
            case Tok::LParen: {
                next();
                ExprPtr e = parse_tuple(false, true, {}, true, false);
                expect(Tok::RParen);
                return e;
            }
            case Tok::LBracket: {
                next();
                auto l = std::make_unique<SeqExpr>(ExprKind::List, pos);
                while (cur().type != Tok::RBracket) {
                    if (!l->items.empty()) expect(Tok::Comma);
                    if (cur().type == Tok::RBracket) break;
                    l->items.push_back(parse_expression(true));
                }
                expect(Tok::RBracket);
                return l;
            }
            case Tok::LBrace: {
                next();
                auto m = std::make_unique<DictExpr>(pos);
                while (cur().type != Tok::RBrace) {
                    if (!m->items.empty()) expect(Tok::Comma);
                    if (cur().type == Tok::RBrace) break;
                    ExprPtr k = parse_expression(true);
                    expect(Tok::Colon);
                    ExprPtr v = parse_expression(true);
                    m->items.emplace_back(std::move(k), std::move(v));
                }
                expect(Tok::RBrace);
                return m;
            }
            default: fail_at(t, "unexpected " + describe(t));
        }
    }

    // A comma-separated expression list: one item is itself, several (or a trailing
    // comma, or "()") a tuple.
    ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string_view>& extra_end,
                        bool explicit_parens, bool with_namespace) {
        Depth d(*this, cur().offset);
        uint32_t pos = cur().offset;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect(Tok::Comma);
            if (is_tuple_end(extra_end)) break;
            items.push_back(simplified ? parse_primary(with_namespace) : parse_expression(with_condexpr));
            if (cur().type == Tok::Comma) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) fail_at(cur(), "Expected an expression, got " + describe(cur()));
        }
        auto t = std::make_unique<SeqExpr>(ExprKind::Tuple, pos);
        t->items = std::move(items);
        return t;
    }

    ExprPtr parse_postfix(ExprPtr node, Depth& d) {
        while (true) {
            Tok t = cur().type;
            if (t == Tok::Dot || t == Tok::LBracket) {
                d.add(cur().offset);
                node = parse_subscript(std::move(node));
            } else if (t == Tok::LParen) {
                d.add(cur().offset);
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node, Depth& d) {
        while (true) {
            Tok t = cur().type;
            if (t == Tok::Pipe) {
                d.add(cur().offset);
                next();
                node = parse_one_filter(std::move(node));
            } else if (is_name(cur(), "is")) {
                d.add(cur().offset);
                node = parse_test(std::move(node));
            } else if (t == Tok::LParen) {
                d.add(cur().offset);
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const Token& t = next();
        const uint32_t pos = t.offset;
        if (t.type == Tok::Dot) {
            const Token& a = cur();
            if (a.type == Tok::Name) {
                next();
                auto g = std::make_unique<GetAttrExpr>(pos);
                g->obj = std::move(node);
                g->name = a.text;
                g->str_method = find_method(MethodOwner::Str, a.text);
                g->list_method = find_method(MethodOwner::List, a.text);
                g->dict_method = find_method(MethodOwner::Dict, a.text);
                g->dict_missing = prog_.undefined_literal("'dict object' has no attribute '" + a.text + "'");
                for (size_t k = 0; k < std::size(k_loop_attrs); ++k)
                    if (k_loop_attrs[k] == a.text) g->loop_attr = static_cast<int>(k);
                return g;
            }
            if (a.type != Tok::Int) fail_at(a, "expected name or number");
            next();
            auto g = std::make_unique<GetItemExpr>(pos);
            g->obj = std::move(node);
            g->key = std::make_unique<ConstExpr>(a.offset, Value::integer(a.ival));
            return g;
        }
        // '['
        std::vector<ExprPtr> args;
        while (cur().type != Tok::RBracket) {
            if (!args.empty()) expect(Tok::Comma);
            args.push_back(parse_subscribed());
        }
        expect(Tok::RBracket);
        auto g = std::make_unique<GetItemExpr>(pos);
        g->obj = std::move(node);
        if (args.size() == 1) {
            g->key = std::move(args[0]);
        } else {
            auto tup = std::make_unique<SeqExpr>(ExprKind::Tuple, pos);
            tup->items = std::move(args);
            g->key = std::move(tup);
        }
        return g;
    }

    ExprPtr parse_subscribed() {
        const uint32_t pos = cur().offset;
        ExprPtr start;
        if (cur().type == Tok::Colon) {
            next();
        } else {
            ExprPtr e = parse_expression(true);
            if (cur().type != Tok::Colon) return e;
            next();
            start = std::move(e);
        }
        auto s = std::make_unique<SliceExpr>(pos);
        s->start = std::move(start);
        if (cur().type != Tok::Colon && cur().type != Tok::RBracket && cur().type != Tok::Comma)
            s->stop = parse_expression(true);
        if (cur().type == Tok::Colon) {
            next();
            if (cur().type != Tok::RBracket && cur().type != Tok::Comma) s->step = parse_expression(true);
        }
        return s;
    }

    void parse_call_args(ArgExprs& out) {
        const Token& open = expect(Tok::LParen);
        const uint32_t pos = open.offset;
        bool require_comma = false;
        auto ensure = [&](bool ok) {
            if (!ok) fail_pos(pos, "invalid syntax for function call expression");
        };
        while (cur().type != Tok::RParen) {
            if (require_comma) {
                expect(Tok::Comma);
                if (cur().type == Tok::RParen) break;
            }
            if (cur().type == Tok::Mul) {
                ensure(!out.dyn_args && !out.dyn_kwargs);
                next();
                out.dyn_args = parse_expression(true);
            } else if (cur().type == Tok::Pow) {
                ensure(!out.dyn_kwargs);
                next();
                out.dyn_kwargs = parse_expression(true);
            } else if (cur().type == Tok::Name && look().type == Tok::Assign) {
                ensure(!out.dyn_kwargs);
                std::string key = next().text;
                next();
                out.kw.push_back(KwExpr{std::move(key), parse_expression(true)});
            } else {
                ensure(!out.dyn_args && !out.dyn_kwargs && out.kw.empty());
                out.pos.push_back(parse_expression(true));
            }
            require_comma = true;
        }
        expect(Tok::RParen);
    }

    ExprPtr parse_call(ExprPtr node) {
        auto c = std::make_unique<CallExpr>(cur().offset);
        c->callee = std::move(node);
        parse_call_args(c->args);
        return c;
    }

    std::string dotted_name() {
        std::string name = expect(Tok::Name).text;
        while (cur().type == Tok::Dot) {
            next();
            name += "." + expect(Tok::Name).text;
        }
        return name;
    }

    std::unique_ptr<FilterExpr> parse_one_filter(ExprPtr subject) {
        const uint32_t pos = cur().offset;
        auto f = std::make_unique<FilterExpr>(pos);
        f->subject = std::move(subject);
        f->name = dotted_name();
        f->fn = find_filter(f->name);
        // An unknown filter is an error when the template is compiled, unless it sits
        // in an if statement or an inline if (jinja2's "soft" frames): see analyze.cpp.
        if (cur().type == Tok::LParen) parse_call_args(f->args);
        return f;
    }

    ExprPtr parse_test(ExprPtr node) {
        const uint32_t pos = next().offset;  // 'is'
        bool negated = skip_name("not");
        auto t = std::make_unique<TestExpr>(pos);
        t->subject = std::move(node);
        const uint32_t name_pos = cur().offset;
        t->name = dotted_name();
        t->fn = find_test(t->name);
        (void)name_pos;
        Tok k = cur().type;
        if (k == Tok::LParen) {
            parse_call_args(t->args);
        } else if ((k == Tok::Name || k == Tok::String || k == Tok::Int || k == Tok::Float || k == Tok::LBracket ||
                    k == Tok::LBrace) &&
                   !is_name(cur(), "else") && !is_name(cur(), "or") && !is_name(cur(), "and")) {
            if (is_name(cur(), "is")) fail_at(cur(), "You cannot chain multiple tests with is");
            Depth d(*this, cur().offset);
            ExprPtr arg = parse_primary(false);
            arg = parse_postfix(std::move(arg), d);
            t->args.pos.push_back(std::move(arg));
        }
        if (!negated) return t;
        auto n = std::make_unique<UnaryExpr>(ExprKind::Not, pos);
        n->operand = std::move(t);
        return n;
    }
};

}  // namespace

std::unique_ptr<Program> parse_program(std::string_view source) {
    auto prog = std::make_unique<Program>();
    prog->source = normalize_source(source);
    prog->sym_loop = prog->intern("loop");
    prog->sym_caller = prog->intern("caller");
    prog->sym_varargs = prog->intern("varargs");
    prog->sym_kwargs = prog->intern("kwargs");
    std::vector<Token> toks = tokenize(prog->source);
    Parser parser(*prog, std::move(toks));
    prog->body = parser.parse_template();
    analyze_program(*prog);
    fold_constants(*prog);
    return prog;
}

}  // namespace kiln::jinja
