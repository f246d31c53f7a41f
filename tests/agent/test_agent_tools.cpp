// ToolSet (names, schemas compiled by the structured-output validator, argument
// checks) and skills folders, without a model.
#include <gtest/gtest.h>

#include "kiln/agent.h"
#include "kiln/error.h"
#include "support/test_support.h"

namespace {

kiln::AgentTool tool(const std::string& name, const char* schema) {
    kiln::AgentTool t;
    t.name = name;
    t.description = "test tool";
    t.parameters = nlohmann::ordered_json::parse(schema);
    t.handler = [](const nlohmann::json&, const kiln::ToolInvocation&) { return kiln::ToolResult{"ok"}; };
    return t;
}

std::string add_error(kiln::ToolSet& set, kiln::AgentTool t) {
    try {
        set.add(std::move(t));
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

const char* k_add = R"({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
                        "unit": {"enum": ["m", "cm"]}}, "required": ["a", "b"], "additionalProperties": false})";

}  // namespace

TEST(AgentTools, NamesAndSchemasAreChecked) {
    kiln::ToolSet set;
    EXPECT_EQ(add_error(set, tool("add", k_add)), "");
    EXPECT_NE(add_error(set, tool("add", k_add)).find("tool 'add' (built-in): a tool of that name is already offered"),
              std::string::npos);
    EXPECT_NE(add_error(set, tool("bad name", k_add)).find("a name is 1-64 of"), std::string::npos);
    EXPECT_NE(add_error(set, tool("arr", R"({"type": "array"})")).find("must be a JSON Schema of type \"object\""),
              std::string::npos);
    // A schema the validator cannot enforce exactly is refused, naming the keyword.
    const std::string e = add_error(set, tool("notty", R"({"type": "object", "not": {"required": ["x", "y"]}})"));
    EXPECT_NE(e.find("tool 'notty' (built-in): its argument schema cannot be checked"), std::string::npos) << e;
    EXPECT_NE(e.find("not"), std::string::npos) << e;
    kiln::AgentTool no_handler = tool("nh", k_add);
    no_handler.handler = nullptr;
    EXPECT_NE(add_error(set, no_handler).find("no handler"), std::string::npos);
    ASSERT_EQ(set.size(), 1u);
    const nlohmann::json defs = set.definitions();
    ASSERT_EQ(defs.size(), 1u);
    EXPECT_EQ(defs[0]["type"], "function");
    EXPECT_EQ(defs[0]["function"]["name"], "add");
    EXPECT_EQ(defs[0]["function"]["parameters"]["required"], nlohmann::json({"a", "b"}));
}

TEST(AgentTools, ArgumentsAgainstTheSchema) {
    kiln::ToolSet set;
    set.add(tool("add", k_add));
    const kiln::AgentTool& t = *set.find("add");
    EXPECT_EQ(set.check_arguments(t, {{"a", 1}, {"b", 2.5}}), "");
    // Key order does not matter (the validator reads the schema's order; kiln writes it so).
    EXPECT_EQ(set.check_arguments(t, nlohmann::json::parse(R"({"unit": "cm", "b": 2, "a": 1})")), "");
    std::string why = set.check_arguments(t, {{"a", "two"}, {"b", 2}});
    EXPECT_NE(why.find("the arguments {\"a\":\"two\",\"b\":2} do not match the parameters schema of 'add': not valid from byte 5"),
              std::string::npos)
        << why;
    EXPECT_NE(set.check_arguments(t, {{"a", 1}}).find("do not match"), std::string::npos);
    EXPECT_NE(set.check_arguments(t, {{"a", 1}, {"b", 2}, {"c", 3}}).find("do not match"), std::string::npos);
    EXPECT_NE(set.check_arguments(t, {{"a", 1}, {"b", 2}, {"unit", "km"}}).find("do not match"), std::string::npos);
}

TEST(AgentSkills, FolderAndTool) {
    const std::string dir = kiln::test::data_path("agent/skills");
    auto skills = kiln::load_skills(dir);
    ASSERT_EQ(skills.size(), 2u);  // not-a-skill has no SKILL.md
    EXPECT_EQ(skills[0].name, "haiku");
    EXPECT_EQ(skills[1].name, "unit-convert");
    EXPECT_EQ(skills[1].description, "Convert between metric and imperial units");  // quotes removed

    kiln::ToolSet set;
    set.add(kiln::skills_tool(skills));
    const kiln::AgentTool& t = *set.find("skills");
    EXPECT_NE(t.description.find("- unit-convert: Convert between metric and imperial units"), std::string::npos);
    EXPECT_FALSE(t.needs_approval);  // it only reads the folder
    const kiln::ToolResult list = t.handler(nlohmann::json::object(), {});
    EXPECT_EQ(list.content, "Skills:\n- haiku: Write a haiku (5-7-5 syllables)\n- unit-convert: Convert between metric and imperial units");
    const kiln::ToolResult load = t.handler({{"name", "unit-convert"}}, {});
    EXPECT_FALSE(load.is_error);
    EXPECT_NE(load.content.find("1 inch = 2.54 cm"), std::string::npos);
    EXPECT_NE(load.content.find("Files in this skill's folder"), std::string::npos);
    EXPECT_NE(load.content.find("\n- scripts/convert.py\n- table.csv"), std::string::npos) << load.content;
    const kiln::ToolResult none = t.handler({{"name", "juggling"}}, {});
    EXPECT_TRUE(none.is_error);
    EXPECT_EQ(none.content, "there is no skill 'juggling'; the skills are: haiku, unit-convert");
    EXPECT_NE(set.check_arguments(t, {{"nam", "x"}}), "");  // additionalProperties false

    try {
        kiln::load_skills(kiln::test::data_path("agent/bad-skills"));
        FAIL() << "a SKILL.md without a closing --- loaded";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("broken/SKILL.md: the front matter has no closing '---'"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(kiln::load_skills(kiln::test::data_path("agent/no-such-folder")), kiln::Error);
}
