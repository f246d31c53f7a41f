// The web UI's files (web/, and the Debian libjs-* libraries it uses), embedded at
// build time by cmake/embed_web.cmake: each with its gzip and an ETag. Served
// without an API key: they hold no data, and the pages ask for the key themselves.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace kiln::server {

struct WebBytes {
    const char* data;
    size_t size;
};

struct WebAsset {
    const char* path;          // "/", "/explore", "/web/chat.js", ...
    const char* content_type;
    WebBytes plain, gzip;      // gzip -9 -n of plain, made at build time
    const char* etag;          // quoted, from the plain bytes' SHA-256
};

// Every embedded file (generated: web_assets.cpp in the build folder).
std::span<const WebAsset> web_assets();
// The asset at a request path, or null.
const WebAsset* find_web_asset(std::string_view path);
// Answers with the asset: 304 when If-None-Match names its ETag, its gzip when
// Accept-Encoding allows gzip, the plain bytes otherwise.
void serve_web_asset(const WebAsset& asset, const httplib::Request& req, httplib::Response& res);

// Whether an Accept-Encoding header value accepts gzip (a "gzip" or "*" entry
// whose q is not 0). Exposed for the tests.
bool accepts_gzip(std::string_view accept_encoding);
// Whether an If-None-Match header value names `etag` ("*", a list, W/ prefixes).
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace kiln::server
