// The parsed template: expression and statement nodes, evaluated by the
// interpreter with a switch on their kind. Names are interned to symbol ids at
// parse time; filters and tests are resolved to functions; attribute names are
// resolved to method ids, so rendering does no string lookups for them.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/jinja/builtins.h"
#include "chat/jinja/value.h"

namespace kiln::jinja {

enum class ExprKind : uint8_t {
    Const, Name, GetAttr, GetItem, Slice, Call, Filter, Test, Not, Neg, Pos,
    Binary, And, Or, Compare, Concat, Cond, List, Tuple, Dict,
};
enum class BinOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
    ExprKind kind;
    // No call in the subtree: evaluating it runs no statements and modifies no
    // container, so values borrowed before it stay valid (set after parsing).
    bool pure = true;
    // Built from constants only. jinja2 evaluates such an expression when it compiles
    // a {{ }} (its "as_const"), where slicing goes through its getitem and yields
    // undefined instead of raising as at run time (set after parsing).
    bool constant = false;
    uint32_t pos;  // byte offset in the normalized source
    Expr(ExprKind k, uint32_t p) : kind(k), pos(p) {}
    virtual ~Expr() = default;
};
using ExprPtr = std::unique_ptr<Expr>;

struct KwExpr {
    std::string name;
    ExprPtr value;
};

struct ArgExprs {
    std::vector<ExprPtr> pos;
    std::vector<KwExpr> kw;
    ExprPtr dyn_args;    // *args
    ExprPtr dyn_kwargs;  // **kwargs
    bool pure = true;    // every argument is pure (set after parsing)
    bool none = false;   // no arguments at all (set after parsing)
};

struct ConstExpr : Expr {
    Value value;
    ConstExpr(uint32_t p, Value v) : Expr(ExprKind::Const, p), value(std::move(v)) {}
};

struct NameExpr : Expr {
    uint32_t sym;
    NameExpr(uint32_t p, uint32_t s) : Expr(ExprKind::Name, p), sym(s) {}
};

struct GetAttrExpr : Expr {
    ExprPtr obj;
    std::string name;
    int str_method = -1, list_method = -1, dict_method = -1;
    Value dict_missing;  // the undefined a dict without this key yields (immortal: no allocation per miss)
    int loop_attr = -1;  // index in k_loop_attrs when the name is a loop attribute
    GetAttrExpr(uint32_t p) : Expr(ExprKind::GetAttr, p) {}
};

struct GetItemExpr : Expr {
    ExprPtr obj, key;
    GetItemExpr(uint32_t p) : Expr(ExprKind::GetItem, p) {}
};

struct SliceExpr : Expr {
    ExprPtr start, stop, step;
    SliceExpr(uint32_t p) : Expr(ExprKind::Slice, p) {}
};

struct CallExpr : Expr {
    ExprPtr callee;
    ArgExprs args;
    CallExpr(uint32_t p) : Expr(ExprKind::Call, p) {}
};

struct FilterExpr : Expr {
    ExprPtr subject;  // null inside filter blocks and {% set x | f %}: the block's output
    std::string name;
    FilterFn fn = nullptr;
    ArgExprs args;
    FilterExpr(uint32_t p) : Expr(ExprKind::Filter, p) {}
};

struct TestExpr : Expr {
    ExprPtr subject;
    std::string name;
    TestFn fn = nullptr;
    ArgExprs args;
    TestExpr(uint32_t p) : Expr(ExprKind::Test, p) {}
};

struct UnaryExpr : Expr {
    ExprPtr operand;
    UnaryExpr(ExprKind k, uint32_t p) : Expr(k, p) {}
};

struct BinaryExpr : Expr {
    BinOp op;
    ExprPtr left, right;
    BinaryExpr(uint32_t p, BinOp o) : Expr(ExprKind::Binary, p), op(o) {}
};

struct LogicExpr : Expr {
    ExprPtr left, right;
    LogicExpr(ExprKind k, uint32_t p) : Expr(k, p) {}
};

struct CompareExpr : Expr {
    ExprPtr first;
    std::vector<std::pair<CmpOp, ExprPtr>> rest;
    CompareExpr(uint32_t p) : Expr(ExprKind::Compare, p) {}
};

struct ConcatExpr : Expr {
    std::vector<ExprPtr> parts;
    ConcatExpr(uint32_t p) : Expr(ExprKind::Concat, p) {}
};

struct CondExpr : Expr {
    ExprPtr test, then, otherwise;  // otherwise may be null: undefined
    CondExpr(uint32_t p) : Expr(ExprKind::Cond, p) {}
};

struct SeqExpr : Expr {  // List or Tuple
    std::vector<ExprPtr> items;
    SeqExpr(ExprKind k, uint32_t p) : Expr(k, p) {}
};

struct DictExpr : Expr {
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
    DictExpr(uint32_t p) : Expr(ExprKind::Dict, p) {}
};

// loop.<name>, resolved when parsing (order matters: Interp::loop_attr switches on it).
inline constexpr std::string_view k_loop_attrs[] = {"index",  "index0", "first",    "last",     "length", "revindex",
                                                     "revindex0", "depth", "depth0", "previtem", "nextitem", "cycle",
                                                     "changed"};

// --- statements --------------------------------------------------------------------

enum class StmtKind : uint8_t {
    Text, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue, Scope,
};

struct Stmt {
    StmtKind kind;
    uint32_t pos;
    Stmt(StmtKind k, uint32_t p) : kind(k), pos(p) {}
    virtual ~Stmt() = default;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// An assignment target: a name, a tuple of targets, or namespace.attr.
struct Target {
    enum class Kind : uint8_t { Name, Tuple, NsAttr } kind = Kind::Name;
    uint32_t sym = 0;
    std::string attr;  // NsAttr
    Value attr_key;    // NsAttr: the name as an immortal string (no allocation per assignment)
    std::vector<Target> items;  // Tuple
    uint32_t pos = 0;
};

struct TextStmt : Stmt {
    std::string text;
    TextStmt(uint32_t p, std::string t) : Stmt(StmtKind::Text, p), text(std::move(t)) {}
};

struct OutputStmt : Stmt {
    ExprPtr expr;
    OutputStmt(uint32_t p, ExprPtr e) : Stmt(StmtKind::Output, p), expr(std::move(e)) {}
};

struct IfStmt : Stmt {
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body else_body;
    IfStmt(uint32_t p) : Stmt(StmtKind::If, p) {}
};

struct ForStmt : Stmt {
    Target target;
    ExprPtr iter;
    ExprPtr filter;  // {% for x in y if cond %}
    bool recursive = false;
    // Set after parsing (conservative until then). captures: the body can keep its
    // scope alive past the loop (defines a macro or call block, or has a recursive
    // loop). loop_var: the body names `loop`. loop_escapes: the body uses `loop`
    // other than through a plain attribute (loop.index, loop.last, ...), so the loop
    // object may outlive the statement. Without either, the loop's scope and loop
    // object live on the native stack.
    bool captures = true, loop_var = true, loop_escapes = true;
    // `for k, v in d|items` or `d.items()` (set after parsing): the pairs of a dict
    // can be bound without building them (Interp::exec_for_items).
    enum class Items : uint8_t { No, Filter, Method } items = Items::No;
    Body body, else_body;
    ForStmt(uint32_t p) : Stmt(StmtKind::For, p) {}
};

struct SetStmt : Stmt {
    Target target;
    ExprPtr value;
    SetStmt(uint32_t p) : Stmt(StmtKind::Set, p) {}
};

struct SetBlockStmt : Stmt {
    Target target;
    std::vector<std::unique_ptr<FilterExpr>> filters;  // applied in order to the captured text
    Body body;
    SetBlockStmt(uint32_t p) : Stmt(StmtKind::SetBlock, p) {}
};

struct MacroDef {
    std::string name;
    std::vector<uint32_t> params;
    std::vector<std::string> param_names;
    std::vector<ExprPtr> defaults;  // for the last defaults.size() params
    Body body;
    bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
    bool explicit_caller = false;  // a parameter is named "caller"
    bool captures = true;  // the body can keep its scope alive (see ForStmt); set after parsing
};

struct MacroStmt : Stmt {
    uint32_t sym = 0;
    MacroDef def;
    MacroStmt(uint32_t p) : Stmt(StmtKind::Macro, p) {}
};

struct CallBlockStmt : Stmt {
    MacroDef caller;  // the block body, callable as caller(...)
    ExprPtr call;     // a CallExpr
    CallBlockStmt(uint32_t p) : Stmt(StmtKind::CallBlock, p) {}
};

struct FilterBlockStmt : Stmt {
    std::vector<std::unique_ptr<FilterExpr>> filters;
    Body body;
    FilterBlockStmt(uint32_t p) : Stmt(StmtKind::FilterBlock, p) {}
};

struct WithStmt : Stmt {
    std::vector<std::pair<Target, ExprPtr>> assigns;
    Body body;
    WithStmt(uint32_t p) : Stmt(StmtKind::With, p) {}
};

// {% generation %} (Hugging Face) and {% block %}: the body, rendered in place.
struct ScopeStmt : Stmt {
    Body body;
    bool new_scope = false;
    ScopeStmt(uint32_t p) : Stmt(StmtKind::Scope, p) {}
};

struct BareStmt : Stmt {  // break / continue
    using Stmt::Stmt;
};

// A parsed template.
struct Program {
    // Declared first so it is destroyed last: the tree's constants point into it.
    std::vector<std::unique_ptr<StrObj>> literals;  // immortal string constants
    std::vector<std::unique_ptr<ListObj>> constants;  // folded tuples (their strings are literals)
    std::string source;  // normalized
    Body body;
    std::vector<std::string> symbols;  // symbol id -> name
    std::unordered_map<std::string, uint32_t> symbol_ids;
    std::vector<Value> globals;        // symbol id -> built-in global (undefined if none)
    std::vector<Value> undefined_names;  // symbol id -> "'name' is undefined" (immortal)
    uint32_t sym_loop = 0, sym_caller = 0, sym_varargs = 0, sym_kwargs = 0;

    uint32_t intern(const std::string& name);
    Value literal(std::string s);  // an immortal string Value
    Value undefined_literal(std::string hint);  // an immortal undefined Value carrying a hint
};

// Parses a template; throws TemplateError with line and column.
std::unique_ptr<Program> parse_program(std::string_view source);
// Checks unknown filters / tests and marks pure and constant expressions (analyze.cpp).
void analyze_program(Program& prog);
// Folds constant output and constant tuples after analysis (fold.cpp).
void fold_constants(Program& prog);

}  // namespace kiln::jinja
