#include "request_fields.h"

#include <cmath>

namespace kiln::server {

namespace {

std::string type_name(const Json& v) {
    if (v.is_boolean()) return "a boolean";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    if (v.is_object()) return "an object";
    return "null";
}

}  // namespace

Json parse_body(const std::string& body) {
    Json j = Json::parse(body, nullptr, false);
    if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON", {}, "invalid_json");
    if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, found " + type_name(j), {}, "invalid_json");
    return j;
}

const Json* field(const Json& obj, const std::string& name) {
    auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

std::optional<bool> get_bool(const Json& obj, const std::string& name) {
    const Json* v = field(obj, name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw bad_field(name, "expected a boolean, found " + type_name(*v));
    return v->get<bool>();
}

std::optional<std::string> get_string(const Json& obj, const std::string& name) {
    const Json* v = field(obj, name);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw bad_field(name, "expected a string, found " + type_name(*v));
    return v->get<std::string>();
}

std::string block_type(const Json& obj, const std::string& where) {
    if (!obj.is_object()) return "";
    const Json* v = field(obj, "type");
    if (!v) return "";
    if (!v->is_string()) throw bad_field(where + ".type", "expected a string, found " + type_name(*v));
    return v->get<std::string>();
}

Json flat_function_tool(const Json& tool, const std::string& where, const char* schema_key) {
    auto name = get_string(tool, "name");
    if (!name) throw bad_field(where + ".name", "missing");
    Json fn = {{"name", *name}, {"parameters", get_object(tool, schema_key) ? tool[schema_key] : Json::object()}};
    if (auto d = get_string(tool, "description")) fn["description"] = *d;
    return {{"type", "function"}, {"function", fn}};
}

std::optional<long long> get_int(const Json& obj, const std::string& name, long long lo, long long hi) {
    const Json* v = field(obj, name);
    if (!v) return std::nullopt;
    long long x = 0;
    if (v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(hi)) {
        throw bad_field(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", found " +
                                  std::to_string(v->get<unsigned long long>()));
    } else if (v->is_number_integer()) {
        x = v->get<long long>();
    } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
               std::fabs(v->get<double>()) < 9e15) {
        x = static_cast<long long>(v->get<double>());
    } else {
        throw bad_field(name, "expected an integer, found " + type_name(*v));
    }
    if (x < lo || x > hi)
        throw bad_field(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", found " +
                                  std::to_string(x));
    return x;
}

std::optional<double> get_number(const Json& obj, const std::string& name, double lo, double hi) {
    const Json* v = field(obj, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw bad_field(name, "expected a number, found " + type_name(*v));
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
        throw bad_field(name, "must be between " + Json(lo).dump() + " and " + Json(hi).dump() + ", found " + v->dump());
    return x;
}

std::vector<std::string> get_strings(const Json& obj, const std::string& name, size_t max_count) {
    const Json* v = field(obj, name);
    std::vector<std::string> out;
    if (!v) return out;
    if (v->is_string()) {
        out.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        for (const Json& s : *v) {
            if (!s.is_string()) throw bad_field(name, "expected strings, found " + type_name(s));
            out.push_back(s.get<std::string>());
        }
    } else {
        throw bad_field(name, "expected a string or an array of strings, found " + type_name(*v));
    }
    if (out.size() > max_count) throw bad_field(name, "at most " + std::to_string(max_count) + " entries");
    for (const auto& s : out)
        if (s.empty()) throw bad_field(name, "an empty string never matches");
    return out;
}

const Json* get_object(const Json& obj, const std::string& name) {
    const Json* v = field(obj, name);
    if (v && !v->is_object()) throw bad_field(name, "expected an object, found " + type_name(*v));
    return v;
}

const Json* get_array(const Json& obj, const std::string& name) {
    const Json* v = field(obj, name);
    if (v && !v->is_array()) throw bad_field(name, "expected an array, found " + type_name(*v));
    return v;
}

}  // namespace kiln::server
