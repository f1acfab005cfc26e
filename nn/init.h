// Initial weights drawn from cugym's counter-based RNG (core/rng.h), on the host, so the same seed
// gives the same weights on every device: PyTorch's default nn.Linear and nn.Conv2d initialization,
// and torch.nn.init.orthogonal_ with a gain (CleanRL's layer_init, PPO's networks).
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

// torch.nn.init.orthogonal_(weight, gain) for weight [out x in] (row-major), and bias [out] = 0:
// the rows (out <= in) or the columns (out > in), whichever are fewer, are orthonormal, times
// `gain`, so W W^T = gain^2 I for a wide or square weight and W^T W = gain^2 I for a tall one.
// As PyTorch makes it: a [max(out, in) x min(out, in)] matrix of standard normal draws, A = QR,
// each column of Q times the sign of R's diagonal entry, transposed for a wide weight. The draws
// are Box-Muller pairs from InitLinear's Philox key for (seed, layer), A column by column; the QR
// is Householder's, in double. Throws std::invalid_argument for in < 1, out < 1 or a gain that
// is not finite.
void InitOrthogonal(uint64_t seed, int layer, int64_t out, int64_t in, double gain, float* weight, float* bias);

// orthogonal_ on a convolution's weight [out][in_channels][kernel][kernel], which PyTorch
// flattens to [out x in_channels * kernel^2] (InitOrthogonal's weight), from InitConv2d's key;
// bias [out] = 0.
void InitConv2dOrthogonal(uint64_t seed, int64_t out, int64_t in_channels, int64_t kernel, double gain, float* weight,
                          float* bias);

}  // namespace cugym::nn
