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

struct Scope final : HeapObject {
    Scope* parent;  // counted reference; nullptr: the template's top level
    std::vector<std::pair<uint32_t, Value>> vars;
    explicit Scope(Scope* p) : parent(p) {
        if (parent) ref_inc(parent);
        join_registry();
    }
    ~Scope() override {
        if (parent) ref_dec(parent);
    }
    void clear_refs() override {
        std::vector<std::pair<uint32_t, Value>> tmp;
        tmp.swap(vars);
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
    std::vector<Value> items;
    size_t index0 = 0;
    int depth0 = 0;
    Value last_changed;
    bool changed_seen = false;
    const ForStmt* stmt = nullptr;  // recursive loops: the loop to re-enter
    Scope* scope = nullptr;         // counted: where the loop statement runs
    LoopObj() : Object(ObjType::Loop) { join_registry(); }
    ~LoopObj() override {
        if (scope) ref_dec(scope);
    }
    void clear_refs() override {
        std::vector<Value> tmp;
        tmp.swap(items);
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

class Interp {
public:
    Interp(const Program& prog, const RenderOptions& options);
    std::string render(const Value& context);

    // --- services for the built-ins (Python / jinja2 semantics) -----------------------
    Value getattr(const Value& obj, std::string_view name);  // jinja2's sandboxed getattr
    Value getitem(const Value& obj, const Value& key);        // jinja2's sandboxed getitem
    Value call(const Value& callee, Args& args);
    std::vector<Value> to_list(const Value& iterable);       // iterates (consumes iterators)
    // Applies the named filter / test (used by map, select, reject and friends).
    Value filter_by_name(std::string_view name, const Value& v, Args& args);
    bool test_by_name(std::string_view name, const Value& v, Args& args);
    Value make_iterator(std::string_view kind, std::function<bool(Interp&, Value&)> next);

    void tick(uint64_t iterations = 1);  // counts loop iterations, checks the deadline
    void check_size(uint64_t bytes);     // refuses a string or list over the output limit
    const RenderOptions& options() const { return options_; }

private:
    const Program& prog_;
    RenderOptions options_;
    std::string* out_ = nullptr;
    Scope* scope_ = nullptr;  // innermost scope; nullptr: the top level
    std::vector<Value> root_;
    std::vector<uint8_t> root_set_;
    uint32_t pos_ = 0;
    uint32_t call_depth_ = 0;
    uint64_t iterations_ = 0;
    uint32_t tick_count_ = 0;
    std::chrono::steady_clock::time_point deadline_;
    bool has_deadline_ = false;
    const char* stack_base_ = nullptr;

    struct StackGuard;

    // statements
    Flow exec_body(const Body& body);
    Flow exec(const Stmt* s);
    void exec_for(const ForStmt* s, const Value& iterable, int depth0, Scope* outer);
    void exec_set(const Target& t, Value v);
    void exec_macro_def(const MacroStmt* s);
    void exec_call_block(const CallBlockStmt* s);
    std::string capture(const Body& body, bool new_scope);

    // expressions
    Value eval(const Expr* e);
    Value eval_name(const NameExpr* e);
    Value eval_getattr(const GetAttrExpr* e);
    Value eval_call(const CallExpr* e);
    Value eval_filter(const FilterExpr* e, const Value* input);
    bool eval_test(const TestExpr* e);
    Value eval_compare(const CompareExpr* e);
    Value eval_slice(const Value& obj, const SliceExpr* s);
    void eval_args(const ArgExprs& a, std::vector<Value>& pos, std::vector<KwArg>& kw);
    Value method_call(const GetAttrExpr* g, const Value& obj, const ArgExprs& a);

    // objects
    Value call_macro(MacroObj& m, Args& args);
    Value call_object_method(BoundMethodObj& m, Args& args);
    Value loop_attr(LoopObj& loop, std::string_view name);

    const Value* lookup(uint32_t sym) const;
    void assign(uint32_t sym, Value v);
    void emit(const Value& v);
    void check_output();
    void check_stack();
    Value undefined_name(uint32_t sym) const;
};

}  // namespace kiln::jinja
