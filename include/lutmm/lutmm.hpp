#pragma once
// lutmm: matrix multiplication with lookup-table-quantized weights. Include this one header.
#include "lutmm/config.hpp"
#include "lutmm/device.hpp"
#include "lutmm/dtype.hpp"
#include "lutmm/error.hpp"
#include "lutmm/format.hpp"
#include "lutmm/gemm.hpp"
#include "lutmm/pack.hpp"
#include "lutmm/quantize.hpp"
#include "lutmm/reference.hpp"
#include "lutmm/shapes.hpp"
#include "lutmm/tune.hpp"

namespace lutmm {
const char* version();  // "0.1.0"
}
