// Shared by the catalog (finding a hub-cache file) and kiln pull (choosing one
// to download): how a :QUANT suffix picks a GGUF file of a repository.
#pragma once

#include <string>

namespace kiln::catalog_detail {

// Whether `quant` (Q4_K_M) is a whole word of the file name, any case: bounded
// by characters that cannot continue a type name (so Q4_K does not match Q4_K_M).
bool names_quant(const std::string& rel, const std::string& quant);

}  // namespace kiln::catalog_detail
