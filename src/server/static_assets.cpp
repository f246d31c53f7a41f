// Serving the embedded web UI: ETag / 304, gzip by Accept-Encoding, no-cache
// (the browser revalidates each load, which costs a 304 per file).
#include "static_assets.h"

#include <httplib.h>

#include <cctype>
#include <string>

namespace kiln::server {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

// Calls f(item) for each comma-separated item of a header value.
template <class F>
void for_each_item(std::string_view list, F f) {
    while (!list.empty()) {
        const size_t comma = list.find(',');
        f(trim(list.substr(0, comma)));
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
}

}  // namespace

bool accepts_gzip(std::string_view accept_encoding) {
    bool gzip = false, star = false, gzip_named = false;
    for_each_item(accept_encoding, [&](std::string_view item) {
        const size_t semi = item.find(';');
        const std::string_view coding = trim(item.substr(0, semi));
        bool zero = false;
        if (semi != std::string_view::npos) {
            std::string_view params = item.substr(semi + 1);
            const size_t q = params.find("q=");
            if (q != std::string_view::npos) {
                // q=0, q=0.0, q=0.000 refuse the coding.
                std::string_view v = trim(params.substr(q + 2));
                zero = !v.empty() && v[0] == '0' && v.find_first_of("123456789") == std::string_view::npos;
            }
        }
        if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) {
            gzip_named = true;
            gzip = !zero;
        } else if (coding == "*") {
            star = !zero;
        }
    });
    return gzip || (!gzip_named && star);
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
    bool match = false;
    for_each_item(if_none_match, [&](std::string_view item) {
        if (item == "*") match = true;
        if (item.substr(0, 2) == "W/") item.remove_prefix(2);
        if (item == etag) match = true;
    });
    return match;
}

const WebAsset* find_web_asset(std::string_view path) {
    for (const WebAsset& a : web_assets())
        if (path == a.path) return &a;
    return nullptr;
}

void serve_web_asset(const WebAsset& asset, const httplib::Request& req, httplib::Response& res) {
    const bool gzip = accepts_gzip(req.get_header_value("Accept-Encoding"));
    // The two encodings are two representations: each has its own strong ETag.
    std::string etag = asset.etag;
    if (gzip) etag.insert(etag.size() - 1, "-gz");
    res.set_header("ETag", etag);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("Vary", "Accept-Encoding");
    res.set_header("X-Content-Type-Options", "nosniff");
    if (req.has_header("If-None-Match") && etag_matches(req.get_header_value("If-None-Match"), etag)) {
        res.status = 304;
        return;
    }
    const WebBytes bytes = gzip ? asset.gzip : asset.plain;
    if (gzip) res.set_header("Content-Encoding", "gzip");
    // A sized content provider: httplib sends the bytes as they are (set_content
    // would let it compress text types a second time).
    res.set_content_provider(bytes.size, asset.content_type, [bytes](size_t offset, size_t length, httplib::DataSink& sink) {
        sink.write(bytes.data + offset, length);
        return true;
    });
}

}  // namespace kiln::server
