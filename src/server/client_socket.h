// The connection a request came on, to see whether its client has gone while a
// non-streaming reply is generated. cpp-httplib (0.11) gives a handler no socket
// and no "connection closed" check, and a non-streaming handler writes nothing
// until the end, so a write cannot tell either; the socket is found by its two
// addresses, which stay unique while the handler runs (httplib closes it after).
#pragma once

#include <string>

namespace httplib {
struct Request;
}

namespace kiln::server {

class ClientSocket {
public:
    // Finds the request's socket among the process's descriptors; when none
    // matches (not a TCP request), gone() is always false.
    explicit ClientSocket(const httplib::Request& req);

    // The client closed its side or the connection broke. Bytes waiting to be
    // read (a pipelined next request) do not count.
    bool gone() const;

private:
    int fd_ = -1;
};

}  // namespace kiln::server
