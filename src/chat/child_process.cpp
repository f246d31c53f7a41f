// Child processes for MCP servers (src/chat/child_process.h).
#include "chat/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "kiln/error.h"

extern char** environ;

namespace kiln::chat {

namespace {

constexpr size_t k_stderr_tail = 4096;

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

int poll_timeout_ms(ChildProcess::Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ChildProcess::Clock::now());
    return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1000 * 60 * 60));
}

// write() with SIGPIPE blocked for this thread, and a SIGPIPE that the write
// raised consumed before the mask is restored: a library must not change the
// process's signal dispositions, and a closed pipe must be an error, not death.
ssize_t write_no_sigpipe(int fd, const char* data, size_t n) {
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigset_t pending;
    sigpending(&pending);
    const bool was_pending = sigismember(&pending, SIGPIPE);
    ssize_t r = ::write(fd, data, n);
    const int saved = errno;
    if (r < 0 && saved == EPIPE && !was_pending) {
        const timespec zero{0, 0};
        while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = saved;
    return r;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                           const std::string& cwd) {
    if (argv.empty() || argv[0].empty()) throw Error("no command to start", ErrorKind::InvalidInput);
    int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    auto cleanup = [&] {
        for (int* p : {in_pipe, out_pipe, err_pipe})
            for (int k = 0; k < 2; ++k)
                if (p[k] >= 0) ::close(p[k]);
    };
    // O_CLOEXEC: the child gets only the three ends dup2 puts on 0, 1, 2 (and
    // other children never hold this one's pipes open).
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        const int e = errno;
        cleanup();
        throw Error("cannot start '" + argv[0] + "': pipe: " + std::strerror(e), ErrorKind::ResourceExhausted);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

    // The environment: kiln's, with the configured variables added or replaced.
    std::vector<std::string> env_strings;
    for (char** e = environ; e && *e; ++e) {
        std::string_view kv(*e);
        const std::string key(kv.substr(0, kv.find('=')));
        if (!env.count(key)) env_strings.emplace_back(kv);
    }
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (auto& s : args) argp.push_back(s.data());
    argp.push_back(nullptr);

    const int rc = posix_spawnp(&pid_, argp[0], &fa, &attr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        cleanup();
        pid_ = -1;
        throw Error("cannot start '" + argv[0] + "': " + std::strerror(rc) +
                        (cwd.empty() ? std::string() : " (in folder " + cwd + ")"),
                    ErrorKind::InvalidInput);
    }
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    in_ = in_pipe[1];
    out_ = out_pipe[0];
    err_ = err_pipe[0];
    set_nonblocking(in_);
    set_nonblocking(out_);
    set_nonblocking(err_);
}

ChildProcess::~ChildProcess() { stop(std::chrono::milliseconds(500)); }

bool ChildProcess::write_all(std::string_view data, Clock::time_point deadline, std::string& error) {
    while (!data.empty()) {
        if (in_ < 0) {
            error = "its stdin is closed";
            return false;
        }
        ssize_t n = write_no_sigpipe(in_, data.data(), data.size());
        if (n > 0) {
            data.remove_prefix(static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            error = errno == EPIPE ? "it closed its stdin" : std::string("write: ") + std::strerror(errno);
            close_fd(in_);
            return false;
        }
        pollfd p{in_, POLLOUT, 0};
        const int ms = poll_timeout_ms(deadline);
        if (ms == 0 || ::poll(&p, 1, ms) == 0) {
            error = "it does not read its stdin";
            return false;
        }
        drain_stderr();  // a child blocked on a full stderr pipe would never read
    }
    return true;
}

void ChildProcess::drain_stderr() {
    if (err_ < 0) return;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(err_, buf, sizeof buf);
        if (n > 0) {
            err_tail_.append(buf, static_cast<size_t>(n));
            if (err_tail_.size() > 2 * k_stderr_tail) err_tail_.erase(0, err_tail_.size() - k_stderr_tail);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) close_fd(err_);
        return;
    }
}

ChildProcess::ReadStatus ChildProcess::read_some(std::string& out, Clock::time_point deadline) {
    for (;;) {
        if (out_ < 0) return ReadStatus::Eof;
        pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
        const int nfds = err_ >= 0 ? 2 : 1;
        const int ms = poll_timeout_ms(deadline);
        const int r = ::poll(fds, nfds, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return ReadStatus::Timeout;
        if (nfds == 2 && fds[1].revents) drain_stderr();
        if (fds[0].revents) {
            char buf[65536];
            ssize_t n = ::read(out_, buf, sizeof buf);
            if (n > 0) {
                out.append(buf, static_cast<size_t>(n));
                return ReadStatus::Data;
            }
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                close_fd(out_);
                drain_stderr();
                return ReadStatus::Eof;
            }
        }
    }
}

bool ChildProcess::running() {
    if (reaped_ || pid_ < 0) return false;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
        reaped_ = true;
        wait_status_ = status;
        return false;
    }
    return true;
}

std::string ChildProcess::state() {
    if (running()) return "running";
    if (pid_ < 0) return "not started";
    if (WIFEXITED(wait_status_)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
    if (WIFSIGNALED(wait_status_)) {
        const int s = WTERMSIG(wait_status_);
        const char* name = sigabbrev_np(s);
        return "killed by signal " + std::to_string(s) + (name ? std::string(" (SIG") + name + ")" : std::string());
    }
    return "stopped";
}

std::string ChildProcess::stderr_tail() const {
    std::string t = err_tail_.size() > k_stderr_tail ? err_tail_.substr(err_tail_.size() - k_stderr_tail) : err_tail_;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    // The last few lines, joined.
    size_t start = t.size(), lines = 0;
    while (start > 0 && lines < 5) {
        start = t.rfind('\n', start - 1);
        if (start == std::string::npos) {
            start = 0;
            break;
        }
        ++lines;
    }
    t = t.substr(start);
    for (char& c : t)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return t.size() > 600 ? "..." + t.substr(t.size() - 600) : t;
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
    close_fd(in_);
    if (pid_ >= 0 && !reaped_) {
        auto wait_until = [&](Clock::time_point until) {
            while (running()) {
                if (Clock::now() >= until) return false;
                drain_stderr();
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            return true;
        };
        if (!wait_until(Clock::now() + grace)) {
            ::kill(pid_, SIGTERM);
            if (!wait_until(Clock::now() + std::chrono::milliseconds(500))) {
                ::kill(pid_, SIGKILL);
                int status = 0;
                while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
                }
                reaped_ = true;
                wait_status_ = status;
            }
        }
    }
    close_fd(out_);
    close_fd(err_);
}

}  // namespace kiln::chat
