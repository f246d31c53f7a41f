// Runs the built `kiln` binary and captures its output and exit status.
#pragma once

#include <string>

namespace kiln::test {

struct CliResult {
    int status = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

// args are passed through /bin/sh: quote them as needed.
CliResult run_kiln(const std::string& args, const std::string& stdin_text = "");

}  // namespace kiln::test
