#include "chat/jinja/interp.h"

#include <cstring>

#include "chat/jinja/error.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

// --- object representations ----------------------------------------------------------

void BuiltinObj::repr(std::string& out) const {
    out += "<built-in function ";
    out += name;
    out += ">";
}

void BoundMethodObj::repr(std::string& out) const {
    out += "<built-in method ";
    out += builtin_type ? method_name(owner, id) : std::string_view("method");
    out += " of ";
    out += kiln::jinja::type_name(self);
    out += " object>";
}

void MacroObj::repr(std::string& out) const {
    out += "<Macro ";
    append_repr(out, Value::string(def->name));
    out += ">";
}

void NamespaceObj::repr(std::string& out) const {
    out += "<Namespace ";
    append_repr(out, attrs);
    out += ">";
}

void LoopObj::repr(std::string& out) const {
    out += "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(n_items) + ">";
}

void IteratorObj::repr(std::string& out) const {
    out += "<";
    out += kind;
    out += " object>";
}

// --- setup ----------------------------------------------------------------------------

namespace {

// Deep-copies containers so that a render never modifies its caller's values.
Value copy_in(const Value& v, int depth) {
    if (depth > k_max_nesting) fail("context nested too deeply (more than " + std::to_string(k_max_nesting) + " levels)");
    if (v.is_list()) {
        Value out = Value::new_list();
        ListObj& l = out.list();
        const ListObj& src = v.list();
        l.seq = src.seq;
        l.range_start = src.range_start;
        l.range_stop = src.range_stop;
        l.range_step = src.range_step;
        l.items.reserve(src.items.size());
        for (const Value& x : src.items) l.items.push_back(copy_in(x, depth + 1));
        return out;
    }
    if (v.is_dict()) {
        Value out = Value::new_dict();
        for (const auto& [k, x] : v.dict().entries) out.dict().set(k, copy_in(x, depth + 1));
        return out;
    }
    return v;
}

}  // namespace

Interp::Interp(const Program& prog, const RenderOptions& options) : prog_(prog), options_(options) {}

std::string Interp::render(const Value& context, bool copy) {
    if (options_.limits.max_milliseconds) {  // one deadline, should the render start over
        has_deadline_ = true;
        deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.limits.max_milliseconds);
    }
    if (!copy) return render_pass(context, false, false);
    // Copying the caller's context costs as much as a tenth of a render, and templates
    // almost never modify it: render on the caller's containers, and start over on a
    // copy if the template does modify one (will_modify). Nothing of the first pass is
    // visible: it has changed nothing and its output is dropped.
    try {
        return render_pass(context, true, false);
    } catch (const ContextModified&) {
    }
    return render_pass(context, false, true);
}

// The state every pass starts from; stack_base is a local of the caller (the
// native-stack limit is measured from it).
void Interp::begin_pass(uint32_t serial, const char* stack_base, std::string* out, bool shared, bool folding) {
    serial_ = serial;
    shared_context_ = shared;
    stack_base_ = stack_base;
    scope_ = nullptr;
    call_depth_ = 0;
    iterations_ = 0;
    folding_ = folding;
    out_ = out;
}

std::string Interp::render_pass(const Value& context, bool shared, bool copy) {
    RenderRegistry registry;
    char base_marker = 0;
    std::string out;
    out.reserve(4096);
    begin_pass(registry.serial(), &base_marker, &out, shared, false);
    try {
        root_.assign(prog_.symbols.size(), Value());
        root_set_.assign(prog_.symbols.size(), 0);
        if (context.is_dict()) {
            for (const auto& [k, v] : context.dict().entries) {
                if (!k.is_string()) continue;
                auto it = prog_.symbol_ids.find(k.str());
                if (it == prog_.symbol_ids.end()) continue;  // the template never names it
                root_[it->second] = copy ? copy_in(v, 0) : v;
                root_set_[it->second] = 1;
            }
        } else if (!context.is_undefined() && !context.is_none()) {
            fail("the render context must be a dict, not " + std::string(type_name(context)));
        }
        exec_body(prog_.body);
    } catch (const ContextModified&) {
        root_.clear();
        throw;
    } catch (const TemplateError& e) {
        root_.clear();
        if (e.line() != 0) throw;
        uint32_t line, col;
        offset_to_line_col(prog_.source, pos_, line, col);
        throw TemplateError(e.message(), line, col, e.raised());
    } catch (const std::bad_alloc&) {
        root_.clear();
        uint32_t line, col;
        offset_to_line_col(prog_.source, pos_, line, col);
        throw TemplateError("out of memory", line, col);
    } catch (const std::length_error&) {
        root_.clear();
        uint32_t line, col;
        offset_to_line_col(prog_.source, pos_, line, col);
        throw TemplateError("value too large", line, col);
    } catch (const std::exception& e) {
        // Not expected: callers still get a kiln::Error, and the fuzzer flags the prefix.
        root_.clear();
        uint32_t line, col;
        offset_to_line_col(prog_.source, pos_, line, col);
        throw TemplateError(std::string("internal error: ") + e.what(), line, col);
    }
    root_.clear();
    return out;
}

bool Interp::evaluate_constant(const Expr* e, bool folding, const std::function<bool(const Value&)>& keep) {
    RenderRegistry registry;
    char base_marker = 0;
    std::string sink;
    begin_pass(registry.serial(), &base_marker, &sink, false, folding);
    root_.assign(prog_.symbols.size(), Value());
    root_set_.assign(prog_.symbols.size(), 0);
    bool ok = false;
    try {
        Value v = eval(e);
        ok = keep(v);
    } catch (const TemplateError&) {
    } catch (const std::exception&) {  // out of memory, too large: left for the render
    }
    folding_ = false;
    root_.clear();
    out_ = nullptr;
    return ok;
}

// --- limits -----------------------------------------------------------------------------

void Interp::fail_iterations() const {
    fail("template exceeded the limit of " + std::to_string(options_.limits.max_loop_iterations) + " loop iterations");
}

void Interp::check_deadline() const {
    if (std::chrono::steady_clock::now() > deadline_)
        fail("template exceeded the time limit of " + std::to_string(options_.limits.max_milliseconds) + " ms");
}

void Interp::fail_size(uint64_t bytes) const {
    fail("value of " + std::to_string(bytes) + " bytes exceeds the limit of " +
         std::to_string(options_.limits.max_output_bytes) + " bytes");
}

void Interp::fail_output() const {
    fail("output exceeds the limit of " + std::to_string(options_.limits.max_output_bytes) + " bytes");
}

void Interp::check_stack() {
    char probe = 0;
    const char* here = &probe;
    if (stack_base_ && stack_base_ - here > static_cast<std::ptrdiff_t>(options_.limits.max_stack_bytes))
        fail("template nested too deeply (stack limit of " + std::to_string(options_.limits.max_stack_bytes) +
             " bytes reached)");
}

// --- variables --------------------------------------------------------------------------

void Interp::assign(uint32_t sym, Value v) {
    if (!scope_) {
        root_[sym] = std::move(v);
        root_set_[sym] = 1;
        return;
    }
    for (auto& [k, x] : scope_->vars) {
        if (k == sym) {
            x = std::move(v);
            return;
        }
    }
    scope_->vars.emplace_back(sym, std::move(v));
}

Value Interp::undefined_name(uint32_t sym) const { return prog_.undefined_names[sym]; }

// --- statements ---------------------------------------------------------------------------

Flow Interp::exec_body(const Body& body) {
    for (const StmtPtr& p : body) {
        const Stmt* s = p.get();
        if (s->kind == StmtKind::Text) {  // the commonest statement, without a call
            pos_ = s->pos;
            out_->append(static_cast<const TextStmt*>(s)->text);
            check_output();
            continue;
        }
        Flow f = exec(s);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

namespace {

// Restores the output buffer and scope on every exit path.
struct FrameSave {
    std::string*& out;
    Scope*& scope;
    std::string* saved_out;
    Scope* saved_scope;
    FrameSave(std::string*& o, Scope*& s) : out(o), scope(s), saved_out(o), saved_scope(s) {}
    ~FrameSave() {
        out = saved_out;
        scope = saved_scope;
    }
};

}  // namespace

std::string Interp::capture(const Body& body, bool new_scope) {
    std::string buf;
    FrameSave save(out_, scope_);
    ScopeRef sc;
    if (new_scope) {
        sc = ScopeRef(new Scope(scope_));
        scope_ = sc.get();
    }
    out_ = &buf;
    exec_body(body);
    return buf;
}

void Interp::emit(const Value& v) {
    if (v.is_string()) out_->append(v.str());
    else append_str(*out_, v);
    check_output();
}

// The stack is checked where recursion can happen (macro calls, loops); between
// those points the parser's nesting limit bounds what a statement can use.
Flow Interp::exec(const Stmt* s) {
    pos_ = s->pos;
    switch (s->kind) {
        case StmtKind::Text: {
            const auto* t = static_cast<const TextStmt*>(s);
            out_->append(t->text);
            check_output();
            return Flow::Normal;
        }
        case StmtKind::Output: {
            const Expr* e = static_cast<const OutputStmt*>(s)->expr.get();
            if (e->constant) {
                // jinja2 evaluates a constant {{ }} when compiling, with its getitem for
                // slices; if that raises, it evaluates again at run time.
                Value v;
                bool folded = true;
                folding_ = true;
                try {
                    v = eval(e);
                } catch (const TemplateError&) {
                    folded = false;
                }
                folding_ = false;
                emit(folded ? v : eval(e));
                return Flow::Normal;
            }
            if (e->kind == ExprKind::Concat) {
                // {{ a ~ b ~ c }}: str() of each part straight into the output
                for (const ExprPtr& p : static_cast<const ConcatExpr*>(e)->parts) {
                    Value tmp;
                    const Value* v = borrow(p.get(), tmp);
                    if (v->is_string()) out_->append(v->str());
                    else append_str(*out_, *v);
                }
                check_output();
                return Flow::Normal;
            }
            if (e->kind == ExprKind::Call) {
                // {{ macro(...) }}: the macro renders straight into the output
                const auto* c = static_cast<const CallExpr*>(e);
                if (c->callee->kind == ExprKind::Name) {
                    Value callee = eval(c->callee.get());
                    if (callee.is_object() && callee.object().otype == ObjType::Macro) {
                        ArgStore store;
                        eval_args(c->args, store);
                        pos_ = c->pos;
                        Args args = store.args();
                        call_macro(static_cast<MacroObj&>(callee.object()), args, out_);
                        check_output();
                        return Flow::Normal;
                    }
                    ArgStore store;
                    eval_args(c->args, store);
                    pos_ = c->pos;
                    Args args = store.args();
                    emit(call(callee, args));
                    return Flow::Normal;
                }
            }
            if (e->kind == ExprKind::Binary && static_cast<const BinaryExpr*>(e)->op == BinOp::Add) {
                emit_add(static_cast<const BinaryExpr*>(e));
                return Flow::Normal;
            }
            Value tmp;
            emit(*borrow(e, tmp));
            return Flow::Normal;
        }
        case StmtKind::If: {
            const auto* i = static_cast<const IfStmt*>(s);
            for (const auto& [test, body] : i->branches)
                if (cond(test.get())) return exec_body(body);
            return exec_body(i->else_body);
        }
        case StmtKind::For: {
            const auto* f = static_cast<const ForStmt*>(s);
            if (f->items != ForStmt::Items::No) {
                exec_for_items(f);
                return Flow::Normal;
            }
            Value iterable = eval(f->iter.get());
            exec_for(f, iterable, 0, scope_);
            return Flow::Normal;
        }
        case StmtKind::Set: {
            const auto* st = static_cast<const SetStmt*>(s);
            exec_set(st->target, eval(st->value.get()));
            return Flow::Normal;
        }
        case StmtKind::SetBlock: {
            const auto* st = static_cast<const SetBlockStmt*>(s);
            Value v = Value::string(capture(st->body, true));
            for (const auto& f : st->filters) v = eval_filter(f.get(), &v);
            pos_ = s->pos;
            exec_set(st->target, std::move(v));
            return Flow::Normal;
        }
        case StmtKind::Macro: exec_macro_def(static_cast<const MacroStmt*>(s)); return Flow::Normal;
        case StmtKind::CallBlock: exec_call_block(static_cast<const CallBlockStmt*>(s)); return Flow::Normal;
        case StmtKind::FilterBlock: {
            const auto* fb = static_cast<const FilterBlockStmt*>(s);
            Value v = Value::string(capture(fb->body, true));
            for (const auto& f : fb->filters) v = eval_filter(f.get(), &v);
            emit(v);
            return Flow::Normal;
        }
        case StmtKind::With: {
            const auto* w = static_cast<const WithStmt*>(s);
            std::vector<Value> values;
            values.reserve(w->assigns.size());
            for (const auto& a : w->assigns) values.push_back(eval(a.second.get()));
            FrameSave save(out_, scope_);
            ScopeRef sc(new Scope(scope_));
            scope_ = sc.get();
            for (size_t n = 0; n < values.size(); ++n) exec_set(w->assigns[n].first, std::move(values[n]));
            return exec_body(w->body);
        }
        case StmtKind::Break: return Flow::Break;
        case StmtKind::Continue: return Flow::Continue;
        case StmtKind::Scope: {
            const auto* sc = static_cast<const ScopeStmt*>(s);
            if (!sc->new_scope) return exec_body(sc->body);
            FrameSave save(out_, scope_);
            ScopeRef inner(new Scope(scope_));
            scope_ = inner.get();
            exec_body(sc->body);
            return Flow::Normal;
        }
    }
    return Flow::Normal;
}

void Interp::exec_set(const Target& t, Value v) {
    switch (t.kind) {
        case Target::Kind::Name: assign(t.sym, std::move(v)); return;
        case Target::Kind::Tuple: {
            std::vector<Value> copied;
            const Value* items;  // a list's or tuple's own items (assigning names cannot change them)
            size_t n_items;
            if (v.is_list()) {
                items = v.list().items.data();
                n_items = v.list().items.size();
            } else {
                copied = to_list(v);
                items = copied.data();
                n_items = copied.size();
            }
            if (n_items != t.items.size()) {
                if (n_items > t.items.size())
                    fail("too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
                fail("not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                     std::to_string(n_items) + ")");
            }
            for (size_t n = 0; n < n_items; ++n) exec_set(t.items[n], items[n]);
            return;
        }
        case Target::Kind::NsAttr: {
            const Value* ns = lookup(t.sym);
            if (!ns || !ns->is_object() || ns->object().otype != ObjType::Namespace)
                fail("cannot assign attribute on non-namespace object");
            if (!t.attr.empty() && t.attr[0] == '_')
                fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" + t.attr +
                     "'. Please rename the attribute.");
            will_modify(ns->object());
            DictObj& attrs = static_cast<NamespaceObj&>(ns->object()).attrs.dict();
            if (Value* slot = const_cast<Value*>(attrs.find_str(t.attr))) *slot = std::move(v);
            else attrs.set(t.attr_key, std::move(v));
            return;
        }
    }
}

// Most loops keep their scope and loop object on the native stack and iterate a
// list's items in place: nothing in their body can keep either (ForStmt::captures,
// loop_escapes), and a list modified while it is iterated is copied first
// (detach_loops), so the loop still sees the items it started with.
void Interp::exec_for(const ForStmt* f, const Value& iterable, int depth0, Scope* outer) {
    if (f->captures || f->loop_escapes) {
        exec_for_on_heap(f, iterable, depth0, outer);
        return;
    }
    check_stack();
    FrameSave save(out_, scope_);
    // The loop object before the scope: the scope's `loop` variable refers to it,
    // so the scope must be destroyed first.
    LoopObj loop{OnStack{}};
    Scope frame(outer, OnStack{});
    loop.depth0 = depth0;
    if (f->filter) {
        std::vector<Value> items = to_list(iterable);
        std::vector<Value> kept;
        for (Value& item : items) {
            tick();
            frame.vars.clear();
            scope_ = &frame;
            exec_set(f->target, item);
            if (cond(f->filter.get())) kept.push_back(std::move(item));
        }
        loop.own(std::move(kept));
    } else if (iterable.is_list()) {
        loop.items = iterable.list().items.data();
        loop.n_items = iterable.list().items.size();
        loop.borrowed = &iterable.list();
    } else {
        loop.own(to_list(iterable));
    }
    if (loop.n_items == 0) {
        frame.vars.clear();
        scope_ = &frame;
        exec_body(f->else_body);
        return;
    }
    struct Borrowing {  // registered while the loop iterates a list in place
        std::vector<LoopObj*>& loops;
        bool on;
        Borrowing(std::vector<LoopObj*>& l, LoopObj* loop) : loops(l), on(loop->borrowed != nullptr) {
            if (on) loops.push_back(loop);
        }
        ~Borrowing() {
            if (on) loops.pop_back();
        }
    } borrowing(borrowing_loops_, &loop);

    frame.vars.clear();
    size_t fixed = 0;  // the entries kept from one iteration to the next
    if (f->loop_var) {
        frame.vars.emplace_back(prog_.sym_loop, Value::from_obj(static_cast<Object*>(&loop)));
        fixed = 1;
    }
    const bool simple_target = f->target.kind == Target::Kind::Name;
    if (simple_target) frame.vars.emplace_back(f->target.sym, Value());
    for (size_t n = 0; n < loop.n_items; ++n) {
        tick();
        loop.index0 = n;
        scope_ = &frame;
        if (simple_target) {
            frame.vars.truncate(fixed + 1);  // drop what the body set in the last iteration
            frame.vars[fixed].second = loop.items[n];
        } else {
            frame.vars.truncate(fixed);
            exec_set(f->target, loop.items[n]);
        }
        if (exec_body(f->body) == Flow::Break) break;
    }
}

// for k, v in d|items / d.items() over a dict: k and v are bound from the dict's
// entries without the iterator, tuples and list that evaluating the expression
// builds (plain dicts cannot change while a template runs). Anything but a dict
// goes the general way, from the object already evaluated.
void Interp::exec_for_items(const ForStmt* f) {
    const bool by_filter = f->items == ForStmt::Items::Filter;
    const FilterExpr* fe = by_filter ? static_cast<const FilterExpr*>(f->iter.get()) : nullptr;
    const CallExpr* call = by_filter ? nullptr : static_cast<const CallExpr*>(f->iter.get());
    const GetAttrExpr* g = by_filter ? nullptr : static_cast<const GetAttrExpr*>(call->callee.get());
    Value obj = eval(by_filter ? fe->subject.get() : g->obj.get());
    if (!obj.is_dict()) {
        Value iterable;
        if (by_filter) {
            pos_ = fe->pos;
            Args none;
            iterable = fe->fn(*this, obj, none);
        } else {
            if (obj.is_undefined()) {
                pos_ = g->pos;
                fail_undefined(obj);
            }
            iterable = method_call(g, obj, call->args);
        }
        exec_for(f, iterable, 0, scope_);
        return;
    }
    check_stack();
    const DictObj& d = obj.dict();
    const size_t n = d.size();
    if (by_filter) tick(n);  // the general way consumes the iterator before the loop
    FrameSave save(out_, scope_);
    Scope frame(scope_, OnStack{});
    scope_ = &frame;
    if (n == 0) {
        exec_body(f->else_body);
        return;
    }
    frame.vars.emplace_back(f->target.items[0].sym, Value());
    frame.vars.emplace_back(f->target.items[1].sym, Value());
    for (size_t i = 0; i < n && i < d.entries.size(); ++i) {
        tick();
        scope_ = &frame;
        frame.vars.truncate(2);  // drop what the body set in the last iteration
        frame.vars[0].second = d.entries[i].first;
        frame.vars[1].second = d.entries[i].second;
        if (exec_body(f->body) == Flow::Break) break;
    }
}

void Interp::detach_loops(const HeapObject& list) {
    for (LoopObj* loop : borrowing_loops_)
        if (loop->borrowed == &list) loop->own(std::vector<Value>(loop->items, loop->items + loop->n_items));
}

void Interp::exec_for_on_heap(const ForStmt* f, const Value& iterable, int depth0, Scope* outer) {
    check_stack();
    std::vector<Value> items = to_list(iterable);
    FrameSave save(out_, scope_);
    ScopeRef iter_scope(new Scope(outer));
    auto fresh_scope = [&]() {
        // A macro defined in the previous iteration may hold on to its scope.
        if (iter_scope->refs > 1) iter_scope = ScopeRef(new Scope(outer));
        else iter_scope->vars.clear();
        scope_ = iter_scope.get();
    };
    if (f->filter) {
        std::vector<Value> kept;
        for (Value& item : items) {
            tick();
            fresh_scope();
            exec_set(f->target, item);
            if (cond(f->filter.get())) kept.push_back(std::move(item));
        }
        items.swap(kept);
    }
    if (items.empty()) {
        scope_ = outer;
        ScopeRef else_scope(new Scope(outer));
        scope_ = else_scope.get();
        exec_body(f->else_body);
        return;
    }
    Value loop_value = Value::from_obj(new LoopObj());
    auto& loop = static_cast<LoopObj&>(loop_value.object());
    loop.own(std::move(items));
    loop.depth0 = depth0;
    if (f->recursive) {
        loop.stmt = f;
        loop.scope = outer;
        if (outer) ref_inc(outer);
    }
    const bool simple_target = f->target.kind == Target::Kind::Name;
    for (size_t n = 0; n < loop.n_items; ++n) {
        tick();
        loop.index0 = n;
        if (simple_target && iter_scope->refs == 1 && iter_scope->vars.size() >= 2) {
            // Same scope as the last iteration: keep the two slots, drop what the body set.
            ScopeVars& vars = iter_scope->vars;
            vars.truncate(2);
            vars[1].second = loop.items[n];
            scope_ = iter_scope.get();
        } else {
            fresh_scope();
            scope_->vars.emplace_back(prog_.sym_loop, loop_value);
            exec_set(f->target, loop.items[n]);
        }
        if (exec_body(f->body) == Flow::Break) break;
    }
}

void Interp::exec_macro_def(const MacroStmt* s) {
    assign(s->sym, Value::from_obj(new MacroObj(&s->def, scope_)));
}

void Interp::exec_call_block(const CallBlockStmt* s) {
    Value caller = Value::from_obj(new MacroObj(&s->caller, scope_));
    const auto* call = static_cast<const CallExpr*>(s->call.get());
    ArgStore store;
    Value callee;
    Value self;
    bool is_method = false;
    const GetAttrExpr* g = nullptr;
    if (call->callee->kind == ExprKind::GetAttr) {
        g = static_cast<const GetAttrExpr*>(call->callee.get());
        self = eval(g->obj.get());
        is_method = true;
    } else {
        callee = eval(call->callee.get());
    }
    eval_args(call->args, store);
    store.push_kw(KwArg{"caller", caller, Value()});
    pos_ = s->pos;
    if (is_method) callee = getattr(self, g->name);
    Args args = store.args();
    emit(this->call(callee, args));
}

// --- expressions ---------------------------------------------------------------------------

// No stack check here: the parser bounds expression nesting, so the checks in
// exec() and macro calls, between which only bounded nesting happens, suffice.
Value Interp::eval(const Expr* e) {
    switch (e->kind) {
        case ExprKind::Const: return static_cast<const ConstExpr*>(e)->value;
        case ExprKind::Name: return eval_name(static_cast<const NameExpr*>(e));
        case ExprKind::GetAttr: return eval_getattr(static_cast<const GetAttrExpr*>(e));
        case ExprKind::GetItem: {
            const auto* g = static_cast<const GetItemExpr*>(e);
            Value obj_tmp, key_tmp;
            if (g->key->kind == ExprKind::Slice) {
                const Value* obj = g->key->pure ? borrow(g->obj.get(), obj_tmp) : &(obj_tmp = eval(g->obj.get()));
                return eval_slice(*obj, static_cast<const SliceExpr*>(g->key.get()), folding_);
            }
            const Value* obj = g->key->pure ? borrow(g->obj.get(), obj_tmp) : &(obj_tmp = eval(g->obj.get()));
            const Value* key = borrow(g->key.get(), key_tmp);
            pos_ = e->pos;
            return getitem(*obj, *key);
        }
        case ExprKind::Slice: fail("slice outside a subscript");
        case ExprKind::Call: return eval_call(static_cast<const CallExpr*>(e));
        case ExprKind::Filter: return eval_filter(static_cast<const FilterExpr*>(e), nullptr);
        case ExprKind::Test: return Value::boolean(eval_test(static_cast<const TestExpr*>(e)));
        case ExprKind::Not: return Value::boolean(!cond(static_cast<const UnaryExpr*>(e)->operand.get()));
        case ExprKind::Neg: {
            Value v = eval(static_cast<const UnaryExpr*>(e)->operand.get());
            pos_ = e->pos;
            return unary_minus(v);
        }
        case ExprKind::Pos: {
            Value v = eval(static_cast<const UnaryExpr*>(e)->operand.get());
            pos_ = e->pos;
            return unary_plus(v);
        }
        case ExprKind::Binary: {
            const auto* b = static_cast<const BinaryExpr*>(e);
            if (b->op == BinOp::Add) return eval_add(b);
            Value l = eval(b->left.get());
            Value r = eval(b->right.get());
            pos_ = e->pos;
            if (b->op == BinOp::Pow && b->left->constant && !b->right->constant && !folding_ && l.is_number() &&
                l.as_float() < 0) {
                // jinja2 folds a constant base to a literal and writes "-2.5 ** x" into the
                // Python it compiles, which Python reads as -(2.5 ** x). Reproduced as is.
                return unary_minus(binary_op(*this, BinOp::Pow, unary_minus(l), r));
            }
            return binary_op(*this, b->op, l, r);
        }
        case ExprKind::And: {
            const auto* b = static_cast<const LogicExpr*>(e);
            Value l = eval(b->left.get());
            if (!truthy(l)) return l;
            return eval(b->right.get());
        }
        case ExprKind::Or: {
            const auto* b = static_cast<const LogicExpr*>(e);
            Value l = eval(b->left.get());
            if (truthy(l)) return l;
            return eval(b->right.get());
        }
        case ExprKind::Compare: return Value::boolean(compare(static_cast<const CompareExpr*>(e)));
        case ExprKind::Concat: return eval_concat(static_cast<const ConcatExpr*>(e));
        case ExprKind::Cond: {
            const auto* c = static_cast<const CondExpr*>(e);
            if (cond(c->test.get())) return eval(c->then.get());
            if (c->otherwise) return eval(c->otherwise.get());
            return Value::undefined("the inline if-expression on line evaluated to false and no else section was defined.");
        }
        case ExprKind::List:
        case ExprKind::Tuple: {
            const auto* l = static_cast<const SeqExpr*>(e);
            Value out = e->kind == ExprKind::List ? Value::new_list() : Value::new_tuple();
            out.list().items.reserve(l->items.size());
            for (const ExprPtr& x : l->items) out.list().items.push_back(eval(x.get()));
            return out;
        }
        case ExprKind::Dict: {
            const auto* d = static_cast<const DictExpr*>(e);
            Value out = Value::new_dict();
            for (const auto& [k, v] : d->items) {
                Value key = eval(k.get());
                Value val = eval(v.get());
                pos_ = k->pos;
                out.dict().set(std::move(key), std::move(val));
            }
            return out;
        }
    }
    return Value();
}

// a ~ b ~ c: str() of each part, joined, sized once. Parts are borrowed in place
// while what follows them is pure (see borrow), which is nearly always.
Value Interp::eval_concat(const ConcatExpr* e) {
    const auto& parts = e->parts;
    constexpr size_t k_inline = 8;
    if (parts.size() <= k_inline) {
        Value tmps[k_inline];
        const Value* vals[k_inline];
        size_t total = 0;
        for (size_t i = 0; i < parts.size(); ++i) {
            bool rest_pure = true;
            for (size_t j = i + 1; j < parts.size(); ++j) rest_pure &= parts[j]->pure;
            vals[i] = rest_pure ? borrow(parts[i].get(), tmps[i]) : &(tmps[i] = eval(parts[i].get()));
            if (vals[i]->is_string()) total += vals[i]->str().size();
        }
        std::string s;
        s.reserve(total + 16);
        for (size_t i = 0; i < parts.size(); ++i) {
            if (vals[i]->is_string()) s += vals[i]->str();
            else append_str(s, *vals[i]);
            check_size(s.size());
        }
        return Value::string(std::move(s));
    }
    ArgStore store;
    size_t total = 0;
    for (const ExprPtr& p : parts) {
        Value v = eval(p.get());
        if (v.is_string()) total += v.str().size();
        store.push(std::move(v));
    }
    Args a = store.args();
    std::string s;
    s.reserve(total + 16);
    for (size_t i = 0; i < a.n_pos; ++i) {
        if (a.pos[i].is_string()) s += a.pos[i].str();
        else append_str(s, a.pos[i]);
        check_size(s.size());
    }
    return Value::string(std::move(s));
}

// a + b + c + ...: the left-leaning chain is walked iteratively, and runs of plain
// strings are appended into one buffer instead of building every intermediate
// string. Operands are evaluated and combined in Python's order, so errors and
// Markup escaping are the same as pairwise evaluation.
Value Interp::eval_add(const BinaryExpr* top) {
    constexpr size_t k_inline = 32;
    const BinaryExpr* inline_nodes[k_inline];
    std::vector<const BinaryExpr*> more;
    size_t n = 0;
    const Expr* cur = top;
    while (cur->kind == ExprKind::Binary && static_cast<const BinaryExpr*>(cur)->op == BinOp::Add) {
        const auto* b = static_cast<const BinaryExpr*>(cur);
        if (n < k_inline) inline_nodes[n] = b;
        else more.push_back(b);
        ++n;
        cur = b->left.get();
    }
    auto node = [&](size_t i) { return i < k_inline ? inline_nodes[i] : more[i - k_inline]; };  // i = 0: the top
    Value acc = eval(cur);
    std::string buf;
    bool building = false;  // buf holds acc's text (acc is a plain string)
    for (size_t i = n; i-- > 0;) {
        const BinaryExpr* b = node(i);
        Value r_tmp;
        const Value& r = *borrow(b->right.get(), r_tmp);
        pos_ = b->pos;
        const bool r_plain = r.is_string() && !r.safe();
        if (r_plain && (building || (acc.is_string() && !acc.safe()))) {
            if (!building) {
                buf.reserve(acc.str().size() + r.str().size() + 64);
                buf = acc.str();
                building = true;
            }
            buf += r.str();
            check_size(buf.size());
            continue;
        }
        if (building) {
            acc = Value::string(std::move(buf));
            buf.clear();
            building = false;
        }
        acc = binary_op(*this, BinOp::Add, acc, r);
    }
    if (building) return Value::string(std::move(buf));
    return acc;
}

// {{ a + b + ... }}: while the operands are plain strings they are appended to the
// output directly; on anything else the text so far becomes the accumulated value
// and evaluation continues exactly as eval_add does.
void Interp::emit_add(const BinaryExpr* top) {
    constexpr size_t k_inline = 32;
    const BinaryExpr* inline_nodes[k_inline];
    std::vector<const BinaryExpr*> more;
    size_t n = 0;
    const Expr* cur = top;
    while (cur->kind == ExprKind::Binary && static_cast<const BinaryExpr*>(cur)->op == BinOp::Add) {
        const auto* b = static_cast<const BinaryExpr*>(cur);
        if (n < k_inline) inline_nodes[n] = b;
        else more.push_back(b);
        ++n;
        cur = b->left.get();
    }
    auto node = [&](size_t i) { return i < k_inline ? inline_nodes[i] : more[i - k_inline]; };
    std::string& out = *out_;
    const size_t start = out.size();
    Value acc;
    bool direct;  // the operands so far are in `out` from `start` on
    {
        Value tmp;
        const Value* first = borrow(cur, tmp);
        direct = first->is_string() && !first->safe();
        if (direct) out.append(first->str());
        else acc = *first;
    }
    for (size_t i = n; i-- > 0;) {
        const BinaryExpr* b = node(i);
        Value r_tmp;
        const Value& r = *borrow(b->right.get(), r_tmp);
        pos_ = b->pos;
        if (direct) {
            if (r.is_string() && !r.safe()) {
                out.append(r.str());
                check_output();
                continue;
            }
            acc = Value::string(out.substr(start));
            out.resize(start);
            direct = false;
        }
        acc = binary_op(*this, BinOp::Add, acc, r);
    }
    if (direct) {
        check_output();
        return;
    }
    emit(acc);
}

Value Interp::eval_name(const NameExpr* e) {
    if (const Value* v = lookup(e->sym)) return *v;
    return undefined_name(e->sym);
}

// obj.name for an evaluated obj (dict keys, methods, object attributes).
Value Interp::attr_of(const GetAttrExpr* e, const Value& obj) {
    pos_ = e->pos;
    if (e->loop_attr >= 0 && obj.is_object() && obj.object().otype == ObjType::Loop)
        return loop_attr_id(static_cast<LoopObj&>(obj.object()), e->loop_attr);
    switch (obj.kind()) {
        case Kind::Dict:
            if (e->dict_method >= 0) return Value::from_obj(new BoundMethodObj(obj, MethodOwner::Dict, e->dict_method));
            if (const Value* v = obj.dict().find_str(e->name)) return *v;
            return e->dict_missing;
        case Kind::String:
            if (e->str_method >= 0) return Value::from_obj(new BoundMethodObj(obj, MethodOwner::Str, e->str_method));
            return Value::undefined("'str object' has no attribute '" + e->name + "'");
        case Kind::List:
            if (e->list_method >= 0) return Value::from_obj(new BoundMethodObj(obj, MethodOwner::List, e->list_method));
            return getattr(obj, e->name);
        default: return getattr(obj, e->name);
    }
}

// obj.name on a loop or a namespace, in place where the value lives somewhere.
const Value* Interp::object_attr(const GetAttrExpr* g, const Value& obj, Value& tmp) {
    Object& o = obj.object();
    if (o.otype == ObjType::Loop && g->loop_attr >= 0) {
        auto& loop = static_cast<LoopObj&>(o);
        if (g->loop_attr == 9 && loop.index0 > 0) return &loop.items[loop.index0 - 1];  // previtem
        if (g->loop_attr == 10 && loop.index0 + 1 < loop.n_items) return &loop.items[loop.index0 + 1];  // nextitem
        tmp = loop_attr_id(loop, g->loop_attr);
        return &tmp;
    }
    if (o.otype == ObjType::Namespace && !g->name.empty() && g->name[0] != '_')
        if (const Value* v = static_cast<NamespaceObj&>(o).attrs.dict().find_str(g->name)) return v;
    tmp = attr_of(g, obj);
    return &tmp;
}

Value Interp::eval_getattr(const GetAttrExpr* e) {
    Value tmp;
    const Value* base = borrow(e->obj.get(), tmp);
    return attr_of(e, *base);
}

// The value of e without copying it when it already lives somewhere: a variable,
// a constant, or an entry of a dict or list reachable from one (when a temporary
// has to be made, it is kept in `tmp`, which then owns what the pointer reaches).
// The pointer stays valid while only pure expressions are evaluated: nothing but
// statements rebinds variables, and only calls modify containers.
const Value* Interp::borrow_slow(const Expr* e, Value& tmp) {
    switch (e->kind) {
        case ExprKind::Const: return &static_cast<const ConstExpr*>(e)->value;
        case ExprKind::Name: {
            const auto* n = static_cast<const NameExpr*>(e);
            if (const Value* v = lookup(n->sym)) return v;
            tmp = prog_.undefined_names[n->sym];
            return &tmp;
        }
        case ExprKind::GetAttr: {
            const auto* g = static_cast<const GetAttrExpr*>(e);
            const Value* base = borrow(g->obj.get(), tmp);
            if (base->is_dict() && g->dict_method < 0) {
                if (const Value* v = base->dict().find_str(g->name)) return v;
                tmp = g->dict_missing;
                return &tmp;
            }
            Value r = attr_of(g, *base);
            tmp = std::move(r);
            return &tmp;
        }
        case ExprKind::GetItem: {
            const auto* g = static_cast<const GetItemExpr*>(e);
            if (g->key->kind == ExprKind::Slice || !g->key->pure) break;
            const Value* base = borrow(g->obj.get(), tmp);
            Value key_tmp;
            const Value* key = borrow(g->key.get(), key_tmp);
            pos_ = e->pos;
            if (base->is_dict() && key->is_string()) {
                if (const Value* v = base->dict().find_str(key->str())) return v;
            } else if (base->is_list() && key->is_integral()) {
                const ListObj& l = base->list();
                if (l.seq != SeqKind::DictKeys && l.seq != SeqKind::DictValues && l.seq != SeqKind::DictItems) {
                    const auto n = static_cast<int64_t>(l.items.size());
                    int64_t i = key->as_int();
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return &l.items[static_cast<size_t>(i)];
                }
            }
            Value r = getitem(*base, *key);
            tmp = std::move(r);
            return &tmp;
        }
        default: break;
    }
    tmp = eval(e);
    return &tmp;
}

void Interp::eval_args(const ArgExprs& a, ArgStore& store) {
    for (const ExprPtr& x : a.pos) store.push(eval(x.get()));
    if (a.dyn_args) {
        Value extra = eval(a.dyn_args.get());
        for (Value& x : to_list(extra)) store.push(std::move(x));
    }
    for (const KwExpr& k : a.kw) store.push_kw(KwArg{k.name, eval(k.value.get()), Value()});
    if (a.dyn_kwargs) {
        Value extra = eval(a.dyn_kwargs.get());
        if (!extra.is_dict()) fail_type("argument after ** must be a mapping, not " + std::string(type_name(extra)));
        for (const auto& [k, v] : extra.dict().entries) {
            if (!k.is_string()) fail_type("keywords must be strings");
            store.push_kw(KwArg{k.str(), v, k});  // `keep` owns the name's storage
        }
    }
}

Value Interp::method_call(const GetAttrExpr* g, const Value& obj, const ArgExprs& a) {
    MethodOwner owner;
    int id = -1;
    if (obj.is_string()) owner = MethodOwner::Str, id = g->str_method;
    else if (obj.is_list()) owner = MethodOwner::List, id = g->list_method;
    else if (obj.is_dict()) owner = MethodOwner::Dict, id = g->dict_method;
    ArgStore store;
    if (id >= 0) {
        eval_args(a, store);
        pos_ = g->pos;
        Args args = store.args();
        return call_method(*this, obj, owner, id, args);
    }
    pos_ = g->pos;
    Value callee = obj.is_dict() ? (obj.dict().find_str(g->name) ? *obj.dict().find_str(g->name)
                                                                   : Value::undefined("'dict object' has no attribute '" + g->name + "'"))
                                 : getattr(obj, g->name);
    eval_args(a, store);
    pos_ = g->pos;
    Args args = store.args();
    return call(callee, args);
}

Value Interp::eval_call(const CallExpr* e) {
    if (e->callee->kind == ExprKind::GetAttr) {
        const auto* g = static_cast<const GetAttrExpr*>(e->callee.get());
        Value obj = eval(g->obj.get());
        if (obj.is_undefined()) {
            pos_ = g->pos;
            fail_undefined(obj);
        }
        return method_call(g, obj, e->args);
    }
    Value callee = eval(e->callee.get());
    ArgStore store;
    eval_args(e->args, store);
    pos_ = e->pos;
    Args args = store.args();
    return call(callee, args);
}

// A filter's or test's function on its subject; arguments are evaluated first,
// and a call without any needs no argument storage.
template <class E>
auto Interp::call_builtin(const E* e, const Value& subject, const char* kind) {
    if (e->args.none) {
        pos_ = e->pos;
        if (!e->fn) fail(std::string("No ") + kind + " named '" + e->name + "'.");
        Args args;
        return e->fn(*this, subject, args);
    }
    ArgStore store;
    eval_args(e->args, store);
    pos_ = e->pos;
    if (!e->fn) fail(std::string("No ") + kind + " named '" + e->name + "'.");
    Args args = store.args();
    return e->fn(*this, subject, args);
}

Value Interp::eval_filter(const FilterExpr* e, const Value* input) {
    Value tmp;
    const Value* peeked = input;
    if (!peeked) {
        if (!e->subject) peeked = &tmp;
        else if (e->args.pure) peeked = borrow(e->subject.get(), tmp);
        else peeked = &(tmp = eval(e->subject.get()));
    }
    return call_builtin(e, *peeked, "filter");
}

bool Interp::eval_test(const TestExpr* e) {
    Value tmp;
    const Value& subject = e->args.pure ? *borrow(e->subject.get(), tmp) : (tmp = eval(e->subject.get()));
    return call_builtin(e, subject, "test");
}

// truthy(eval(e)) for the conditions of if, elif, inline if, loop filters and not:
// comparisons, tests and and / or chains give their truth without building the
// Values they would return (same evaluation order, same errors).
bool Interp::cond(const Expr* e) {
    switch (e->kind) {
        case ExprKind::Compare: return compare(static_cast<const CompareExpr*>(e));
        case ExprKind::Test: return eval_test(static_cast<const TestExpr*>(e));
        case ExprKind::Not: return !cond(static_cast<const UnaryExpr*>(e)->operand.get());
        case ExprKind::And: {
            const auto* b = static_cast<const LogicExpr*>(e);
            return cond(b->left.get()) && cond(b->right.get());
        }
        case ExprKind::Or: {
            const auto* b = static_cast<const LogicExpr*>(e);
            return cond(b->left.get()) || cond(b->right.get());
        }
        default: {
            Value tmp;
            return truthy(*borrow(e, tmp));
        }
    }
}

bool Interp::compare_op(CmpOp op, const Value& left, const Value& right) {
    if (left.is_int() && right.is_int()) {  // indices and counters
        const int64_t a = left.as_int(), b = right.as_int();
        switch (op) {
            case CmpOp::Eq: return a == b;
            case CmpOp::Ne: return a != b;
            case CmpOp::Lt: return a < b;
            case CmpOp::Gt: return a > b;
            case CmpOp::Le: return a <= b;
            case CmpOp::Ge: return a >= b;
            default: break;
        }
    }
    switch (op) {
        case CmpOp::Eq:
            if (left.is_string() && right.is_string())
                return left.str_obj() == right.str_obj() || text::same(left.str(), right.str());
            return equal(left, right);
        case CmpOp::Ne:
            if (left.is_string() && right.is_string())
                return left.str_obj() != right.str_obj() && !text::same(left.str(), right.str());
            return !equal(left, right);
        case CmpOp::Lt: return less(left, right);
        case CmpOp::Gt: return less(right, left);
        case CmpOp::Le: return less(left, right) || equal(left, right);
        case CmpOp::Ge: return less(right, left) || equal(left, right);
        case CmpOp::In: return contains(*this, right, left);
        case CmpOp::NotIn: return !contains(*this, right, left);
    }
    return false;
}

bool Interp::compare(const CompareExpr* e) {
    // Operands are borrowed when what is evaluated after them is pure (see borrow).
    if (e->rest.size() == 1) {  // a op b: nearly every comparison
        const auto& [op, expr] = e->rest[0];
        Value left_tmp, right_tmp;
        const Value* left = expr->pure ? borrow(e->first.get(), left_tmp) : &(left_tmp = eval(e->first.get()));
        const Value* right = borrow(expr.get(), right_tmp);
        pos_ = e->pos;
        return compare_op(op, *left, *right);
    }
    bool rest_pure = true;
    for (const auto& r : e->rest) rest_pure &= r.second->pure;
    Value left_tmp;
    const Value* left_p = rest_pure ? borrow(e->first.get(), left_tmp) : &(left_tmp = eval(e->first.get()));
    for (size_t k = 0; k < e->rest.size(); ++k) {
        const auto& [op, expr] = e->rest[k];
        Value right_tmp;
        const Value* right_p = borrow(expr.get(), right_tmp);
        pos_ = e->pos;
        if (!compare_op(op, *left_p, *right_p)) return false;
        if (k + 1 < e->rest.size()) {
            left_tmp = *right_p;  // the next comparison's left operand, owned
            left_p = &left_tmp;
        }
    }
    return true;
}

Value Interp::eval_slice(const Value& obj, const SliceExpr* s, bool folded) {
    Value start = s->start ? eval(s->start.get()) : Value::none();
    Value stop = s->stop ? eval(s->stop.get()) : Value::none();
    Value step = s->step ? eval(s->step.get()) : Value::none();
    pos_ = s->pos;
    return slice_value(*this, obj, start, stop, step, folded);
}

// --- services -----------------------------------------------------------------------------

Value Interp::getattr(const Value& obj, std::string_view name) {
    auto missing = [&]() {
        return Value::undefined("'" + std::string(type_name(obj)) + " object' has no attribute '" + std::string(name) + "'");
    };
    switch (obj.kind()) {
        case Kind::Undefined: fail_undefined(obj);
        case Kind::String: {
            int id = find_method(MethodOwner::Str, name);
            if (id >= 0) return Value::from_obj(new BoundMethodObj(obj, MethodOwner::Str, id));
            return missing();
        }
        case Kind::List: {
            int id = find_method(MethodOwner::List, name);
            if (id >= 0) return Value::from_obj(new BoundMethodObj(obj, MethodOwner::List, id));
            if (obj.list().seq == SeqKind::Group && obj.list().items.size() == 2) {
                if (name == "grouper") return obj.list().items[0];
                if (name == "list") return obj.list().items[1];
            }
            return missing();
        }
        case Kind::Dict: {
            int id = find_method(MethodOwner::Dict, name);
            if (id >= 0) return Value::from_obj(new BoundMethodObj(obj, MethodOwner::Dict, id));
            if (const Value* v = obj.dict().find_str(name)) return *v;
            return missing();
        }
        case Kind::Object: {
            Object& o = obj.object();
            switch (o.otype) {
                case ObjType::Namespace: {
                    if (!name.empty() && name[0] == '_') return missing();
                    if (const Value* v = static_cast<NamespaceObj&>(o).attrs.dict().find_str(name)) return *v;
                    return missing();
                }
                case ObjType::Loop: return loop_attr(static_cast<LoopObj&>(o), name);
                case ObjType::Cycler: {
                    auto& c = static_cast<CyclerObj&>(o);
                    if (name == "current") return c.items.empty() ? Value() : c.items[c.pos];
                    if (name == "next") return Value::from_obj(new BoundMethodObj(obj, ObjMethod::CyclerNext));
                    if (name == "reset") return Value::from_obj(new BoundMethodObj(obj, ObjMethod::CyclerReset));
                    return missing();
                }
                case ObjType::Macro: {
                    auto& m = static_cast<MacroObj&>(o);
                    if (name == "name") return Value::string(m.def->name);
                    if (name == "arguments") {
                        Value t = Value::new_tuple();
                        for (const auto& p : m.def->param_names) t.list().items.push_back(Value::string(p));
                        return t;
                    }
                    if (name == "catch_kwargs") return Value::boolean(m.def->uses_kwargs);
                    if (name == "catch_varargs") return Value::boolean(m.def->uses_varargs);
                    if (name == "caller") return Value::boolean(m.def->uses_caller);
                    return missing();
                }
                case ObjType::Builtin: {
                    auto& b = static_cast<BuiltinObj&>(o);
                    if (b.name == "dict" && name == "fromkeys")
                        return Value::from_obj(new BoundMethodObj(obj, ObjMethod::DictFromkeys));
                    return missing();
                }
                default: return missing();
            }
        }
        default: return missing();
    }
}

Value Interp::getitem(const Value& obj, const Value& key) {
    switch (obj.kind()) {
        case Kind::Undefined: fail_undefined(obj);
        case Kind::Dict: {
            if (key.is_list() && key.list().seq != SeqKind::Tuple) break;  // unhashable: TypeError, then attribute
            if (key.is_dict()) break;
            if (const Value* v = obj.dict().find(key)) return *v;
            break;
        }
        case Kind::List:
        case Kind::String:
            if (key.is_integral()) {
                Value v = index_value(obj, key.as_int());
                if (!v.is_undefined()) return v;
                return Value::undefined("'" + std::string(type_name(obj)) + " object' has no element " + to_repr(key));
            }
            break;
        default: break;
    }
    if (key.is_string()) return getattr(obj, key.str());
    return Value::undefined("'" + std::string(type_name(obj)) + " object' has no element " + to_repr(key));
}

std::vector<Value> Interp::to_list(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return {};
        case Kind::List: return v.list().items;
        case Kind::Dict: {
            std::vector<Value> keys;
            keys.reserve(v.dict().size());
            for (const auto& e : v.dict().entries) keys.push_back(e.first);
            return keys;
        }
        case Kind::String: {
            std::vector<Value> out;
            const std::string& s = v.str();
            out.reserve(s.size());
            for (size_t i = 0; i < s.size();) {
                size_t start = i;
                text::decode(s, i);
                out.push_back(Value::string(std::string_view(s).substr(start, i - start)));
            }
            return out;
        }
        case Kind::Object:
            if (v.object().otype == ObjType::Iterator) {
                auto& it = static_cast<IteratorObj&>(v.object());
                std::vector<Value> out;
                Value x;
                while (it.next && it.next(*this, x)) {
                    tick();
                    out.push_back(std::move(x));
                }
                it.next = nullptr;
                return out;
            }
            break;
        default: break;
    }
    fail_type("'" + std::string(type_name(v)) + "' object is not iterable");
}

Value Interp::make_iterator(std::string_view kind, std::function<bool(Interp&, Value&)> next) {
    return Value::from_obj(new IteratorObj(kind, std::move(next)));
}

Value Interp::call(const Value& callee, Args& args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (callee.is_object()) {
        Object& o = callee.object();
        switch (o.otype) {
            case ObjType::Builtin: return static_cast<BuiltinObj&>(o).fn(*this, args);
            case ObjType::BoundMethod: {
                auto& m = static_cast<BoundMethodObj&>(o);
                if (m.builtin_type) return call_method(*this, m.self, m.owner, m.id, args);
                return call_object_method(m, args);
            }
            case ObjType::Macro: return call_macro(static_cast<MacroObj&>(o), args);
            case ObjType::Loop: {
                auto& loop = static_cast<LoopObj&>(o);
                if (!loop.stmt) fail_type("Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.");
                if (args.n_pos != 1 || args.n_kw != 0) fail_type("loop() takes exactly one argument");
                if (++call_depth_ > options_.limits.max_depth)
                    fail("template exceeded the recursion limit of " + std::to_string(options_.limits.max_depth));
                tick();
                std::string buf;
                {
                    FrameSave save(out_, scope_);
                    out_ = &buf;
                    exec_for(loop.stmt, args.pos[0], loop.depth0 + 1, loop.scope);
                }
                --call_depth_;
                return Value::string(std::move(buf));
            }
            case ObjType::Joiner: {
                auto& j = static_cast<JoinerObj&>(o);
                if (!j.used) {
                    j.used = true;
                    return Value::string(std::string());
                }
                return Value::string(j.sep);
            }
            default: break;
        }
    }
    fail_type("'" + std::string(type_name(callee)) + "' object is not callable");
}

Value Interp::call_object_method(BoundMethodObj& m, Args& args) {
    switch (static_cast<ObjMethod>(m.id)) {
        case ObjMethod::LoopCycle: {
            auto& loop = static_cast<LoopObj&>(m.self.object());
            if (args.n_pos == 0) fail_type("no items for cycling given");
            return args.pos[loop.index0 % args.n_pos];
        }
        case ObjMethod::LoopChanged: {
            auto& loop = static_cast<LoopObj&>(m.self.object());
            Value now = Value::new_list();
            for (size_t n = 0; n < args.n_pos; ++n) now.list().items.push_back(args.pos[n]);
            if (!loop.changed_seen || !equal(now, loop.last_changed)) {
                loop.changed_seen = true;
                loop.last_changed = now;
                return Value::boolean(true);
            }
            return Value::boolean(false);
        }
        case ObjMethod::CyclerNext: {
            auto& c = static_cast<CyclerObj&>(m.self.object());
            if (c.items.empty()) return Value();
            Value rv = c.items[c.pos];
            c.pos = (c.pos + 1) % c.items.size();
            return rv;
        }
        case ObjMethod::CyclerReset: static_cast<CyclerObj&>(m.self.object()).pos = 0; return Value::none();
        case ObjMethod::DictFromkeys: {
            Params p(args, "fromkeys", {"iterable", "value"}, 1);
            Value out = Value::new_dict();
            Value fill = p.has(1) ? *p.get(1) : Value::none();
            for (Value& k : to_list(*p.get(0))) out.dict().set(std::move(k), fill);
            return out;
        }
    }
    return Value();
}

Value Interp::loop_attr(LoopObj& loop, std::string_view name) {
    for (size_t k = 0; k < std::size(k_loop_attrs); ++k)
        if (k_loop_attrs[k] == name) return loop_attr_id(loop, static_cast<int>(k));
    return Value::undefined("'LoopContext object' has no attribute '" + std::string(name) + "'");
}

Value Interp::loop_attr_id(LoopObj& loop, int id) {
    const size_t n = loop.n_items;
    const auto i = static_cast<int64_t>(loop.index0);
    switch (id) {
        case 0: return Value::integer(i + 1);
        case 1: return Value::integer(i);
        case 2: return Value::boolean(loop.index0 == 0);
        case 3: return Value::boolean(loop.index0 + 1 == n);
        case 4: return Value::integer(static_cast<int64_t>(n));
        case 5: return Value::integer(static_cast<int64_t>(n) - i);
        case 6: return Value::integer(static_cast<int64_t>(n) - i - 1);
        case 7: return Value::integer(loop.depth0 + 1);
        case 8: return Value::integer(loop.depth0);
        case 9: return loop.index0 > 0 ? loop.items[loop.index0 - 1] : Value::undefined("there is no previous item");
        case 10: return loop.index0 + 1 < n ? loop.items[loop.index0 + 1] : Value::undefined("there is no next item");
        default: break;
    }
    Value self = Value::from_obj(&loop);
    ref_inc(&loop);
    return Value::from_obj(new BoundMethodObj(self, id == 11 ? ObjMethod::LoopCycle : ObjMethod::LoopChanged));
}

Value Interp::call_macro(MacroObj& m, Args& args, std::string* sink) {
    check_stack();
    const MacroDef& d = *m.def;
    if (++call_depth_ > options_.limits.max_depth)
        fail("template exceeded the recursion limit of " + std::to_string(options_.limits.max_depth) + " nested calls");
    tick();
    const size_t n_params = d.params.size();
    if (args.n_kw == 0 && args.n_pos == n_params && !d.uses_caller && !d.uses_kwargs && !d.uses_varargs) {
        // The common call: every parameter given by position. Bind straight into the scope.
        std::string buf;
        {
            FrameSave save(out_, scope_);
            out_ = sink ? sink : &buf;
            with_scope(!d.captures, m.closure, [&] {
                for (size_t k = 0; k < n_params; ++k) scope_->vars.emplace_back(d.params[k], std::move(args.pos[k]));
                exec_body(d.body);
            });
        }
        --call_depth_;
        return sink ? Value() : Value::string(std::move(buf));
    }
    // Parameters bound so far; small macros keep them on the stack.
    constexpr size_t k_inline = 8;
    Value bound_inline[k_inline];
    uint8_t given_inline[k_inline] = {};
    std::vector<Value> bound_heap;
    std::vector<uint8_t> given_heap;
    Value* bound = bound_inline;
    uint8_t* given = given_inline;
    if (n_params > k_inline) {
        bound_heap.resize(n_params);
        given_heap.assign(n_params, 0);
        bound = bound_heap.data();
        given = given_heap.data();
    }
    const size_t n_positional = std::min(args.n_pos, n_params);
    for (size_t k = 0; k < n_positional; ++k) {
        bound[k] = args.pos[k];
        given[k] = 1;
    }
    Value kwargs = d.uses_kwargs ? Value::new_dict() : Value();
    Value caller;
    bool have_caller = false;
    const bool explicit_caller = d.explicit_caller;
    for (size_t k = 0; k < args.n_kw; ++k) {
        const KwArg& kw = args.kw[k];
        bool matched = false;
        if (n_positional < n_params) {
            for (size_t j = n_positional; j < n_params; ++j) {
                if (d.param_names[j] == kw.name) {
                    if (given[j]) fail_type("macro '" + d.name + "' got multiple values for argument '" + d.param_names[j] + "'");
                    bound[j] = kw.value;
                    given[j] = 1;
                    matched = true;
                    break;
                }
            }
        }
        if (matched) continue;
        if (kw.name == "caller" && d.uses_caller && !explicit_caller && !have_caller) {
            caller = kw.value;
            have_caller = true;
            continue;
        }
        if (d.uses_kwargs) {
            kwargs.dict().set_str(kw.name, kw.value);
            continue;
        }
        if (kw.name == "caller")
            fail_type("macro '" + d.name + "' was invoked with two values for the special caller argument. This is most likely a bug.");
        fail_type("macro '" + d.name + "' takes no keyword argument '" + std::string(kw.name) + "'");
    }
    Value varargs;
    if (d.uses_varargs) {
        varargs = Value::new_tuple();
        for (size_t k = n_params; k < args.n_pos; ++k) varargs.list().items.push_back(args.pos[k]);
    } else if (args.n_pos > n_params) {
        fail_type("macro '" + d.name + "' takes not more than " + std::to_string(n_params) + " argument(s)");
    }

    std::string buf;
    {
        FrameSave save(out_, scope_);
        out_ = sink ? sink : &buf;
        with_scope(!d.captures, m.closure, [&] {
            const size_t first_default = n_params - d.defaults.size();
            for (size_t k = 0; k < n_params; ++k) {
                if (given[k]) {
                    assign(d.params[k], std::move(bound[k]));
                } else if (k >= first_default) {
                    assign(d.params[k], eval(d.defaults[k - first_default].get()));
                } else {
                    assign(d.params[k], Value::undefined("parameter '" + d.param_names[k] + "' was not provided"));
                }
            }
            if (d.uses_caller && !explicit_caller)
                assign(prog_.sym_caller, have_caller ? caller : Value::undefined("No caller defined"));
            if (d.uses_kwargs) assign(prog_.sym_kwargs, kwargs);
            if (d.uses_varargs) assign(prog_.sym_varargs, varargs);
            exec_body(d.body);
        });
    }
    --call_depth_;
    return Value::string(std::move(buf));
}

Value Interp::filter_by_name(std::string_view name, const Value& v, Args& args) {
    FilterFn f = find_filter(name);
    if (!f) fail("No filter named '" + std::string(name) + "'.");
    return f(*this, v, args);
}

bool Interp::test_by_name(std::string_view name, const Value& v, Args& args) {
    TestFn t = find_test(name);
    if (!t) fail("No test named '" + std::string(name) + "'.");
    return t(*this, v, args);
}

}  // namespace kiln::jinja
