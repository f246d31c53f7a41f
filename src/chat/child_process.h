// A child process with pipes on its stdin, stdout and stderr, started without a
// shell (posix_spawnp) in a process group of its own (the terminal's Ctrl-C
// stops kiln's reply, not the servers), read and written with deadlines, and
// always reaped. Writing to a child that has exited gives an error, not SIGPIPE.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::chat {

class ChildProcess {
public:
    using Clock = std::chrono::steady_clock;

    // Throws kiln::Error naming argv[0] when it cannot be started.
    ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                 const std::string& cwd);
    ~ChildProcess();  // stop() with a short grace period
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Writes all of `data` before the deadline; false (and `error` set) when the
    // child is gone, has closed its stdin or does not read in time.
    bool write_all(std::string_view data, Clock::time_point deadline, std::string& error);

    enum class ReadStatus { Data, Timeout, Eof };
    // Waits until the child writes to stdout (appended to `out`), closes it, or
    // the deadline passes. Its stderr is drained meanwhile (stderr_tail).
    ReadStatus read_some(std::string& out, Clock::time_point deadline);

    // Whether it still runs (reaps it when it has exited).
    bool running();
    // "running", "exited with status N", "killed by signal N (NAME)".
    std::string state();
    // The last few KiB it wrote to stderr, one line, for error messages.
    std::string stderr_tail() const;

    // Closes its stdin, waits up to `grace` for it to exit, then SIGTERM, then
    // SIGKILL; reaps it.
    void stop(std::chrono::milliseconds grace);

private:
    void drain_stderr();
    pid_t pid_ = -1;
    int in_ = -1, out_ = -1, err_ = -1;  // our ends
    bool reaped_ = false;
    int wait_status_ = 0;
    std::string err_tail_;
};

}  // namespace kiln::chat
