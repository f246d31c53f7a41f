// kiln — the one error type of the library.
//
// Library code reports every failure by throwing kiln::Error with a message that
// names the file, key, tensor or field and what was expected versus found, and a
// category that a caller can act on without matching strings (the server maps it
// to an HTTP status). The CLI turns an Error into one line on stderr and exit
// status 1. Nothing in the library aborts, exits or prints.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln {

enum class ErrorKind {
    InvalidInput,       // a file, template, prompt or request that is wrong (HTTP 400)
    Unsupported,        // well-formed, but kiln does not handle it (an architecture, a type, a keyword)
    ResourceExhausted,  // memory, sequence slots, a sequence's context
    Cancelled,          // stopped on request
    Internal,           // a bug in kiln
};
std::string_view error_kind_name(ErrorKind kind);  // "invalid_input", "unsupported", ...

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, ErrorKind kind = ErrorKind::InvalidInput)
        : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

private:
    ErrorKind kind_;
};

}  // namespace kiln
