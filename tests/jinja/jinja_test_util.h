// Helpers shared by the Jinja tests: fixtures, JSON -> Value, the pinned clock.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/jinja/ops.h"
#include "chat/jinja/render.h"
#include "chat/jinja/value.h"
#include "kiln/jinja.h"
#include "support/test_support.h"

namespace kiln::test {

using ojson = nlohmann::ordered_json;

inline ojson load_json(const std::string& path) { return ojson::parse(read_file(path)); }

// The Values a context JSON describes (key order kept).
inline jinja::Value to_value(const ojson& j) { return jinja::json_parse(j.dump()); }

// strftime_now pinned to the fixture script's FIXED_NOW (2025-03-07 14:05:09).
inline std::tm fixed_now() {
    std::tm t{};
    t.tm_year = 2025 - 1900;
    t.tm_mon = 2;
    t.tm_mday = 7;
    t.tm_hour = 14;
    t.tm_min = 5;
    t.tm_sec = 9;
    std::time_t secs = timegm(&t);  // fills in the weekday and the day of the year
    std::tm out{};
    gmtime_r(&secs, &out);
    return out;
}

inline jinja::RenderOptions pinned_options() {
    jinja::RenderOptions o;
    o.now = fixed_now();
    return o;
}

}  // namespace kiln::test
