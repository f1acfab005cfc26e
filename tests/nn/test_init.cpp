// PyTorch-default initialization from the counter RNG: bounds, moments, determinism across
// seeds, layers and devices.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/init.h"
#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

TEST(Init, UniformWithinOneOverSqrtFanIn) {
  const int out = 256, in = 256;
  std::vector<float> w(out * in), b(out);
  InitLinear(7, 0, out, in, w.data(), b.data());
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  double sum = 0, sum_sq = 0, lo = 1, hi = -1;
  for (float v : w) {
    ASSERT_LE(std::fabs(v), bound);
    sum += v;
    sum_sq += static_cast<double>(v) * v;
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
  }
  for (float v : b) ASSERT_LE(std::fabs(v), bound);
  const double n = w.size();
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  // U(-c, c): mean 0 (standard error c / sqrt(3n)), variance c^2 / 3 (within 2% at n = 65536).
  EXPECT_LT(std::fabs(mean), 4 * bound / std::sqrt(3 * n));
  EXPECT_NEAR(var, bound * bound / 3, 0.02 * bound * bound / 3);
  // The range is covered.
  EXPECT_LT(lo, -0.99 * bound);
  EXPECT_GT(hi, 0.99 * bound);
}

TEST(Init, SameSeedSameWeightsOtherwiseDifferent) {
  std::vector<float> w1(12), b1(3), w2(12), b2(3);
  InitLinear(42, 1, 3, 4, w1.data(), b1.data());
  InitLinear(42, 1, 3, 4, w2.data(), b2.data());
  EXPECT_EQ(w1, w2);
  EXPECT_EQ(b1, b2);
  InitLinear(43, 1, 3, 4, w2.data(), b2.data());
  EXPECT_NE(w1, w2);
  InitLinear(42, 2, 3, 4, w2.data(), b2.data());  // another layer, other draws
  EXPECT_NE(w1, w2);
  EXPECT_THROW(InitLinear(42, 0, 3, 0, w2.data(), b2.data()), std::invalid_argument);
}

TEST(Init, MlpSameWeightsOnEveryDevice) {
  MlpOptions o;
  o.seed = 123;
  Mlp cpu(MakeBackend(Device::kCpu), {4, 120, 84, 2}, o);
  const std::vector<float> host = ToHost(cpu.parameters());
  // Layer 0's weight and bias are the first draws of layer 0's stream.
  std::vector<float> w(120 * 4), b(120);
  InitLinear(123, 0, 120, 4, w.data(), b.data());
  EXPECT_EQ(std::vector<float>(host.begin(), host.begin() + 480), w);
  EXPECT_EQ(std::vector<float>(host.begin() + cpu.bias_offset(0), host.begin() + cpu.bias_offset(0) + 120), b);
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  Mlp gpu(MakeBackend(Device::kCuda), {4, 120, 84, 2}, o);
  EXPECT_EQ(ToHost(gpu.parameters()), host);
}

}  // namespace
}  // namespace cugym::nn
