// Initialization from the counter RNG. PyTorch's default: bounds, moments, determinism across
// seeds, layers and devices. Orthogonal (PPO's): orthonormal rows or columns times the gain for
// tall, wide and square weights, zero biases, determinism, the sign fix, and an Mlp's gains per
// layer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
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

// max |G - gain^2 I| / gain^2 for G = W W^T (rows) or W^T W (columns) of a row-major weight
// [out x in], in double.
double GramError(const std::vector<float>& w, int64_t out, int64_t in, double gain, bool rows) {
  const int64_t k = rows ? out : in, len = rows ? in : out;
  auto at = [&](int64_t vec, int64_t i) { return static_cast<double>(rows ? w[vec * in + i] : w[i * in + vec]); };
  double worst = 0.0;
  for (int64_t a = 0; a < k; ++a) {
    for (int64_t b = 0; b < k; ++b) {
      double dot = 0.0;
      for (int64_t i = 0; i < len; ++i) dot += at(a, i) * at(b, i);
      worst = std::max(worst, std::fabs(dot / (gain * gain) - (a == b ? 1.0 : 0.0)));
    }
  }
  return worst;
}

// The rows' (out <= in) or the columns' (out > in): those orthogonal_ makes orthonormal.
double OrthonormalityError(const std::vector<float>& w, int64_t out, int64_t in, double gain) {
  return GramError(w, out, in, gain, out <= in);
}

TEST(Init, OrthogonalRowsOrColumnsAreOrthonormalTimesTheGain) {
  // {out, in}: tall, wide and square, vectors, and sizes of no particular shape.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 8}, {8, 64}, {64, 64}, {1, 1},     {1, 7},
                                                           {7, 1},  {5, 3},  {3, 5},   {300, 257}, {257, 300}};
  for (const auto& [out, in] : shapes) {
    for (double gain : {1.0, std::sqrt(2.0), 0.01}) {
      SCOPED_TRACE(::testing::Message() << out << " x " << in << ", gain " << gain);
      std::vector<float> w(out * in), b(out, std::numeric_limits<float>::quiet_NaN());
      InitOrthogonal(3, 1, out, in, gain, w.data(), b.data());
      EXPECT_LT(OrthonormalityError(w, out, in, gain), 1e-5);
      for (float v : b) ASSERT_EQ(v, 0.0f) << "biases start at 0";
      // Square: orthogonal both ways.
      if (out == in) {
        EXPECT_LT(GramError(w, out, in, gain, false), 1e-5) << "square: the columns too";
      }
    }
  }
}

TEST(Init, OrthogonalIsDeterministicPerSeedAndDiffersByLayerAndSeed) {
  std::vector<float> w1(24), b1(4), w2(24), b2(4);
  InitOrthogonal(42, 1, 4, 6, 1.0, w1.data(), b1.data());
  InitOrthogonal(42, 1, 4, 6, 1.0, w2.data(), b2.data());
  EXPECT_EQ(w1, w2);
  InitOrthogonal(43, 1, 4, 6, 1.0, w2.data(), b2.data());
  EXPECT_NE(w1, w2) << "another seed";
  InitOrthogonal(42, 2, 4, 6, 1.0, w2.data(), b2.data());
  EXPECT_NE(w1, w2) << "another layer";
  // The gain scales the same matrix: float(gain * q) against gain * float(q).
  std::vector<float> scaled(24);
  InitOrthogonal(42, 1, 4, 6, 0.01, scaled.data(), b2.data());
  for (int i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(scaled[i], static_cast<float>(0.01 * w1[i])) << i;
  EXPECT_THROW(InitOrthogonal(42, 0, 3, 0, 1.0, w2.data(), b2.data()), std::invalid_argument);
  EXPECT_THROW(InitOrthogonal(42, 0, 3, 4, std::nan(""), w2.data(), b2.data()), std::invalid_argument);
}

// PyTorch multiplies Q's columns by the signs of R's diagonal, which makes the distribution
// uniform over orthogonal matrices: every entry is as likely positive as negative. Householder's
// Q without the fix has a negative first entry in every draw.
TEST(Init, OrthogonalEntriesAreAsOftenPositiveAsNegative) {
  for (const auto& [out, in] : std::vector<std::pair<int64_t, int64_t>>{{6, 6}, {9, 4}, {4, 9}}) {
    SCOPED_TRACE(::testing::Message() << out << " x " << in);
    std::vector<int> positive(out * in, 0);
    constexpr int kSeeds = 400;
    std::vector<float> w(out * in), b(out);
    for (int seed = 0; seed < kSeeds; ++seed) {
      InitOrthogonal(seed, 0, out, in, 1.0, w.data(), b.data());
      for (int64_t i = 0; i < out * in; ++i) positive[i] += w[i] > 0.0f;
    }
    // Binomial(400, 1/2): standard deviation 10; 60 is six of them.
    for (int64_t i = 0; i < out * in; ++i) EXPECT_NEAR(positive[i], kSeeds / 2, 60) << "entry " << i;
  }
}

TEST(Init, MlpOrthogonalGainsPerLayer) {
  MlpOptions o;
  o.seed = 5;
  o.init = MlpInit::kOrthogonal;
  o.activation = Activation::kTanh;
  o.output_gain = 0.01;  // CleanRL's actor
  o.conv = ConvSpec{5, 4, 2, 3, 3};
  o.layer_norm = true;
  // conv 3 x 18 (wide), then 18 -> 64 (tall), 64 -> 64 (square) and 64 -> 2 (wide, the output).
  const std::vector<int> sizes = {40, 64, 64, 2};
  Mlp net(MakeBackend(Device::kCpu), sizes, o);
  EXPECT_EQ(net.init(), MlpInit::kOrthogonal);
  const std::vector<float> host = ToHost(net.parameters());
  auto slice = [&](int64_t offset, int64_t count) {
    return std::vector<float>(host.begin() + offset, host.begin() + offset + count);
  };
  const double hidden = std::sqrt(2.0);
  EXPECT_LT(OrthonormalityError(slice(net.conv_weight_offset(), 3 * 18), 3, 18, hidden), 1e-5) << "convolution";
  EXPECT_EQ(slice(net.conv_bias_offset(), 3), std::vector<float>(3, 0.0f));
  EXPECT_EQ(slice(net.conv_norm_weight_offset(), 3), std::vector<float>(3, 1.0f)) << "LayerNorm scales start at 1";
  for (int l = 0; l < net.num_layers(); ++l) {
    SCOPED_TRACE(::testing::Message() << "layer " << l);
    const int64_t out = sizes[l + 1], in = net.linear_in(l);
    const double gain = l + 1 < net.num_layers() ? hidden : 0.01;
    const std::vector<float> w = slice(net.weight_offset(l), out * in);
    EXPECT_LT(OrthonormalityError(w, out, in, gain), 1e-5);
    EXPECT_EQ(slice(net.bias_offset(l), out), std::vector<float>(out, 0.0f));
    // The draws of InitOrthogonal for (seed, layer).
    std::vector<float> want(out * in), bias(out);
    InitOrthogonal(5, l, out, in, gain, want.data(), bias.data());
    EXPECT_EQ(w, want);
    if (l + 1 < net.num_layers()) {
      EXPECT_EQ(slice(net.norm_weight_offset(l), out), std::vector<float>(out, 1.0f));
    }
  }
  // Another seed, other weights; the default init is PyTorch's, as before.
  net.Initialize(6);
  EXPECT_NE(ToHost(net.parameters()), host);
  MlpOptions plain = o;
  plain.init = MlpInit::kTorchDefault;
  Mlp torch_default(MakeBackend(Device::kCpu), sizes, plain);
  std::vector<float> w(64 * 18), b(64);
  InitLinear(5, 0, 64, 18, w.data(), b.data());
  const std::vector<float> defaults = ToHost(torch_default.parameters());
  EXPECT_EQ(std::vector<float>(defaults.begin() + torch_default.weight_offset(0),
                               defaults.begin() + torch_default.weight_offset(0) + 64 * 18),
            w);
  // Gains must be finite.
  MlpOptions bad = o;
  bad.hidden_gain = std::numeric_limits<double>::infinity();
  EXPECT_THROW(Mlp(MakeBackend(Device::kCpu), sizes, bad), std::invalid_argument);

  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  Mlp gpu(MakeBackend(Device::kCuda), sizes, o);
  EXPECT_EQ(ToHost(gpu.parameters()), host) << "host draws: the same weights on every device";
}

}  // namespace
}  // namespace cugym::nn
