#include "client_socket.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

#include <httplib.h>

namespace kiln::server {

namespace {

// "address:port" as httplib writes Request::remote_addr / local_addr (numeric host).
bool same_endpoint(const sockaddr_storage& a, socklen_t len, const std::string& addr, int port) {
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    return addr == host && port == std::atoi(serv);
}

bool is_request_socket(int fd, const httplib::Request& req) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
    return same_endpoint(local, local_len, req.local_addr, req.local_port) &&
           same_endpoint(peer, peer_len, req.remote_addr, req.remote_port);
}

}  // namespace

ClientSocket::ClientSocket(const httplib::Request& req) {
    if (req.remote_port <= 0 || req.local_port <= 0) return;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return;
    const int own = dirfd(dir);
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd == own) continue;
        if (is_request_socket(static_cast<int>(fd), req)) {
            fd_ = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
}

bool ClientSocket::gone() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
    if (p.revents & POLLIN) {
        char c;
        return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // 0: end of stream
    }
    return false;
}

}  // namespace kiln::server
