// The sandbox: limits (recursion, loop iterations, output and value size, time,
// nesting) fail with clear errors; hostile structures (cycles, very deep values)
// neither crash nor leak; errors carry line and column; templates render from
// several threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "jinja_test_util.h"

namespace kiln::test {
namespace {

std::string render_str(const std::string& source, const std::string& ctx = "{}", jinja::RenderOptions o = {}) {
    return jinja::Template(source).render_json(ctx, o);
}

// The message of the error `source` raises (empty if it renders).
std::string error_of(const std::string& source, jinja::RenderOptions o = {}, const std::string& ctx = "{}") {
    try {
        render_str(source, ctx, o);
    } catch (const jinja::TemplateError& e) {
        return e.what();
    }
    return "";
}

TEST(Sandbox, RecursionLimit) {
    // Whichever comes first: the call depth limit or the stack budget (sanitizer builds
    // have larger frames).
    std::string err = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    EXPECT_TRUE(err.find("recursion limit") != std::string::npos || err.find("stack limit") != std::string::npos) << err;
}

TEST(Sandbox, RecursionLimitIsConfigurable) {
    jinja::RenderOptions o;
    o.limits.max_depth = 10;
    const std::string t = "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(N) }}";
    EXPECT_EQ(render_str(t, R"({"N": 8})", o), "012345678");
    EXPECT_NE(error_of(t, o, R"({"N": 20})").find("recursion limit"), std::string::npos);
}

TEST(Sandbox, RecursiveLoopLimit) {
    jinja::RenderOptions o;
    o.limits.max_depth = 5;
    std::string err = error_of("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", o);
    EXPECT_NE(err.find("recursion limit"), std::string::npos) << err;
}

TEST(Sandbox, LoopIterationLimit) {
    jinja::RenderOptions o;
    o.limits.max_loop_iterations = 50'000;
    std::string err = error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", o);
    EXPECT_NE(err.find("loop iterations"), std::string::npos) << err;
}

TEST(Sandbox, BranchingRecursionHitsTheIterationLimit) {
    // 2^40 calls: each call counts, so this stops quickly.
    jinja::RenderOptions o;
    o.limits.max_loop_iterations = 100'000;
    std::string err = error_of("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", o);
    EXPECT_NE(err.find("loop iterations"), std::string::npos) << err;
}

TEST(Sandbox, OutputLimit) {
    jinja::RenderOptions o;
    o.limits.max_output_bytes = 1 << 20;
    std::string err = error_of("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", o);
    EXPECT_NE(err.find("output exceeds"), std::string::npos) << err;
}

TEST(Sandbox, ValueSizeCheckedBeforeAllocating) {
    EXPECT_NE(error_of("{{ 'x' * 1000000000000 }}").find("exceeds the limit"), std::string::npos);
    EXPECT_NE(error_of("{{ [1] * 1000000000000 }}").find("exceeds the limit"), std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                  .find("exceeds the limit"),
              std::string::npos);
    EXPECT_NE(error_of("{{ 'ab'|center(100000000000) }}").find("exceeds the limit"), std::string::npos);
}

TEST(Sandbox, TimeLimit) {
    jinja::RenderOptions o;
    o.limits.max_milliseconds = 50;
    o.limits.max_loop_iterations = ~0ull;
    auto t0 = std::chrono::steady_clock::now();
    std::string err = error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", o);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(err.find("time limit"), std::string::npos) << err;
    EXPECT_LT(ms, 2000);
}

TEST(Sandbox, RangeIsCapped) {
    EXPECT_NE(error_of("{{ range(100001)|length }}").find("MAX_RANGE"), std::string::npos);
    EXPECT_EQ(render_str("{{ range(100000)|length }}"), "100000");
}

TEST(Sandbox, DeepTemplateNestingIsAParseError) {
    for (const std::string open : {"(", "[", "not ", "-", "{'a': "}) {
        std::string src = "{{ ";
        for (int i = 0; i < 100000; ++i) src += open;
        EXPECT_NE(error_of(src).find("nested too deeply"), std::string::npos) << open;
    }
    std::string chain = "{{ 1";
    for (int i = 0; i < 100000; ++i) chain += " + 1";
    EXPECT_NE(error_of(chain + " }}").find("nested too deeply"), std::string::npos);
    std::string ifs;
    for (int i = 0; i < 10000; ++i) ifs += "{% if true %}";
    EXPECT_NE(error_of(ifs).find("nested too deeply"), std::string::npos);
}

TEST(Sandbox, DeepValuesNeitherCrashNorOverflow) {
    // a list nested 100000 deep: built and released without recursion
    const std::string build = "{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% set ns.a = [ns.a] %}{% endfor %}";
    EXPECT_EQ(render_str(build + "{{ ns.a|length }}"), "1");
    EXPECT_NE(error_of(build + "{{ ns.a }}").find("nested too deeply"), std::string::npos);
    EXPECT_NE(error_of(build + "{{ ns.a|tojson }}").find("nested"), std::string::npos);
    EXPECT_NE(error_of(build + "{{ ns.a == ns.a }}{{ [ns.a] == [[ns.a]] }}").find("nested"), std::string::npos);
}

TEST(Sandbox, ReferenceCyclesAreReleased) {
    // ASan's leak checker fails this test if a cycle survives the render.
    EXPECT_EQ(render_str("{% set a = [] %}{% set _ = a.append(a) %}{{ a|length }}"), "1");
    EXPECT_EQ(render_str("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"), "True");
    EXPECT_EQ(render_str("{% macro m() %}x{% endmacro %}{% set ns = namespace(f=m) %}{{ ns.f() }}"), "x");
    EXPECT_EQ(render_str("{% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}"), "12");
    EXPECT_EQ(render_str("{% set l = [1] %}{% set g = l|select %}{% set _ = l.append(g) %}{{ l|length }}"), "2");
    EXPECT_NE(error_of("{% set a = [] %}{% set _ = a.append(a) %}{{ a }}").find("nested too deeply"), std::string::npos);
}

TEST(Sandbox, StackLimit) {
    jinja::RenderOptions o;
    o.limits.max_stack_bytes = 64 * 1024;
    o.limits.max_depth = 100000;
    std::string err = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", o);
    EXPECT_NE(err.find("stack limit"), std::string::npos) << err;
}

TEST(Sandbox, NoTemplateLoading) {
    for (const char* t : {"{% include 'x' %}", "{% extends 'x' %}", "{% import 'x' as y %}", "{% from 'x' import y %}"})
        EXPECT_NE(error_of(t).find("not allowed"), std::string::npos) << t;
}

TEST(Sandbox, PrivateAttributesAreUndefined) {
    EXPECT_EQ(render_str("[{{ ''.__class__ }}][{{ namespace(a=1)._Namespace__attrs }}]"), "[][]");
    EXPECT_NE(error_of("{{ ''.__class__.__mro__ }}").find("has no attribute '__class__'"), std::string::npos);
}

TEST(Errors, CarryLineAndColumn) {
    try {
        jinja::Template t("line one\n{{ x }}\n   {{ 1 + }}");
        FAIL() << "parsed";
    } catch (const jinja::TemplateError& e) {
        EXPECT_EQ(e.line(), 3u);
        EXPECT_EQ(e.column(), 11u);
        EXPECT_EQ(std::string(e.what()).rfind("line 3, column 11: ", 0), 0u) << e.what();
    }
    try {
        render_str("a\n{% for m in messages %}\n  {{ m.content + 1 }}\n{% endfor %}", R"({"messages": [{"content": "x"}]})");
        FAIL() << "rendered";
    } catch (const jinja::TemplateError& e) {
        EXPECT_EQ(e.line(), 3u) << e.what();
        EXPECT_GT(e.column(), 1u);
        EXPECT_NE(std::string(e.what()).find("can only concatenate str"), std::string::npos) << e.what();
    }
}

TEST(Errors, RaiseException) {
    try {
        render_str("{% if messages|length == 0 %}{{ raise_exception('Conversation roles must alternate!') }}{% endif %}",
               R"({"messages": []})");
        FAIL() << "rendered";
    } catch (const jinja::TemplateError& e) {
        EXPECT_TRUE(e.raised());
        EXPECT_EQ(e.message(), "Conversation roles must alternate!");
        EXPECT_EQ(e.line(), 1u);
    }
}

TEST(Errors, AreKilnErrors) {
    try {
        render_str("{{ undefined_thing.attr }}");
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("'undefined_thing' is undefined"), std::string::npos) << e.what();
    }
}

TEST(Api, RenderJsonContext) {
    EXPECT_EQ(jinja::render("{{ a }}-{{ b.c[1] }}", R"({"a": "x", "b": {"c": [1, 2.5]}})"), "x-2.5");
    EXPECT_THROW(jinja::render("{{ a }}", "[1]"), jinja::TemplateError);
    EXPECT_THROW(jinja::render("{{ a }}", "{bad json"), jinja::TemplateError);
}

TEST(Api, ContextIsNotModified) {
    jinja::Template t("{% set _ = l.append(3) %}{{ l }}");
    jinja::Value ctx = to_value(ojson::parse(R"({"l": [1, 2]})"));
    EXPECT_EQ(jinja::render_value(t, ctx), "[1, 2, 3]");
    EXPECT_EQ(jinja::render_value(t, ctx), "[1, 2, 3]");
    EXPECT_EQ(ctx.dict().find_str("l")->list().items.size(), 2u);
}

TEST(Api, ContextModifiedMidRenderStartsOverOnACopy) {
    // A render first runs on the caller's containers; modifying one of them (here deep
    // inside, after output was written) starts it over on a copy: same output, caller
    // untouched, lists the template made itself still modifiable in place.
    jinja::Template t(
        "a{% set own = [] %}{% for m in messages %}{{ m.x|length }}{% set _ = own.append(1) %}"
        "{% if loop.last %}{% set _ = m.x.append(own|length) %}{% endif %}{{ m.x }}{% endfor %}{{ messages }}");
    jinja::Value ctx = to_value(ojson::parse(R"({"messages": [{"x": []}, {"x": [0]}]})"));
    for (int i = 0; i < 2; ++i) EXPECT_EQ(jinja::render_value(t, ctx), "a0[]1[0, 2][{'x': []}, {'x': [0, 2]}]");
    EXPECT_EQ(to_str(ctx), "{'messages': [{'x': []}, {'x': [0]}]}");
    jinja::Template pop("{% set l = messages %}{{ l.pop() }}{{ messages|length }}");
    EXPECT_EQ(jinja::render_value(pop, ctx), "{'x': [0]}1");
    EXPECT_EQ(to_str(ctx), "{'messages': [{'x': []}, {'x': [0]}]}");
}

TEST(Loops, FilteredLoopWithLoopVariable) {
    // A loop whose scope holds `loop` (fuzz regression: the scope outlived the loop
    // object it refers to; ASan's stack-use-after-scope).
    EXPECT_EQ(render_str("{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}/{{ loop.length }}{% endfor %}"), "1/22/2");
    EXPECT_EQ(render_str("{% for x in [1, 2] %}{% for y in [3, 4, 5] if y != 4 %}{{ loop.index }}{{ y }}{% endfor %}{{ loop.index }};{% endfor %}"),
              "13251;13252;");
}

TEST(Loops, IterateTheItemsTheyStartedWith) {
    // Loops iterate a list in place; a list modified while it is iterated is copied
    // first, so the loop still sees the items it started with (docs/jinja.md).
    EXPECT_EQ(render_str("{% set l = [1, 2, 3] %}{% for x in l %}{{ x }}{% set _ = l.append(x * 10) %}"
                         "{% if loop.first %}{% set _ = l.pop(0) %}{% endif %}{{ loop.nextitem }};{% endfor %}{{ l }}"),
              "12;23;3;[2, 3, 10, 20, 30]");
    EXPECT_EQ(render_str("{% set l = [1, 2] %}{% for x in l %}{% for y in l %}{% set _ = l.append(y) %}{{ y }}"
                         "{% endfor %}|{{ x }}{{ loop.previtem }}/{% endfor %}{{ l|length }}"),
              "12|1/1212|21/8");
    EXPECT_EQ(render_str("{% set l = [[1, 2], [3, 4]] %}{% for a, b in l %}{{ a }}{{ b }}{% set _ = l.pop() %}"
                         "{% endfor %}{{ l }}"),
              "1234[]");
    // A loop object that escapes its statement, and one kept by a macro defined in it.
    EXPECT_EQ(render_str("{% set ns = namespace() %}{% for x in [1, 2] %}{% set ns.l = loop %}{% endfor %}"
                         "{{ ns.l.index }}{{ ns.l.length }}"),
              "22");
    EXPECT_EQ(render_str("{% set ns = namespace() %}{% for x in [1, 2] %}{% macro m() %}{{ x }}{{ loop.index }}"
                         "{% endmacro %}{% set ns.m = m %}{% endfor %}{{ ns.m() }}"),
              "22");
}

TEST(Loops, DictItemsBindPairs) {
    // for k, v in d|items / d.items() binds the pairs straight from the dict; other
    // values go the general way with the same results and errors.
    const std::string ctx = R"({"d": {"a": 1, "b": [2]}, "e": {}, "s": "xy", "l": [[1, 2]]})";
    EXPECT_EQ(render_str("{% for k, v in d|items %}{{ k }}={{ v }};{% set z = k %}{% if k == 'b' %}{% break %}{% endif %}"
                         "{% else %}E{% endfor %}{{ z }}",
                         ctx),
              "a=1;b=[2];");
    EXPECT_EQ(render_str("{% for k, v in e|items %}x{% else %}E{% endfor %}{% for k, v in e.items() %}x{% else %}F{% endfor %}"
                         "{% for k, v in nothing|items %}x{% else %}U{% endfor %}",
                         ctx),
              "EFU");
    EXPECT_EQ(render_str("{% for k, v in d.items() %}{{ k }}{{ v }}{% for a, b in d|items %}{{ a }}{% endfor %}{% endfor %}", ctx),
              "a1abb[2]ab");
    EXPECT_NE(error_of("{% for k, v in l|items %}x{% endfor %}", {}, ctx).find("Can only get item pairs from a mapping"),
              std::string::npos);
    EXPECT_NE(error_of("{% for k, v in s.items() %}x{% endfor %}", {}, ctx).find("'str object' has no attribute 'items'"),
              std::string::npos);
    EXPECT_NE(error_of("{% for k, v in nothing.items() %}x{% endfor %}", {}, ctx).find("'nothing' is undefined"),
              std::string::npos);
}

TEST(Api, FoldedConstants) {
    // Constant {{ }} become text and constant tuples are built once when parsing;
    // renders see the same output as evaluating them each time.
    jinja::Template t(
        "{{ 'a' ~ 'b' }}{% for k, v in [('x', 1), ('y', (2, 3))] %}{{ k }}{{ v }}{% endfor %}{{ 'x' in ['x', 'z'] }}"
        "{{ ('p', 'q')|join }}{% set t = ('m',) %}{{ t + t }}{{ (1)[1:] }}|{{ ('a', 'b')[5] is undefined }}"
        "{{ 1 / 0 if false else 2 }}{% if x %}{{ (1, 'é') }}{% endif %}");
    for (int i = 0; i < 2; ++i) EXPECT_EQ(t.render_json(R"({"x": true})"), "abx1y(2, 3)Truepq('m', 'm')|True2(1, 'é')");
    EXPECT_NE(error_of("{% if x %}{{ 1 / 0 }}{% endif %}", {}, R"({"x": true})").find("division"), std::string::npos);
    EXPECT_EQ(render_str("{% if x %}{{ 1 / 0 }}{% endif %}"), "");  // folding errors wait for the render
}

TEST(Api, ConcurrentRenders) {
    jinja::Template t(
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content|trim }}{{ loop.index }}{% endfor %}{{ 'x'|upper }}"
        "{% for a, b in [('p', 1), ('q', 2)] %}{{ a }}{{ b }}{% endfor %}");
    const std::string ctx = R"({"messages": [{"role": "user", "content": " a "}, {"role": "assistant", "content": "b"}]})";
    const std::string want = t.render_json(ctx);
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i)
                if (t.render_json(ctx) != want) ++bad;
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(want, "<|user|>a1<|assistant|>b2Xp1q2");
}

TEST(Api, StrftimeNowUsesTheClock) {
    std::string year = render_str("{{ strftime_now('%Y') }}");
    EXPECT_EQ(year.size(), 4u);
    EXPECT_EQ(render_str("{{ strftime_now('%d %b %Y') }}", "{}", pinned_options()), "07 Mar 2025");
}

}  // namespace
}  // namespace kiln::test
