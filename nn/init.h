// PyTorch's default nn.Linear and nn.Conv2d initialization drawn from cugym's counter-based RNG (core/rng.h),
// on the host, so the same seed gives the same weights on every device.
#pragma once

#include <cstdint>

namespace cugym::nn {

// Fills weight [out x in] (row-major) and bias [out] with U(-1/sqrt(in), 1/sqrt(in)): what
// kaiming_uniform_(a=sqrt(5)) gives for the weight, and PyTorch's bias rule. Draws come from
// Philox keyed by (seed, layer) in a counter range no env uses; weights first, row by row, then
// the bias. Throws std::invalid_argument for in < 1 or out < 1.
void InitLinear(uint64_t seed, int layer, int64_t out, int64_t in, float* weight, float* bias);

// nn.Conv2d's default: weight [out][in_channels][kernel][kernel] and bias [out] from
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels * kernel^2 (kaiming_uniform_ with
// a = sqrt(5), and the bias rule). Drawn as InitLinear's [out x fan_in] weight, from a Philox key
// of its own (no Linear layer's), so adding a convolution leaves the Linear layers' draws as they were.
void InitConv2d(uint64_t seed, int64_t out, int64_t in_channels, int64_t kernel, float* weight, float* bias);

}  // namespace cugym::nn
