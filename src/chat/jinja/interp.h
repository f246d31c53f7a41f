// The tree-walking interpreter and the runtime objects templates can hold
// (macros, loops, namespaces, cyclers, joiners, iterators, bound methods).
//
// Scoping follows jinja2: the template's top level is one flat table indexed by
// symbol id; each for-loop iteration, macro call, with / filter / set block gets
// a small scope chained to its parent, so assignments inside them do not leak.
// Macros capture the scope they were defined in (a closure).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/value.h"
#include "kiln/jinja.h"

namespace kiln::jinja {

// A scope's variables: a few inline slots (macro parameters, loop variables),
// spilling to the heap beyond that.
class ScopeVars {
public:
    using Entry = std::pair<uint32_t, Value>;
    Entry* begin() { return data(); }
    Entry* end() { return data() + n_; }
    const Entry* begin() const { return data(); }
    const Entry* end() const { return data() + n_; }
    void emplace_back(uint32_t sym, Value v) {
        if (heap_.empty() && n_ < k_inline) {
            inline_[n_].first = sym;
            inline_[n_].second = std::move(v);
            ++n_;
            return;
        }
        if (heap_.empty()) {
            heap_.reserve(2 * k_inline);
            for (size_t i = 0; i < n_; ++i) heap_.push_back(std::move(inline_[i]));
        }
        heap_.emplace_back(sym, std::move(v));
        ++n_;
    }
    void clear() { truncate(0); }
    // Drops the entries from `n` on (the variables a loop body set in the last iteration).
    void truncate(size_t n) {
        if (n >= n_) return;
        if (heap_.empty()) {
            for (size_t i = n; i < n_; ++i) inline_[i].second = Value();
        } else {
            heap_.resize(n);
        }
        n_ = n;
    }
    size_t size() const { return n_; }
    Entry& operator[](size_t i) { return data()[i]; }

private:
    static constexpr size_t k_inline = 4;
    Entry* data() { return heap_.empty() ? inline_ : heap_.data(); }
    const Entry* data() const { return heap_.empty() ? inline_ : heap_.data(); }
    Entry inline_[k_inline];
    std::vector<Entry> heap_;
    size_t n_ = 0;
};

// Marks an object that lives on the native stack for one statement or call: not
// counted (immortal), not registered. Only for scopes and loops nothing can keep
// (see ForStmt::captures).
struct OnStack {};

struct Scope final : HeapObject {
    Scope* parent;  // counted reference; nullptr: the template's top level
    ScopeVars vars;
    explicit Scope(Scope* p) : parent(p) {
        if (parent) ref_inc(parent);
        join_registry();
    }
    Scope(Scope* p, OnStack) : parent(p) {
        refs = k_immortal;
        if (parent) ref_inc(parent);
    }
    ~Scope() override {
        if (parent) ref_dec(parent);
    }
    void clear_refs() override {
        vars.clear();
        if (parent) {
            Scope* p = parent;
            parent = nullptr;
            ref_dec(p);
        }
    }
};

// A counted pointer to a Scope.
class ScopeRef {
public:
    ScopeRef() = default;
    explicit ScopeRef(Scope* s) : s_(s) {}  // adopts one reference
    ScopeRef(const ScopeRef& o) : s_(o.s_) {
        if (s_) ref_inc(s_);
    }
    ScopeRef& operator=(ScopeRef o) {
        std::swap(s_, o.s_);
        return *this;
    }
    ~ScopeRef() {
        if (s_) ref_dec(s_);
    }
    Scope* get() const { return s_; }
    Scope* operator->() const { return s_; }

private:
    Scope* s_ = nullptr;
};

struct BuiltinObj final : Object {
    std::string_view name;
    GlobalFn fn;
    BuiltinObj(std::string_view n, GlobalFn f) : Object(ObjType::Builtin), name(n), fn(f) {}
    std::string_view type_name() const override { return "function"; }
    void repr(std::string& out) const override;
};

// Methods of the runtime objects (loop.cycle, cycler.next, ...), beside str/list/dict.
enum class ObjMethod : uint8_t { LoopCycle, LoopChanged, CyclerNext, CyclerReset, DictFromkeys };

struct BoundMethodObj final : Object {
    Value self;
    bool builtin_type;    // a str / list / dict method (owner, id) or an ObjMethod
    MethodOwner owner = MethodOwner::Str;
    int id = 0;
    BoundMethodObj(Value s, MethodOwner o, int i)
        : Object(ObjType::BoundMethod), self(std::move(s)), builtin_type(true), owner(o), id(i) {
        join_registry();
    }
    BoundMethodObj(Value s, ObjMethod m)
        : Object(ObjType::BoundMethod), self(std::move(s)), builtin_type(false), id(static_cast<int>(m)) {
        join_registry();
    }
    void clear_refs() override { self = Value(); }
    std::string_view type_name() const override { return "builtin_function_or_method"; }
    void repr(std::string& out) const override;
};

struct MacroObj final : Object {
    const MacroDef* def;
    Scope* closure;  // counted; nullptr: the top level
    Value caller;    // for a call block's caller: undefined
    MacroObj(const MacroDef* d, Scope* c) : Object(ObjType::Macro), def(d), closure(c) {
        if (closure) ref_inc(closure);
        join_registry();
    }
    ~MacroObj() override {
        if (closure) ref_dec(closure);
    }
    void clear_refs() override {
        if (closure) {
            Scope* c = closure;
            closure = nullptr;
            ref_dec(c);
        }
    }
    std::string_view type_name() const override { return "Macro"; }
    void repr(std::string& out) const override;
};

struct NamespaceObj final : Object {
    Value attrs;  // a dict
    NamespaceObj() : Object(ObjType::Namespace), attrs(Value::new_dict()) { join_registry(); }
    void clear_refs() override { attrs.dict().clear_refs(); }
    std::string_view type_name() const override { return "Namespace"; }
    void repr(std::string& out) const override;
};

struct LoopObj final : Object {
    // The items iterated: `owned`, or (a loop on the stack) the items of the list
    // iterated, until that list is modified (Interp::will_modify makes the copy then).
    std::vector<Value> owned;
    const Value* items = nullptr;
    size_t n_items = 0;
    const ListObj* borrowed = nullptr;  // the list whose items these are, if any
    size_t index0 = 0;
    int depth0 = 0;
    Value last_changed;
    bool changed_seen = false;
    const ForStmt* stmt = nullptr;  // recursive loops: the loop to re-enter
    Scope* scope = nullptr;         // counted: where the loop statement runs
    LoopObj() : Object(ObjType::Loop) { join_registry(); }
    explicit LoopObj(OnStack) : Object(ObjType::Loop) { refs = k_immortal; }
    ~LoopObj() override {
        if (scope) ref_dec(scope);
    }
    void own(std::vector<Value> v) {
        owned = std::move(v);
        items = owned.data();
        n_items = owned.size();
        borrowed = nullptr;
    }
    void clear_refs() override {
        std::vector<Value> tmp;
        tmp.swap(owned);
        items = nullptr;
        n_items = 0;
        last_changed = Value();
        if (scope) {
            Scope* s = scope;
            scope = nullptr;
            ref_dec(s);
        }
    }
    std::string_view type_name() const override { return "LoopContext"; }
    void repr(std::string& out) const override;
};

struct CyclerObj final : Object {
    std::vector<Value> items;
    size_t pos = 0;
    CyclerObj() : Object(ObjType::Cycler) { join_registry(); }
    void clear_refs() override {
        std::vector<Value> tmp;
        tmp.swap(items);
    }
    std::string_view type_name() const override { return "Cycler"; }
};

struct JoinerObj final : Object {
    std::string sep;
    bool used = false;
    JoinerObj() : Object(ObjType::Joiner) {}
    std::string_view type_name() const override { return "Joiner"; }
};

// A Python iterator or generator (the result of map, select, reverse, ...):
// truthy, without len(), consumed by iteration. Produced lazily, so errors
// surface when it is consumed, as in Python.
struct IteratorObj final : Object {
    std::function<bool(Interp&, Value&)> next;  // false when exhausted
    std::string_view kind;
    IteratorObj(std::string_view k, std::function<bool(Interp&, Value&)> f)
        : Object(ObjType::Iterator), next(std::move(f)), kind(k) {
        join_registry();
    }
    void clear_refs() override { next = nullptr; }
    std::string_view type_name() const override { return kind; }
    void repr(std::string& out) const override;
};

enum class Flow : uint8_t { Normal, Break, Continue };

// Thrown (never beyond Interp::render) when a render sharing its caller's context
// is about to modify one of the caller's containers.
struct ContextModified {};

// The evaluated arguments of one call. Calls with few arguments (nearly all) keep
// them in raw inline storage, constructed only as used: no allocation and little
// work per filter, method or macro call.
class ArgStore {
public:
    ArgStore() = default;
    ArgStore(const ArgStore&) = delete;
    ArgStore& operator=(const ArgStore&) = delete;
    ~ArgStore() {
        if (!big_pos_)
            for (size_t i = 0; i < n_pos_; ++i) pos_small()[i].~Value();
        if (!big_kw_)
            for (size_t i = 0; i < n_kw_; ++i) kw_small()[i].~KwArg();
    }
    void push(Value v) {
        if (!big_pos_ && n_pos_ < k_pos) {
            new (&pos_small()[n_pos_++]) Value(std::move(v));
            return;
        }
        if (!big_pos_) {
            pos_big_.reserve(2 * k_pos);
            for (size_t i = 0; i < n_pos_; ++i) {
                pos_big_.push_back(std::move(pos_small()[i]));
                pos_small()[i].~Value();
            }
            big_pos_ = true;
        }
        pos_big_.push_back(std::move(v));
        ++n_pos_;
    }
    void push_kw(KwArg k) {
        if (!big_kw_ && n_kw_ < k_kw) {
            new (&kw_small()[n_kw_++]) KwArg(std::move(k));
            return;
        }
        if (!big_kw_) {
            for (size_t i = 0; i < n_kw_; ++i) {
                kw_big_.push_back(std::move(kw_small()[i]));
                kw_small()[i].~KwArg();
            }
            big_kw_ = true;
        }
        kw_big_.push_back(std::move(k));
        ++n_kw_;
    }
    Args args() {
        return Args{big_pos_ ? pos_big_.data() : pos_small(), n_pos_, big_kw_ ? kw_big_.data() : kw_small(), n_kw_};
    }

private:
    static constexpr size_t k_pos = 4, k_kw = 2;
    Value* pos_small() { return reinterpret_cast<Value*>(pos_raw_); }
    KwArg* kw_small() { return reinterpret_cast<KwArg*>(kw_raw_); }
    alignas(Value) unsigned char pos_raw_[k_pos * sizeof(Value)];
    alignas(KwArg) unsigned char kw_raw_[k_kw * sizeof(KwArg)];
    std::vector<Value> pos_big_;
    std::vector<KwArg> kw_big_;
    size_t n_pos_ = 0, n_kw_ = 0;
    bool big_pos_ = false, big_kw_ = false;
};

class Interp {
public:
    Interp(const Program& prog, const RenderOptions& options);
    // copy: deep-copy the context's containers first (they belong to the caller).
    std::string render(const Value& context, bool copy);
    // Evaluates an expression without a context, as a render would (folding: with
    // jinja2's compile-time getitem, see Expr::constant); keep(value) runs before
    // the temporaries go. False when evaluation raises or keep refuses (fold.cpp).
    bool evaluate_constant(const Expr* e, bool folding, const std::function<bool(const Value&)>& keep);

    // --- services for the built-ins (Python / jinja2 semantics) -----------------------
    Value getattr(const Value& obj, std::string_view name);  // jinja2's sandboxed getattr
    Value getitem(const Value& obj, const Value& key);        // jinja2's sandboxed getitem
    Value call(const Value& callee, Args& args);
    std::vector<Value> to_list(const Value& iterable);       // iterates (consumes iterators)
    // Applies the named filter / test (used by map, select, reject and friends).
    Value filter_by_name(std::string_view name, const Value& v, Args& args);
    bool test_by_name(std::string_view name, const Value& v, Args& args);
    Value make_iterator(std::string_view kind, std::function<bool(Interp&, Value&)> next);

    // Counts loop iterations and macro calls, and checks the deadline now and then.
    void tick(uint64_t iterations = 1) {
        iterations_ += iterations;
        if (iterations_ > options_.limits.max_loop_iterations) fail_iterations();
        if (has_deadline_ && ++tick_count_ % 256 == 0) check_deadline();
    }
    // Refuses a string or list over the output limit (before it is built).
    void check_size(uint64_t bytes) {
        if (bytes > options_.limits.max_output_bytes) fail_size(bytes);
    }
    const RenderOptions& options() const { return options_; }
    // Call before modifying a container in place (list.append, set ns.attr): a render
    // on its caller's containers then starts over on a copy of them.
    void will_modify(const HeapObject& o) {
        if (shared_context_ && o.serial != serial_) throw ContextModified{};
        if (!borrowing_loops_.empty()) detach_loops(o);
    }

private:
    const Program& prog_;
    RenderOptions options_;
    std::string* out_ = nullptr;
    Scope* scope_ = nullptr;  // innermost scope; nullptr: the top level
    std::vector<Value> root_;
    std::vector<uint8_t> root_set_;
    std::vector<LoopObj*> borrowing_loops_;  // running loops that iterate a list's own items
    uint32_t serial_ = 0;          // the render registry's: containers this render made
    bool shared_context_ = false;  // the context's containers are the caller's
    uint32_t pos_ = 0;
    bool folding_ = false;  // evaluating a constant {{ }} as jinja2's compiler does
    uint32_t call_depth_ = 0;
    uint64_t iterations_ = 0;
    uint32_t tick_count_ = 0;
    std::chrono::steady_clock::time_point deadline_;
    bool has_deadline_ = false;
    const char* stack_base_ = nullptr;

    struct StackGuard;

    std::string render_pass(const Value& context, bool shared, bool copy);
    void begin_pass(uint32_t serial, const char* stack_base, std::string* out, bool shared, bool folding);

    // Runs body() in a new scope under `parent`: on the native stack when nothing
    // the body does can keep the scope (see ForStmt::captures).
    template <class F>
    void with_scope(bool on_stack, Scope* parent, F&& body) {
        if (on_stack) {
            Scope s(parent, OnStack{});
            scope_ = &s;
            body();
        } else {
            ScopeRef s(new Scope(parent));
            scope_ = s.get();
            body();
        }
    }

    // statements
    Flow exec_body(const Body& body);
    Flow exec(const Stmt* s);
    void exec_for(const ForStmt* s, const Value& iterable, int depth0, Scope* outer);
    void exec_for_on_heap(const ForStmt* s, const Value& iterable, int depth0, Scope* outer);
    void exec_for_items(const ForStmt* s);
    void detach_loops(const HeapObject& list);
    void exec_set(const Target& t, Value v);
    void exec_macro_def(const MacroStmt* s);
    void exec_call_block(const CallBlockStmt* s);
    std::string capture(const Body& body, bool new_scope);

    // expressions
    Value eval(const Expr* e);
    Value eval_name(const NameExpr* e);
    Value eval_getattr(const GetAttrExpr* e);
    Value eval_call(const CallExpr* e);
    template <class E>
    auto call_builtin(const E* e, const Value& subject, const char* kind);
    Value eval_filter(const FilterExpr* e, const Value* input);
    bool eval_test(const TestExpr* e);
    bool cond(const Expr* e);  // truthy(eval(e))
    bool compare(const CompareExpr* e);
    bool compare_op(CmpOp op, const Value& left, const Value& right);
    Value eval_slice(const Value& obj, const SliceExpr* s, bool folded = false);
    void eval_args(const ArgExprs& a, ArgStore& store);
    Value eval_add(const BinaryExpr* e);
    Value eval_concat(const ConcatExpr* e);
    void emit_add(const BinaryExpr* e);
    Value method_call(const GetAttrExpr* g, const Value& obj, const ArgExprs& a);

    // objects
    // Renders the macro; into `sink` when given (the result is then undefined).
    Value call_macro(MacroObj& m, Args& args, std::string* sink = nullptr);
    Value call_object_method(BoundMethodObj& m, Args& args);
    Value loop_attr(LoopObj& loop, std::string_view name);
    Value loop_attr_id(LoopObj& loop, int id);

    inline const Value* lookup(uint32_t sym) const;
    inline const Value* borrow(const Expr* e, Value& tmp);
    const Value* borrow_slow(const Expr* e, Value& tmp);
    const Value* object_attr(const GetAttrExpr* g, const Value& obj, Value& tmp);
    Value attr_of(const GetAttrExpr* e, const Value& obj);
    void assign(uint32_t sym, Value v);
    void emit(const Value& v);
    void check_output() {
        if (out_->size() > options_.limits.max_output_bytes) fail_output();
    }
    [[noreturn]] void fail_iterations() const;
    [[noreturn]] void fail_size(uint64_t bytes) const;
    [[noreturn]] void fail_output() const;
    void check_deadline() const;
    void check_stack();
    Value undefined_name(uint32_t sym) const;
};

// A variable: the innermost scope that has it, then the top level, then the globals.
inline const Value* Interp::lookup(uint32_t sym) const {
    for (const Scope* s = scope_; s; s = s->parent)
        for (const auto& [k, v] : s->vars)
            if (k == sym) return &v;
    if (root_set_[sym]) return &root_[sym];
    const Value& g = prog_.globals[sym];
    if (!g.is_undefined()) return &g;
    return nullptr;
}

// The value of e without copying it when it already lives somewhere (see
// borrow_slow). Constants, variables and name.key on a dict, most of what
// templates read, are handled here without a call.
inline const Value* Interp::borrow(const Expr* e, Value& tmp) {
    switch (e->kind) {
        case ExprKind::Const: return &static_cast<const ConstExpr*>(e)->value;
        case ExprKind::Name:
            if (const Value* v = lookup(static_cast<const NameExpr*>(e)->sym)) return v;
            break;
        case ExprKind::GetAttr: {
            const auto* g = static_cast<const GetAttrExpr*>(e);
            if (g->obj->kind != ExprKind::Name) break;
            const Value* base = lookup(static_cast<const NameExpr*>(g->obj.get())->sym);
            if (!base) break;
            if (base->is_dict() && g->dict_method < 0) {
                if (const Value* v = base->dict().find_str(g->name)) return v;
                tmp = g->dict_missing;
                return &tmp;
            }
            if (base->is_object()) return object_attr(g, *base, tmp);
            break;
        }
        default: break;
    }
    return borrow_slow(e, tmp);
}

}  // namespace kiln::jinja
