// Constant folding after analysis, as jinja2's optimizer folds while compiling:
//   - a {{ }} that is constant as a whole becomes text, joined with the text
//     around it (jinja2 writes such output into the compiled code as a string);
//   - a constant tuple, and a constant list that is only the right side of
//     `in` / `not in`, becomes a prebuilt value shared by every render.
// Each is evaluated once here exactly as a render evaluates it (a {{ }} with
// jinja2's compile-time getitem, see Expr::constant). Whatever raises, or is
// large, or is not a plain value, is left for the render: it then behaves as
// before, errors included.
#include <functional>

#include "chat/jinja/ast.h"
#include "chat/jinja/interp.h"

namespace kiln::jinja {

namespace {

constexpr uint64_t k_max_folded_bytes = 64 << 10;  // keeps parsing quick and templates small

RenderOptions folding_options() {
    RenderOptions o;
    o.limits.max_output_bytes = k_max_folded_bytes;
    o.limits.max_loop_iterations = 10'000;
    o.limits.max_milliseconds = 0;
    return o;
}

class Folder {
public:
    explicit Folder(Program& prog) : prog_(prog), interp_(prog, folding_options()) {}

    void body(Body& b) {
        for (StmtPtr& s : b) stmt(s);
        join_text(b);
    }

private:
    Program& prog_;
    Interp interp_;

    // A value every render can share: strings become immortal literals, tuples
    // immortal tuples; containers that can change (lists, dicts) are refused,
    // except a list under `in`, which nothing can reach to change.
    bool permanent(const Value& v, Value& out, bool list_ok, int depth) {
        if (depth > 16) return false;
        switch (v.kind()) {
            case Kind::None:
            case Kind::Bool:
            case Kind::Int:
            case Kind::Float: out = v; return true;
            case Kind::String:
                out = prog_.literal(v.str());
                out.set_safe(v.safe());
                return true;
            case Kind::List: {
                const ListObj& l = v.list();
                if (l.seq != SeqKind::Tuple && !(l.seq == SeqKind::List && list_ok)) return false;
                auto p = std::make_unique<ListObj>(Permanent{});
                p->seq = l.seq;
                p->items.reserve(l.items.size());
                for (const Value& x : l.items) {
                    Value y;
                    if (!permanent(x, y, false, depth + 1)) return false;
                    p->items.push_back(std::move(y));
                }
                out = Value::from_obj(p.get());
                prog_.constants.push_back(std::move(p));
                return true;
            }
            default: return false;
        }
    }

    // Replaces a constant tuple (or list under `in`) by its value.
    void fold_seq(ExprPtr& slot, bool list_ok) {
        const Expr* e = slot.get();
        if (!e->constant || (e->kind != ExprKind::Tuple && !(e->kind == ExprKind::List && list_ok))) return;
        Value folded;
        bool ok = interp_.evaluate_constant(e, false, [&](const Value& v) { return permanent(v, folded, list_ok, 0); });
        if (!ok) return;
        auto c = std::make_unique<ConstExpr>(e->pos, std::move(folded));
        c->constant = true;
        slot = std::move(c);
    }

    void args(ArgExprs& a) {
        for (ExprPtr& x : a.pos) expr(x);
        for (KwExpr& k : a.kw) expr(k.value);
        expr(a.dyn_args);
        expr(a.dyn_kwargs);
    }

    // Folds inside out, so a tuple of tuples is folded once as a whole.
    void expr(ExprPtr& slot) {
        Expr* e = slot.get();
        if (!e) return;
        switch (e->kind) {
            case ExprKind::Const:
            case ExprKind::Name: return;
            case ExprKind::GetAttr: expr(static_cast<GetAttrExpr*>(e)->obj); break;
            case ExprKind::GetItem: {
                auto* g = static_cast<GetItemExpr*>(e);
                expr(g->obj);
                expr(g->key);
                break;
            }
            case ExprKind::Slice: {
                auto* sl = static_cast<SliceExpr*>(e);
                expr(sl->start);
                expr(sl->stop);
                expr(sl->step);
                break;
            }
            case ExprKind::Call: {
                auto* c = static_cast<CallExpr*>(e);
                expr(c->callee);
                args(c->args);
                break;
            }
            case ExprKind::Filter: filter(static_cast<FilterExpr*>(e)); break;
            case ExprKind::Test: {
                auto* t = static_cast<TestExpr*>(e);
                expr(t->subject);
                args(t->args);
                break;
            }
            case ExprKind::Not:
            case ExprKind::Neg:
            case ExprKind::Pos: expr(static_cast<UnaryExpr*>(e)->operand); break;
            case ExprKind::Binary: {
                auto* b = static_cast<BinaryExpr*>(e);
                expr(b->left);
                expr(b->right);
                break;
            }
            case ExprKind::And:
            case ExprKind::Or: {
                auto* b = static_cast<LogicExpr*>(e);
                expr(b->left);
                expr(b->right);
                break;
            }
            case ExprKind::Compare: {
                auto* c = static_cast<CompareExpr*>(e);
                expr(c->first);
                for (auto& [op, x] : c->rest) {
                    expr(x);
                    if (op == CmpOp::In || op == CmpOp::NotIn) fold_seq(x, true);
                }
                break;
            }
            case ExprKind::Concat:
                for (ExprPtr& p : static_cast<ConcatExpr*>(e)->parts) expr(p);
                break;
            case ExprKind::Cond: {
                auto* c = static_cast<CondExpr*>(e);
                expr(c->test);
                expr(c->then);
                expr(c->otherwise);
                break;
            }
            case ExprKind::List:
            case ExprKind::Tuple:
                for (ExprPtr& x : static_cast<SeqExpr*>(e)->items) expr(x);
                break;
            case ExprKind::Dict:
                for (auto& [k, v] : static_cast<DictExpr*>(e)->items) {
                    expr(k);
                    expr(v);
                }
                break;
        }
        fold_seq(slot, false);
    }

    void filter(FilterExpr* f) {
        expr(f->subject);
        args(f->args);
    }

    void target(Target&) {}

    void macro(MacroDef& d) {
        for (ExprPtr& x : d.defaults) expr(x);
        body(d.body);
    }

    void stmt(StmtPtr& slot) {
        Stmt* s = slot.get();
        switch (s->kind) {
            case StmtKind::Text:
            case StmtKind::Break:
            case StmtKind::Continue: return;
            case StmtKind::Output: {
                auto* o = static_cast<OutputStmt*>(s);
                if (o->expr->constant) {
                    // As the render does it: evaluated with jinja2's compile-time
                    // getitem; if that raises, the render evaluates it again.
                    std::string text;
                    bool ok = interp_.evaluate_constant(o->expr.get(), true, [&](const Value& v) {
                        if (v.is_string()) text = v.str();
                        else append_str(text, v);
                        return true;
                    });
                    if (ok) {
                        slot = std::make_unique<TextStmt>(s->pos, std::move(text));
                        return;
                    }
                }
                expr(o->expr);
                return;
            }
            case StmtKind::If: {
                auto* i = static_cast<IfStmt*>(s);
                for (auto& [test, b] : i->branches) {
                    expr(test);
                    body(b);
                }
                body(i->else_body);
                return;
            }
            case StmtKind::For: {
                auto* f = static_cast<ForStmt*>(s);
                expr(f->iter);
                expr(f->filter);
                body(f->body);
                body(f->else_body);
                return;
            }
            case StmtKind::Set: expr(static_cast<SetStmt*>(s)->value); return;
            case StmtKind::SetBlock: {
                auto* b = static_cast<SetBlockStmt*>(s);
                for (auto& f : b->filters) filter(f.get());
                body(b->body);
                return;
            }
            case StmtKind::Macro: macro(static_cast<MacroStmt*>(s)->def); return;
            case StmtKind::CallBlock: {
                auto* c = static_cast<CallBlockStmt*>(s);
                macro(c->caller);
                // the call itself keeps its shape (exec_call_block reads callee and arguments)
                args(static_cast<CallExpr*>(c->call.get())->args);
                return;
            }
            case StmtKind::FilterBlock: {
                auto* fb = static_cast<FilterBlockStmt*>(s);
                for (auto& f : fb->filters) filter(f.get());
                body(fb->body);
                return;
            }
            case StmtKind::With: {
                auto* w = static_cast<WithStmt*>(s);
                for (auto& a : w->assigns) expr(a.second);
                body(w->body);
                return;
            }
            case StmtKind::Scope: body(static_cast<ScopeStmt*>(s)->body); return;
        }
    }

    // Adjacent texts become one statement; empty texts go.
    static void join_text(Body& b) {
        Body out;
        out.reserve(b.size());
        for (StmtPtr& s : b) {
            if (s->kind == StmtKind::Text) {
                auto* t = static_cast<TextStmt*>(s.get());
                if (t->text.empty()) continue;
                if (!out.empty() && out.back()->kind == StmtKind::Text) {
                    static_cast<TextStmt*>(out.back().get())->text += t->text;
                    continue;
                }
            }
            out.push_back(std::move(s));
        }
        b.swap(out);
    }
};

}  // namespace

void fold_constants(Program& prog) { Folder(prog).body(prog.body); }

}  // namespace kiln::jinja
