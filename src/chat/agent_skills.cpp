// Skills folders (kiln/agent.h): SKILL.md front matter read, one tool that lists
// the skills and hands the model a skill's text. Nothing in a skill is run.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/agent.h"
#include "kiln/error.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_skill_bytes = 1 << 20;  // a SKILL.md is instructions, not data
constexpr size_t k_max_listed_files = 200;

std::string read_file(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw Error(path.string() + ": cannot read: " + ec.message(), ErrorKind::InvalidInput);
    if (size > k_max_skill_bytes)
        throw Error(path.string() + ": " + std::to_string(size) + " bytes, more than a skill may have (" +
                        std::to_string(k_max_skill_bytes) + ")",
                    ErrorKind::InvalidInput);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot open", ErrorKind::InvalidInput);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string trim(std::string s) {
    const char* ws = " \t\r";
    s.erase(0, s.find_first_not_of(ws));
    s.erase(s.find_last_not_of(ws) + 1);
    return s;
}

// The front matter's `key: value` lines (YAML's plain and quoted scalars on one
// line; other keys such as license or metadata are allowed and ignored).
Skill parse_front_matter(const fs::path& file, const std::string& text) {
    std::istringstream in(text);
    std::string line;
    int line_no = 1;
    if (!std::getline(in, line) || trim(line) != "---")
        throw Error(file.string() + ":1: expected front matter: a first line '---', then name: and description:",
                    ErrorKind::InvalidInput);
    Skill s;
    bool closed = false;
    while (std::getline(in, line)) {
        ++line_no;
        const std::string t = trim(line);
        if (t == "---") {
            closed = true;
            break;
        }
        if (t.empty() || t[0] == '#' || line[0] == ' ' || line[0] == '\t') continue;  // comments, nested values
        const size_t colon = t.find(':');
        if (colon == std::string::npos)
            throw Error(file.string() + ":" + std::to_string(line_no) + ": expected 'key: value', found '" + t + "'",
                        ErrorKind::InvalidInput);
        const std::string key = trim(t.substr(0, colon));
        std::string value = trim(t.substr(colon + 1));
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        else if (!value.empty() && (value.front() == '"' || value.front() == '\''))
            throw Error(file.string() + ":" + std::to_string(line_no) + ": unterminated quoted value of '" + key + "'",
                        ErrorKind::InvalidInput);
        if ((key == "name" || key == "description") && (value == "|" || value == ">" || value == "|-" || value == ">-"))
            throw Error(file.string() + ":" + std::to_string(line_no) + ": '" + key +
                            "' must be on one line (block scalars are not read)",
                        ErrorKind::InvalidInput);
        if (key == "name") s.name = value;
        if (key == "description") s.description = value;
    }
    if (!closed)
        throw Error(file.string() + ": the front matter has no closing '---'", ErrorKind::InvalidInput);
    if (s.name.empty()) throw Error(file.string() + ": the front matter has no name:", ErrorKind::InvalidInput);
    if (s.description.empty())
        throw Error(file.string() + ": the front matter has no description:", ErrorKind::InvalidInput);
    return s;
}

// The files of a skill's folder other than SKILL.md, relative, sorted.
std::vector<std::string> other_files(const fs::path& folder) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file()) continue;
        std::string rel = fs::relative(it->path(), folder).generic_string();
        if (rel == "SKILL.md") continue;
        out.push_back(rel);
        if (out.size() > k_max_listed_files) break;
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<Skill> load_skills(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a folder (--skills-dir)", ErrorKind::InvalidInput);
    std::vector<Skill> out;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_directory()) continue;
        const fs::path md = e.path() / "SKILL.md";
        if (!fs::is_regular_file(md)) continue;  // a folder without SKILL.md is not a skill
        Skill s = parse_front_matter(md, read_file(md));
        s.folder = e.path().string();
        s.path = md.string();
        for (const Skill& o : out)
            if (o.name == s.name) throw Error(md.string() + ": a second skill named '" + s.name + "' (also " + o.path + ")");
        out.push_back(std::move(s));
    }
    if (ec) throw Error(dir + ": cannot list: " + ec.message(), ErrorKind::InvalidInput);
    std::sort(out.begin(), out.end(), [](const Skill& a, const Skill& b) { return a.name < b.name; });
    return out;
}

AgentTool skills_tool(std::vector<Skill> skills) {
    AgentTool t;
    t.name = "skills";
    t.origin = "skills";
    std::string list;
    for (const Skill& s : skills) list += "\n- " + s.name + ": " + s.description;
    t.description = "Instructions for particular tasks. Call with {\"name\": \"<skill>\"} to read a skill's "
                    "instructions before doing its task; call with {} to list the skills. Skills:" +
                    (list.empty() ? std::string(" (none)") : list);
    t.parameters = nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"name": {"type": "string", "description": "the skill to load"}},
            "additionalProperties": false})");
    t.handler = [skills = std::move(skills)](const nlohmann::json& args, const ToolInvocation&) -> ToolResult {
        if (!args.contains("name")) {
            std::string out = skills.empty() ? "There are no skills." : "Skills:";
            for (const Skill& s : skills) out += "\n- " + s.name + ": " + s.description;
            return {out};
        }
        const std::string name = args["name"].get<std::string>();
        for (const Skill& s : skills) {
            if (s.name != name) continue;
            std::string out = read_file(s.path);
            const auto files = other_files(s.folder);
            if (!files.empty()) {
                out += "\n\nFiles in this skill's folder (" + s.folder + "):";
                for (size_t i = 0; i < files.size() && i < k_max_listed_files; ++i) out += "\n- " + files[i];
                if (files.size() > k_max_listed_files) out += "\n- ...";
            }
            return {out};
        }
        std::string names;
        for (const Skill& s : skills) names += (names.empty() ? "" : ", ") + s.name;
        return {"there is no skill '" + name + "'; the skills are: " + (names.empty() ? "(none)" : names), true};
    };
    return t;
}

}  // namespace kiln
