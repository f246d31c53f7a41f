#include "cli/cli_runner.h"

#include <sys/wait.h>

#include <cstdio>

#include "support/test_support.h"

namespace kiln::test {

CliResult run_kiln(const std::string& args, const std::string& stdin_text) {
    const std::string dir = temp_dir();
    const std::string in = dir + "/cli_stdin", out = dir + "/cli_stdout", err = dir + "/cli_stderr";
    write_file(in, stdin_text);
    std::string cmd = std::string(KILN_BINARY_DIR) + "/kiln " + args + " <" + in + " >" + out + " 2>" + err;
    int rc = std::system(cmd.c_str());
    CliResult r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
}

}  // namespace kiln::test
