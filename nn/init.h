// PyTorch's default nn.Linear initialization drawn from cugym's counter-based RNG (core/rng.h),
// on the host, so the same seed gives the same weights on every device.
#pragma once

#include <cstdint>

namespace cugym::nn {

// Fills weight [out x in] (row-major) and bias [out] with U(-1/sqrt(in), 1/sqrt(in)): what
// kaiming_uniform_(a=sqrt(5)) gives for the weight, and PyTorch's bias rule. Draws come from
// Philox keyed by (seed, layer) in a counter range no env uses; weights first, row by row, then
// the bias. Throws std::invalid_argument for in < 1 or out < 1.
void InitLinear(uint64_t seed, int layer, int64_t out, int64_t in, float* weight, float* bias);

}  // namespace cugym::nn
