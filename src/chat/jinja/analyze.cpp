// Analysis after parsing, as jinja2's compiler does it: unknown filters and
// tests (errors unless inside an if), and per-expression facts the interpreter
// uses: purity (no calls) and constness (what jinja2 folds at compile time).
#include <algorithm>

#include "chat/jinja/ast.h"
#include "chat/jinja/error.h"
#include "chat/jinja/lexer.h"

namespace kiln::jinja {

namespace {

// jinja2's as_const: which expressions its optimizer folds while compiling.
bool compute_constant(const Expr* e) {
    if (!e) return true;
    bool c = true;
    auto all = [&](std::initializer_list<const Expr*> xs) {
        bool r = true;
        for (const Expr* x : xs) r &= compute_constant(x);
        return r;
    };
    auto args_const = [&](const ArgExprs& a) {
        bool r = true;
        for (const ExprPtr& x : a.pos) r &= compute_constant(x.get());
        for (const KwExpr& k : a.kw) r &= compute_constant(k.value.get());
        if (a.dyn_args) r &= compute_constant(a.dyn_args.get());
        if (a.dyn_kwargs) r &= compute_constant(a.dyn_kwargs.get());
        return r;
    };
    switch (e->kind) {
        case ExprKind::Const: c = true; break;
        case ExprKind::Name: c = false; break;
        case ExprKind::Call: {
            const auto* call = static_cast<const CallExpr*>(e);
            compute_constant(call->callee.get());
            args_const(call->args);
            c = false;
            break;
        }
        case ExprKind::GetAttr: c = compute_constant(static_cast<const GetAttrExpr*>(e)->obj.get()); break;
        case ExprKind::GetItem: {
            const auto* g = static_cast<const GetItemExpr*>(e);
            c = all({g->obj.get(), g->key.get()});
            break;
        }
        case ExprKind::Slice: {
            const auto* sl = static_cast<const SliceExpr*>(e);
            c = all({sl->start.get(), sl->stop.get(), sl->step.get()});
            break;
        }
        case ExprKind::Filter: {
            const auto* f = static_cast<const FilterExpr*>(e);
            // filters that need the render context are never folded
            static const std::string_view k_context_filters[] = {"map", "select", "reject", "selectattr", "rejectattr", "random"};
            bool ctx = !f->fn;
            for (auto n : k_context_filters) ctx |= f->name == n;
            c = compute_constant(f->subject.get()) && args_const(f->args) && f->subject && !ctx;
            break;
        }
        case ExprKind::Test: {
            const auto* t = static_cast<const TestExpr*>(e);
            c = compute_constant(t->subject.get()) && args_const(t->args) && t->fn;
            break;
        }
        case ExprKind::Not:
        case ExprKind::Neg:
        case ExprKind::Pos: c = compute_constant(static_cast<const UnaryExpr*>(e)->operand.get()); break;
        case ExprKind::Binary: {
            const auto* b = static_cast<const BinaryExpr*>(e);
            c = all({b->left.get(), b->right.get()});
            break;
        }
        case ExprKind::And:
        case ExprKind::Or: {
            const auto* b = static_cast<const LogicExpr*>(e);
            c = all({b->left.get(), b->right.get()});
            break;
        }
        case ExprKind::Compare: {
            const auto* cmp = static_cast<const CompareExpr*>(e);
            c = compute_constant(cmp->first.get());
            for (const auto& r : cmp->rest) c &= compute_constant(r.second.get());
            break;
        }
        case ExprKind::Concat:
            for (const ExprPtr& p : static_cast<const ConcatExpr*>(e)->parts) c &= compute_constant(p.get());
            break;
        case ExprKind::Cond: {
            const auto* cd = static_cast<const CondExpr*>(e);
            c = all({cd->test.get(), cd->then.get()}) && cd->otherwise && compute_constant(cd->otherwise.get());
            break;
        }
        case ExprKind::List:
        case ExprKind::Tuple:
            for (const ExprPtr& x : static_cast<const SeqExpr*>(e)->items) c &= compute_constant(x.get());
            break;
        case ExprKind::Dict:
            for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {  // both sides: each node records its own
                c &= compute_constant(k.get());
                c &= compute_constant(v.get());
            }
            break;
    }
    const_cast<Expr*>(e)->constant = c;
    return c;
}

// jinja2 resolves filters and tests when it compiles a template: an unknown one is
// an error then, except inside an if statement or an inline if expression (a
// "soft" frame, reset by loops, macros and blocks), where it fails only if it runs.
class UnknownCheck {
public:
    explicit UnknownCheck(const Program& p) : prog_(p) {}

    void body(const Body& b, bool soft) {
        for (const StmtPtr& s : b) stmt(s.get(), soft);
    }

private:
    const Program& prog_;

    [[noreturn]] void fail(uint32_t offset, const std::string& msg) {
        uint32_t line, col;
        offset_to_line_col(prog_.source, offset, line, col);
        throw TemplateError(msg, line, col);
    }

    bool args(const ArgExprs& a, bool soft) {
        bool pure = true;
        for (const ExprPtr& e : a.pos) pure &= expr(e.get(), soft);
        for (const KwExpr& k : a.kw) pure &= expr(k.value.get(), soft);
        if (a.dyn_args) pure &= expr(a.dyn_args.get(), soft);
        if (a.dyn_kwargs) pure &= expr(a.dyn_kwargs.get(), soft);
        const_cast<ArgExprs&>(a).pure = pure;
        const_cast<ArgExprs&>(a).none = a.pos.empty() && a.kw.empty() && !a.dyn_args && !a.dyn_kwargs;
        return pure;
    }

    bool filter(const FilterExpr* f, bool soft) {
        if (!f->fn && !soft) fail(f->pos, "No filter named '" + f->name + "'.");
        bool pure = true;
        if (f->subject) pure &= expr(f->subject.get(), soft);
        pure &= args(f->args, soft);
        const_cast<FilterExpr*>(f)->pure = pure;
        return pure;
    }

    // Checks unknown filters and tests; returns (and records) whether e is pure.
    bool expr(const Expr* e, bool soft) {
        if (!e) return true;
        compute_constant(e);
        bool pure = expr_children(e, soft);
        const_cast<Expr*>(e)->pure = pure;
        return pure;
    }

    bool expr_children(const Expr* e, bool soft) {
        switch (e->kind) {
            case ExprKind::Const:
            case ExprKind::Name: return true;
            case ExprKind::GetAttr: return expr(static_cast<const GetAttrExpr*>(e)->obj.get(), soft);
            case ExprKind::GetItem: {
                const auto* g = static_cast<const GetItemExpr*>(e);
                bool a = expr(g->obj.get(), soft);
                return expr(g->key.get(), soft) && a;
            }
            case ExprKind::Slice: {
                const auto* s = static_cast<const SliceExpr*>(e);
                bool a = expr(s->start.get(), soft);
                bool b = expr(s->stop.get(), soft);
                return expr(s->step.get(), soft) && a && b;
            }
            case ExprKind::Call: {
                const auto* c = static_cast<const CallExpr*>(e);
                expr(c->callee.get(), soft);
                args(c->args, soft);
                return false;
            }
            case ExprKind::Filter: return filter(static_cast<const FilterExpr*>(e), soft);
            case ExprKind::Test: {
                const auto* t = static_cast<const TestExpr*>(e);
                if (!t->fn && !soft) fail(t->pos, "No test named '" + t->name + "'.");
                bool a = expr(t->subject.get(), soft);
                return args(t->args, soft) && a;
            }
            case ExprKind::Not:
            case ExprKind::Neg:
            case ExprKind::Pos: return expr(static_cast<const UnaryExpr*>(e)->operand.get(), soft);
            case ExprKind::Binary: {
                const auto* b = static_cast<const BinaryExpr*>(e);
                bool a = expr(b->left.get(), soft);
                return expr(b->right.get(), soft) && a;
            }
            case ExprKind::And:
            case ExprKind::Or: {
                const auto* b = static_cast<const LogicExpr*>(e);
                bool a = expr(b->left.get(), soft);
                return expr(b->right.get(), soft) && a;
            }
            case ExprKind::Compare: {
                const auto* c = static_cast<const CompareExpr*>(e);
                bool pure = expr(c->first.get(), soft);
                for (const auto& r : c->rest) pure &= expr(r.second.get(), soft);
                return pure;
            }
            case ExprKind::Concat: {
                bool pure = true;
                for (const ExprPtr& p : static_cast<const ConcatExpr*>(e)->parts) pure &= expr(p.get(), soft);
                return pure;
            }
            case ExprKind::Cond: {
                const auto* c = static_cast<const CondExpr*>(e);
                bool a = expr(c->test.get(), true);
                bool b = expr(c->then.get(), true);
                return expr(c->otherwise.get(), true) && a && b;
            }
            case ExprKind::List:
            case ExprKind::Tuple: {
                bool pure = true;
                for (const ExprPtr& x : static_cast<const SeqExpr*>(e)->items) pure &= expr(x.get(), soft);
                return pure;
            }
            case ExprKind::Dict: {
                bool pure = true;
                for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
                    pure &= expr(k.get(), soft);
                    pure &= expr(v.get(), soft);
                }
                return pure;
            }
        }
        return false;
    }

    void macro(const MacroDef& d) {
        for (const ExprPtr& x : d.defaults) expr(x.get(), false);
        body(d.body, false);
    }

    void stmt(const Stmt* s, bool soft) {
        switch (s->kind) {
            case StmtKind::Text:
            case StmtKind::Break:
            case StmtKind::Continue: return;
            case StmtKind::Output: expr(static_cast<const OutputStmt*>(s)->expr.get(), soft); return;
            case StmtKind::If: {
                const auto* i = static_cast<const IfStmt*>(s);
                for (const auto& [test, b] : i->branches) {
                    expr(test.get(), true);
                    body(b, true);
                }
                return body(i->else_body, true);
            }
            case StmtKind::For: {
                const auto* f = static_cast<const ForStmt*>(s);
                expr(f->iter.get(), soft);
                expr(f->filter.get(), false);
                body(f->body, false);
                return body(f->else_body, false);
            }
            case StmtKind::Set: expr(static_cast<const SetStmt*>(s)->value.get(), soft); return;
            case StmtKind::SetBlock: {
                const auto* b = static_cast<const SetBlockStmt*>(s);
                for (const auto& f : b->filters) filter(f.get(), soft);
                return body(b->body, false);
            }
            case StmtKind::Macro: return macro(static_cast<const MacroStmt*>(s)->def);
            case StmtKind::CallBlock: {
                const auto* c = static_cast<const CallBlockStmt*>(s);
                macro(c->caller);
                expr(c->call.get(), soft);
                return;
            }
            case StmtKind::FilterBlock: {
                const auto* f = static_cast<const FilterBlockStmt*>(s);
                for (const auto& x : f->filters) filter(x.get(), soft);
                return body(f->body, false);
            }
            case StmtKind::With: {
                const auto* w = static_cast<const WithStmt*>(s);
                for (const auto& a : w->assigns) expr(a.second.get(), soft);
                return body(w->body, false);
            }
            case StmtKind::Scope: {
                const auto* sc = static_cast<const ScopeStmt*>(s);
                return body(sc->body, sc->new_scope ? false : soft);
            }
        }
    }
};

// Calls f on each direct sub-expression of e.
template <class F>
void each_child(const Expr* e, F&& f) {
    auto args = [&](const ArgExprs& a) {
        for (const ExprPtr& x : a.pos) f(x.get());
        for (const KwExpr& k : a.kw) f(k.value.get());
        if (a.dyn_args) f(a.dyn_args.get());
        if (a.dyn_kwargs) f(a.dyn_kwargs.get());
    };
    auto opt = [&](const ExprPtr& x) {
        if (x) f(x.get());
    };
    switch (e->kind) {
        case ExprKind::Const:
        case ExprKind::Name: return;
        case ExprKind::GetAttr: return f(static_cast<const GetAttrExpr*>(e)->obj.get());
        case ExprKind::GetItem: {
            const auto* g = static_cast<const GetItemExpr*>(e);
            f(g->obj.get());
            return f(g->key.get());
        }
        case ExprKind::Slice: {
            const auto* sl = static_cast<const SliceExpr*>(e);
            opt(sl->start);
            opt(sl->stop);
            return opt(sl->step);
        }
        case ExprKind::Call: {
            const auto* c = static_cast<const CallExpr*>(e);
            f(c->callee.get());
            return args(c->args);
        }
        case ExprKind::Filter: {
            const auto* fl = static_cast<const FilterExpr*>(e);
            opt(fl->subject);
            return args(fl->args);
        }
        case ExprKind::Test: {
            const auto* t = static_cast<const TestExpr*>(e);
            f(t->subject.get());
            return args(t->args);
        }
        case ExprKind::Not:
        case ExprKind::Neg:
        case ExprKind::Pos: return f(static_cast<const UnaryExpr*>(e)->operand.get());
        case ExprKind::Binary: {
            const auto* b = static_cast<const BinaryExpr*>(e);
            f(b->left.get());
            return f(b->right.get());
        }
        case ExprKind::And:
        case ExprKind::Or: {
            const auto* b = static_cast<const LogicExpr*>(e);
            f(b->left.get());
            return f(b->right.get());
        }
        case ExprKind::Compare: {
            const auto* c = static_cast<const CompareExpr*>(e);
            f(c->first.get());
            for (const auto& r : c->rest) f(r.second.get());
            return;
        }
        case ExprKind::Concat:
            for (const ExprPtr& p : static_cast<const ConcatExpr*>(e)->parts) f(p.get());
            return;
        case ExprKind::Cond: {
            const auto* c = static_cast<const CondExpr*>(e);
            f(c->test.get());
            f(c->then.get());
            return opt(c->otherwise);
        }
        case ExprKind::List:
        case ExprKind::Tuple:
            for (const ExprPtr& x : static_cast<const SeqExpr*>(e)->items) f(x.get());
            return;
        case ExprKind::Dict:
            for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
                f(k.get());
                f(v.get());
            }
            return;
    }
}

// Which for loops and macros may keep their scope on the native stack (see
// ForStmt::captures): a scope is captured only by a macro or call block defined in
// it (its closure) and by a recursive loop (loop(...) re-enters it); a loop object
// outlives its statement only if `loop` is used other than through a plain
// attribute. Conservative: any doubt keeps the heap objects.
class FrameFacts {
public:
    explicit FrameFacts(uint32_t sym_loop) : sym_loop_(sym_loop) {}

    enum class LoopUse : uint8_t { None, Plain, Escapes };
    struct Facts {
        bool captures = false;
        LoopUse loop_use = LoopUse::None;
        void add(const Facts& o) {
            captures |= o.captures;
            use(o.loop_use);
        }
        void use(LoopUse u) {
            if (u > loop_use) loop_use = u;
        }
    };

    Facts body(const Body& b) {
        Facts f;
        for (const StmtPtr& s : b) f.add(stmt(s.get()));
        return f;
    }

private:
    uint32_t sym_loop_;

    LoopUse expr(const Expr* e) {
        if (!e) return LoopUse::None;
        if (e->kind == ExprKind::Name)
            return static_cast<const NameExpr*>(e)->sym == sym_loop_ ? LoopUse::Escapes : LoopUse::None;
        if (e->kind == ExprKind::GetAttr) {
            // loop.index ... loop.nextitem give numbers, booleans or items, never the loop
            const auto* g = static_cast<const GetAttrExpr*>(e);
            if (g->obj->kind == ExprKind::Name && static_cast<const NameExpr*>(g->obj.get())->sym == sym_loop_ &&
                g->loop_attr >= 0 && g->loop_attr <= 10)
                return LoopUse::Plain;
        }
        LoopUse u = LoopUse::None;
        each_child(e, [&](const Expr* c) {
            LoopUse v = expr(c);
            if (v > u) u = v;
        });
        return u;
    }

    LoopUse target(const Target& t) {
        if (t.kind == Target::Kind::Tuple) {
            LoopUse u = LoopUse::None;
            for (const Target& x : t.items) u = std::max(u, target(x));
            return u;
        }
        return t.sym == sym_loop_ ? LoopUse::Escapes : LoopUse::None;
    }

    // for k, v in X|items / X.items(), with a plain loop binding two names.
    static ForStmt::Items items_source(const ForStmt& f) {
        const Target& t = f.target;
        if (f.captures || f.loop_var || f.loop_escapes || f.filter || t.kind != Target::Kind::Tuple ||
            t.items.size() != 2 || t.items[0].kind != Target::Kind::Name || t.items[1].kind != Target::Kind::Name ||
            t.items[0].sym == t.items[1].sym)
            return ForStmt::Items::No;
        const Expr* it = f.iter.get();
        if (it->kind == ExprKind::Filter) {
            const auto* fe = static_cast<const FilterExpr*>(it);
            if (fe->name == "items" && fe->fn && fe->subject && fe->args.none) return ForStmt::Items::Filter;
        }
        if (it->kind == ExprKind::Call) {
            const auto* c = static_cast<const CallExpr*>(it);
            if (c->callee->kind == ExprKind::GetAttr && c->args.none) {
                const auto* g = static_cast<const GetAttrExpr*>(c->callee.get());
                if (g->name == "items" && g->dict_method >= 0) return ForStmt::Items::Method;
            }
        }
        return ForStmt::Items::No;
    }

    Facts macro(const MacroDef& d) {
        Facts f = body(d.body);
        const_cast<MacroDef&>(d).captures = f.captures;
        for (const ExprPtr& x : d.defaults) f.use(expr(x.get()));
        for (uint32_t p : d.params)
            if (p == sym_loop_) f.use(LoopUse::Escapes);
        f.captures = true;  // the macro object keeps the enclosing scope
        return f;
    }

    Facts stmt(const Stmt* s) {
        Facts f;
        switch (s->kind) {
            case StmtKind::Text:
            case StmtKind::Break:
            case StmtKind::Continue: break;
            case StmtKind::Output: f.use(expr(static_cast<const OutputStmt*>(s)->expr.get())); break;
            case StmtKind::If: {
                const auto* i = static_cast<const IfStmt*>(s);
                for (const auto& [test, b] : i->branches) {
                    f.use(expr(test.get()));
                    f.add(body(b));
                }
                f.add(body(i->else_body));
                break;
            }
            case StmtKind::For: {
                auto* fs = const_cast<ForStmt*>(static_cast<const ForStmt*>(s));
                const Facts in_body = body(fs->body);
                const Facts in_else = body(fs->else_body);
                const LoopUse in_target = target(fs->target);
                fs->captures = fs->recursive || in_body.captures || in_else.captures;
                fs->loop_var = in_body.loop_use != LoopUse::None;
                fs->loop_escapes = in_body.loop_use == LoopUse::Escapes || in_target != LoopUse::None;
                fs->items = items_source(*fs);
                f.add(in_body);
                f.add(in_else);
                f.captures = fs->captures;
                f.use(in_target);
                f.use(expr(fs->iter.get()));
                f.use(expr(fs->filter.get()));
                break;
            }
            case StmtKind::Set: {
                const auto* st = static_cast<const SetStmt*>(s);
                f.use(target(st->target));
                f.use(expr(st->value.get()));
                break;
            }
            case StmtKind::SetBlock: {
                const auto* st = static_cast<const SetBlockStmt*>(s);
                f.use(target(st->target));
                for (const auto& x : st->filters) f.use(expr(x.get()));
                f.add(body(st->body));
                break;
            }
            case StmtKind::Macro: {
                const auto* m = static_cast<const MacroStmt*>(s);
                if (m->sym == sym_loop_) f.use(LoopUse::Escapes);
                f.add(macro(m->def));
                break;
            }
            case StmtKind::CallBlock: {
                const auto* c = static_cast<const CallBlockStmt*>(s);
                f.add(macro(c->caller));
                f.use(expr(c->call.get()));
                break;
            }
            case StmtKind::FilterBlock: {
                const auto* fb = static_cast<const FilterBlockStmt*>(s);
                for (const auto& x : fb->filters) f.use(expr(x.get()));
                f.add(body(fb->body));
                break;
            }
            case StmtKind::With: {
                const auto* w = static_cast<const WithStmt*>(s);
                for (const auto& [t, x] : w->assigns) {
                    f.use(target(t));
                    f.use(expr(x.get()));
                }
                f.add(body(w->body));
                break;
            }
            case StmtKind::Scope: f.add(body(static_cast<const ScopeStmt*>(s)->body)); break;
        }
        return f;
    }
};

}  // namespace

void analyze_program(Program& prog) {
    UnknownCheck(prog).body(prog.body, false);
    FrameFacts(prog.sym_loop).body(prog.body);
}

}  // namespace kiln::jinja
