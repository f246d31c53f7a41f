// An HTTP error in the OpenAI shape: {"error": {"message", "type", "param", "code"}}.
// Handlers throw it; the server turns it (and kiln::Error, by its ErrorKind)
// into the status and body.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "kiln/error.h"

namespace kiln::server {

class ApiError : public std::runtime_error {
public:
    ApiError(int status, const std::string& message, std::string param = {}, std::string code = {})
        : std::runtime_error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}
    int status() const { return status_; }
    const std::string& param() const { return param_; }
    const std::string& code() const { return code_; }

private:
    int status_;
    std::string param_, code_;
};

// 400 naming the field.
inline ApiError bad_field(const std::string& field, const std::string& why) {
    return ApiError(400, "'" + field + "': " + why, field, "invalid_value");
}

// The status an engine error maps to.
inline int status_of(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidInput:
        case ErrorKind::Unsupported: return 400;
        case ErrorKind::ResourceExhausted: return 503;
        case ErrorKind::Cancelled: return 499;  // nginx's "client closed request": nobody reads it
        case ErrorKind::Internal: return 500;
    }
    return 500;
}

// OpenAI's error type for a status.
inline const char* error_type(int status) {
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "invalid_request_error";
        case 429: return "rate_limit_error";
        case 503: return "unavailable_error";
        default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

inline nlohmann::json error_body(int status, const std::string& message, const std::string& param = {},
                                 const std::string& code = {}) {
    nlohmann::json e = {{"message", message}, {"type", error_type(status)}, {"param", nullptr}, {"code", nullptr}};
    if (!param.empty()) e["param"] = param;
    if (!code.empty()) e["code"] = code;
    return {{"error", e}};
}

// Anthropic's shape: {"type": "error", "error": {"type", "message"}}, for the
// /v1/messages routes.
inline nlohmann::json anthropic_error_body(int status, const std::string& message) {
    const char* type = status == 400   ? "invalid_request_error"
                       : status == 401 ? "authentication_error"
                       : status == 403 ? "permission_error"
                       : status == 404 ? "not_found_error"
                       : status == 413 ? "request_too_large"
                       : status == 429 ? "rate_limit_error"
                       : status == 503 ? "overloaded_error"
                                       : "api_error";
    return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

// The error body in the shape of the API a path belongs to.
inline nlohmann::json error_body_for(const std::string& path, int status, const std::string& message,
                                     const std::string& param = {}, const std::string& code = {}) {
    if (path.rfind("/v1/messages", 0) == 0) return anthropic_error_body(status, message);
    if (path.rfind("/api/", 0) == 0) return {{"error", message}};  // Ollama's shape
    return error_body(status, message, param, code);
}

}  // namespace kiln::server
