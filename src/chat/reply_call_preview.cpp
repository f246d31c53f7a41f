#include "chat/reply_call_preview.h"

#include "chat/reply_values.h"

namespace kiln::reply_detail {

namespace {

constexpr size_t k_npos = std::string_view::npos;

struct Scan {
    std::string_view body;
    bool complete;
    size_t pos = 0;
    std::vector<CallPreview> out;

    void skip_space() {
        while (pos < body.size() && is_space(body[pos])) ++pos;
    }
    bool at_end() const { return pos >= body.size(); }

    // End of the value at pos, or npos while it may still grow (a number or
    // literal running to the end of an unfinished body may have more to come).
    size_t value_end() const {
        size_t end = json_value_end(body, pos);
        if (end == k_npos) return k_npos;
        const char c = body[pos];
        if (end == body.size() && !complete && c != '{' && c != '[' && c != '"') return k_npos;
        return end;
    }

    // One call object at pos. False: stop scanning (not readable yet, or a call
    // this reader does not preview).
    bool call_object() {
        ++pos;  // '{'
        CallPreview call;
        bool named = false, listed = false;
        for (;;) {
            skip_space();
            if (at_end()) return false;
            if (body[pos] == '}') {
                ++pos;
                if (!listed) out.push_back(call);  // a call without arguments
                return true;
            }
            if (body[pos] != '"') return false;
            size_t key_end = json_value_end(body, pos);
            if (key_end == k_npos) return false;
            auto key = parse_json(body.substr(pos, key_end - pos));
            if (!key || !key->is_string()) return false;
            pos = key_end;
            skip_space();
            if (at_end() || body[pos] != ':') return false;
            ++pos;
            skip_space();
            if (at_end()) return false;
            const std::string k = key->get<std::string>();
            if (k == "function" || k == "id" || k == "tool_name") return false;
            if (k == "arguments" || k == "parameters") {
                if (!named || body[pos] != '{' || listed) return false;
                call.streams = true;
                call.args_from = pos;
                const size_t end = json_value_end(body, pos);
                call.args_complete = end != k_npos;
                call.args_to = call.args_complete ? end : body.size();
                out.push_back(call);
                listed = true;
                if (!call.args_complete) return false;
                pos = end;
            } else {
                const size_t end = value_end();
                if (end == k_npos) return false;
                if (k == "name" && !listed) {
                    auto name = parse_json(body.substr(pos, end - pos));
                    if (!name || !name->is_string()) return false;
                    call.name = std::string(trim(name->get<std::string>()));
                    named = !call.name.empty();
                }
                pos = end;
            }
            skip_space();
            if (at_end()) return false;
            if (body[pos] == ',') {
                ++pos;
                continue;
            }
            if (body[pos] != '}') return false;
        }
    }

    void run() {
        skip_space();
        if (body.compare(pos, 3, "```") == 0) {
            size_t nl = body.find('\n', pos);
            if (nl == k_npos) return;
            pos = nl + 1;
        }
        bool in_list = false;
        for (;;) {
            while (!at_end() && (is_space(body[pos]) || body[pos] == ',' || body[pos] == ';')) ++pos;
            if (at_end()) return;
            if (body[pos] == '[' && !in_list) {
                in_list = true;
                ++pos;
                continue;
            }
            if (body[pos] == ']' && in_list) {
                in_list = false;
                ++pos;
                continue;
            }
            if (body[pos] != '{' || !call_object()) return;
        }
    }
};

}  // namespace

std::vector<CallPreview> preview_json_calls(std::string_view body, bool complete) {
    Scan s{body, complete};
    s.run();
    return std::move(s.out);
}

}  // namespace kiln::reply_detail
