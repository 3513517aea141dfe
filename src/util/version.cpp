#include "lutmm/lutmm.hpp"

namespace lutmm {
const char* version() { return LUTMM_VERSION_STRING; }
}  // namespace lutmm
