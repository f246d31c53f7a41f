// Every real chat template in tests/data/shared/templates/ rendered over the chat
// cases of tests/golden/jinja/cases.json, against Python jinja2 in Hugging Face's
// environment (tests/golden/jinja/templates/<name>.json): equal byte for byte, or
// both raise. The folder is enumerated, so a template dropped in is tested (and
// fails until tools/jinja_fixtures.py has produced its expectations).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "jinja_test_util.h"
#include "kiln/chat_template.h"

namespace kiln::test {
namespace {

// Templates jinja2 in Hugging Face's sandbox cannot render but llama.cpp (and kiln)
// can. For these, cases where jinja2 failed only for that reason are compared with
// jinja2's output in the same environment plus llama.cpp's two extensions
// (list.append / pop / extend / insert; the from_json filter): "extended_output".
const std::map<std::string, const char*>& llama_cpp_extensions() {
    static const std::map<std::string, const char*> m = {
        {"Kimi-K2-Thinking", "uses list.append / list.pop, refused by ImmutableSandboxedEnvironment"},
    };
    return m;
}

std::vector<std::string> template_names() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(data_path("shared/templates")))
        if (e.path().extension() == ".jinja") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string sanitize(std::string name) {
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
}

// Renders one case through the chat wrapper, as the CLI and server do.
bool render_case(const jinja::Template& tmpl, const ojson& c, const std::string& bos, const std::string& eos,
                 std::string& out, std::string& err) {
    chat::ChatRequest req;
    req.messages = c.at("messages");
    if (c.contains("tools")) req.tools = c.at("tools");
    req.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    if (c.contains("thinking")) req.enable_thinking = c.at("thinking").get<bool>();
    req.bos_token = bos;
    req.eos_token = eos;
    req.render.now = fixed_now();
    try {
        out = chat::apply_chat_template(tmpl, req);
        return true;
    } catch (const kiln::Error& e) {
        err = e.what();
        return false;
    }
}

void check_template(const std::string& name, const std::string& source, const ojson& expected, const std::string& bos,
                    const std::string& eos) {
    const ojson cases = load_json(golden_path("jinja/cases.json"));
    const auto extension = llama_cpp_extensions().find(name);
    std::unique_ptr<jinja::Template> tmpl;
    std::string parse_error;
    try {
        tmpl = std::make_unique<jinja::Template>(source);
    } catch (const jinja::TemplateError& e) {
        parse_error = e.what();
    }
    int compared = 0;
    for (const auto& c : cases.at("cases")) {
        const std::string case_name = c.at("name").get<std::string>();
        SCOPED_TRACE("template " + name + ", case " + case_name);
        ASSERT_TRUE(expected.contains(case_name)) << "no expectation: rerun tools/jinja_fixtures.py";
        const ojson& want = expected.at(case_name);
        std::string out, err = parse_error;
        bool ok = tmpl && render_case(*tmpl, c, bos, eos, out, err);
        if (want.contains("error")) {
            if (want.contains("extended_output")) {
                ASSERT_TRUE(extension != llama_cpp_extensions().end())
                    << "jinja2 renders this only with llama.cpp's extensions: list the template in llama_cpp_extensions()";
                ASSERT_TRUE(ok) << "kiln failed: " << err;
                EXPECT_EQ(out, want.at("extended_output").get<std::string>()) << extension->second;
            } else {
                EXPECT_FALSE(ok) << "jinja2 raised (" << want.at("error").get<std::string>() << ") but kiln rendered:\n" << out;
            }
        } else {
            ASSERT_TRUE(ok) << "kiln failed: " << err;
            EXPECT_EQ(out, want.at("output").get<std::string>());
        }
        ++compared;
    }
    EXPECT_GT(compared, 0);
}

class Templates : public ::testing::TestWithParam<std::string> {};

TEST_P(Templates, MatchesJinja2) {
    const std::string name = GetParam();
    const std::string fixture = golden_path("jinja/templates/" + name + ".json");
    ASSERT_TRUE(std::filesystem::exists(fixture)) << "missing " << fixture << ": run tools/jinja_fixtures.py";
    const ojson cases = load_json(golden_path("jinja/cases.json"));
    check_template(name, read_file(data_path("shared/templates/" + name + ".jinja")), load_json(fixture).at("results"),
                   cases.at("bos_token").get<std::string>(), cases.at("eos_token").get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(Shared, Templates, ::testing::ValuesIn(template_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return sanitize(info.param); });

// The templates of the real models, as committed by the fixture script.
TEST(ModelTemplates, SmolLM2FixtureMatchesJinja2) {
    const std::string fixture = golden_path("jinja/models/smollm2.json");
    ASSERT_TRUE(std::filesystem::exists(fixture));
    const ojson m = load_json(fixture);
    check_template("smollm2", m.at("template").get<std::string>(), m.at("results"), m.at("bos_token").get<std::string>(),
                   m.at("eos_token").get<std::string>());
}

// The template and BOS / EOS texts kiln reads from the GGUF are the ones the fixture used.
TEST(ModelTemplates, SmolLM2FromGguf) {
    KILN_REQUIRE_MODEL(smollm2_path());
    const ojson m = load_json(golden_path("jinja/models/smollm2.json"));
    gguf::File file = gguf::File::open(smollm2_path());
    chat::ModelTemplate mt = chat::model_template(file);
    ASSERT_TRUE(mt.source.has_value());
    EXPECT_EQ(*mt.source, m.at("template").get<std::string>());
    EXPECT_EQ(mt.bos_token, m.at("bos_token").get<std::string>());
    EXPECT_EQ(mt.eos_token, m.at("eos_token").get<std::string>());
}

TEST(ModelTemplates, Gemma3HasNoTemplate) {
    KILN_REQUIRE_MODEL(gemma3_path());
    gguf::File file = gguf::File::open(gemma3_path());
    chat::ModelTemplate mt = chat::model_template(file);
    EXPECT_FALSE(mt.source.has_value());
    EXPECT_FALSE(mt.bos_token.empty());
}

}  // namespace
}  // namespace kiln::test
