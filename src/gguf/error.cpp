// The error categories' names (kiln/error.h). Here, in the lowest layer, because
// every layer throws kiln::Error.
#include "kiln/error.h"

namespace kiln {

std::string_view error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidInput: return "invalid_input";
        case ErrorKind::Unsupported: return "unsupported";
        case ErrorKind::ResourceExhausted: return "resource_exhausted";
        case ErrorKind::Cancelled: return "cancelled";
        case ErrorKind::Internal: return "internal";
    }
    return "internal";
}

}  // namespace kiln
