// PyTorch-default Linear and Conv2d initialization from Philox draws.
#include "nn/init.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/rng.h"

namespace cugym::nn {
namespace {

// Rng's "env index" for layer l. Its high word 0x4E4E ("NN") differs from every env's (env
// indices are below 2^32, so their high word holds only the stream id << 24): network weights
// never share draws with env dynamics or policies.
constexpr uint64_t kInitIndexBase = uint64_t{0x4E4E} << 32;  // "NN"

// The "layer" whose key the convolution draws from: beyond any Linear layer's index.
constexpr int kConvInitLayer = 1 << 20;

}  // namespace

void InitLinear(uint64_t seed, int layer, int64_t out, int64_t in, float* weight, float* bias) {
  if (in < 1 || out < 1 || layer < 0) {
    throw std::invalid_argument("InitLinear: layer " + std::to_string(layer) + " of " + std::to_string(in) + " -> " +
                                std::to_string(out) + " units");
  }
  const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in)));
  Rng rng(seed, kInitIndexBase + static_cast<uint64_t>(layer), 0);
  for (int64_t i = 0; i < out * in; ++i) weight[i] = rng.Uniform(-bound, bound);
  for (int64_t i = 0; i < out; ++i) bias[i] = rng.Uniform(-bound, bound);
}

void InitConv2d(uint64_t seed, int64_t out, int64_t in_channels, int64_t kernel, float* weight, float* bias) {
  if (in_channels < 1 || kernel < 1) {
    throw std::invalid_argument("InitConv2d: " + std::to_string(in_channels) + " input channels, kernel " +
                                std::to_string(kernel));
  }
  InitLinear(seed, kConvInitLayer, out, in_channels * kernel * kernel, weight, bias);
}

}  // namespace cugym::nn
