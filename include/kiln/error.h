// kiln — the one error type of the library.
//
// Library code reports every failure by throwing kiln::Error with a message that
// names the file, key, tensor or field and what was expected versus found. The
// CLI turns it into one line on stderr and exit status 1; the server into a JSON
// error body. Nothing in the library aborts, exits or prints.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kiln
