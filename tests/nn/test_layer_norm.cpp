// LayerNorm (Backend::LayerNorm and its backward, and the Mlp with layer_norm): PyTorch's forward
// values, gradients (through no activation, ReLU or tanh) against float64 finite differences,
// model files in PyTorch's nn.Sequential(Linear, LayerNorm, ReLU, ...) layout, and learning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "nn/adam.h"
#include "nn/checkpoint.h"
#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::ExpectGradientsNear;
using testing::NumericGradient;
using testing::RandomFloats;
using testing::ToDevice;
using testing::ToDouble;

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// act(LayerNorm(x) * gamma + beta) row by row in float64, PyTorch's definition (biased variance).
std::vector<double> LayerNormRef(const std::vector<double>& x, const std::vector<double>& gamma,
                                 const std::vector<double>& beta, int64_t n, int64_t f, Activation act) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < n; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < f; ++j) mean += x[r * f + j] / f;
    for (int64_t j = 0; j < f; ++j) var += (x[r * f + j] - mean) * (x[r * f + j] - mean) / f;
    for (int64_t j = 0; j < f; ++j) {
      const double h = (x[r * f + j] - mean) / std::sqrt(var + kLayerNormEps) * gamma[j] + beta[j];
      y[r * f + j] = act == Activation::kRelu ? std::max(h, 0.0) : act == Activation::kTanh ? std::tanh(h) : h;
    }
  }
  return y;
}

class LayerNormTest : public testing::DeviceTest {};

TEST_P(LayerNormTest, MatchesTorch) {
  // relu(nn.LayerNorm(5)(x)) with weight (1, 0.5, -1, 2, 1.5) and bias (0.1, -0.2, 0.3, 0, -0.5),
  // torch 2.15.0, float32.
  const std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f, -2.0f, 0.5f, -0.5f, 0.25f, 3.0f, 1.0f};
  Buffer<float> xd = ToDevice(device(), x), y(device(), 10), rstd(device(), 2);
  Buffer<float> gamma = ToDevice(device(), std::vector<float>{1.0f, 0.5f, -1.0f, 2.0f, 1.5f});
  Buffer<float> beta = ToDevice(device(), std::vector<float>{0.1f, -0.2f, 0.3f, 0.0f, -0.5f});
  backend_->LayerNorm(BatchView(xd.data(), 2, 5, device()), AsVector(gamma), AsVector(beta), AsVector(rstd),
                      BatchView(y.data(), 2, 5, device()), Activation::kRelu);
  const std::vector<float> torch = {0, 0, 0, 2.3310832977f, 0, 0, 0, 0.8089115620f, 3.6471991539f, 0};
  const std::vector<float> got = y.ToHost();
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(got[i], torch[i], 1e-6) << i;
  // x is replaced by xhat; rstd = 1 / sqrt(var + eps): row 0's variance is 4.24.
  EXPECT_NEAR(rstd.ToHost()[0], 1.0 / std::sqrt(4.24 + 1e-5), 1e-6);
  EXPECT_NEAR(xd.ToHost()[0], (1.0 - 1.6) / std::sqrt(4.24 + 1e-5), 1e-6);
}

// L = sum(r * act(LayerNorm(x))): dx, dgamma and dbeta against float64 differences.
void CheckLayerNormGradients(Backend& backend, Device device, Activation act) {
  const int64_t n = 3, f = 7;
  const std::vector<float> x = RandomFloats(n * f, 61, -2.0f, 2.0f), gamma = RandomFloats(f, 62, 0.5f, 1.5f),
                           beta = RandomFloats(f, 63, -0.3f, 0.3f), r = RandomFloats(n * f, 64);
  const std::vector<double> xv = ToDouble(x), gv = ToDouble(gamma), bv = ToDouble(beta), rv = ToDouble(r);
  for (double v : LayerNormRef(xv, gv, bv, n, f, Activation::kNone))
    ASSERT_GT(std::fabs(v), 1e-3) << "pick other seeds: an output sits on ReLU's kink";
  Buffer<float> xd = ToDevice(device, x), gd = ToDevice(device, gamma), bd = ToDevice(device, beta),
                dy = ToDevice(device, r), y(device, n * f), rstd(device, n), dgamma(device, f), dbeta(device, f);
  backend.LayerNorm(BatchView(xd.data(), n, f, device), AsVector(gd), AsVector(bd), AsVector(rstd),
                    BatchView(y.data(), n, f, device), act);
  ExpectGradientsNear(y.ToHost(), LayerNormRef(xv, gv, bv, n, f, act), "y");
  backend.LayerNormBackward(BatchView(dy.data(), n, f, device), ConstBatchView(xd.data(), n, f, device), AsVector(rstd),
                            ConstBatchView(y.data(), n, f, device), AsVector(gd), AsVector(dgamma), AsVector(dbeta),
                            act);
  ExpectGradientsNear(
      dy.ToHost(),
      NumericGradient([&](const std::vector<double>& v) { return Dot(rv, LayerNormRef(v, gv, bv, n, f, act)); }, xv),
      "dx");
  ExpectGradientsNear(
      dgamma.ToHost(),
      NumericGradient([&](const std::vector<double>& v) { return Dot(rv, LayerNormRef(xv, v, bv, n, f, act)); }, gv),
      "dgamma");
  ExpectGradientsNear(
      dbeta.ToHost(),
      NumericGradient([&](const std::vector<double>& v) { return Dot(rv, LayerNormRef(xv, gv, v, n, f, act)); }, bv),
      "dbeta");
}

TEST_P(LayerNormTest, GradientsMatchFiniteDifferences) {
  CheckLayerNormGradients(*backend_, device(), Activation::kNone);
}
TEST_P(LayerNormTest, GradientsWithReluMatchFiniteDifferences) {
  CheckLayerNormGradients(*backend_, device(), Activation::kRelu);
}
TEST_P(LayerNormTest, GradientsWithTanhMatchFiniteDifferences) {
  CheckLayerNormGradients(*backend_, device(), Activation::kTanh);
}

// dgamma and dbeta are column sums over the rows: few long columns (MinAtar's convolution: 16
// channels at 8,192 positions per minibatch), many short ones and odd sizes between, against
// float64 sums, and the same bits when run again (the CUDA kernel splits the rows among lanes and
// adds their sums in a fixed order).
TEST_P(LayerNormTest, ParameterGradientsAreTheColumnSumsEveryTime) {
  for (const auto& [n, f] : std::vector<std::pair<int64_t, int64_t>>{{8193, 16}, {300, 3}, {5, 700}, {64, 130}}) {
    SCOPED_TRACE(::testing::Message() << n << " rows, " << f << " columns");
    const std::vector<float> x = RandomFloats(n * f, 71, -2.0f, 2.0f), r = RandomFloats(n * f, 72);
    Buffer<float> xd = ToDevice(device(), x), y(device(), n * f), rstd(device(), n), dy(device(), n * f);
    Buffer<float> gamma = ToDevice(device(), RandomFloats(f, 73, 0.5f, 1.5f)),
                  beta = ToDevice(device(), RandomFloats(f, 74));
    backend_->LayerNorm(BatchView(xd.data(), n, f, device()), AsVector(gamma), AsVector(beta), AsVector(rstd),
                        BatchView(y.data(), n, f, device()), Activation::kNone);
    const std::vector<float> xhat = xd.ToHost();
    std::vector<double> want_g(f, 0.0), want_b(f, 0.0);
    for (int64_t i = 0; i < n * f; ++i) {
      want_g[i % f] += static_cast<double>(r[i]) * xhat[i];
      want_b[i % f] += r[i];
    }
    std::vector<std::vector<float>> runs;
    for (int run = 0; run < 2; ++run) {
      dy.FromHost(r.data(), r.size());
      Buffer<float> dgamma(device(), f), dbeta(device(), f);
      backend_->LayerNormBackward(BatchView(dy.data(), n, f, device()), ConstBatchView(xd.data(), n, f, device()),
                                  AsVector(rstd), ConstBatchView(y.data(), n, f, device()), AsVector(gamma),
                                  AsVector(dgamma), AsVector(dbeta), Activation::kNone);
      std::vector<float> both = dgamma.ToHost(), b = dbeta.ToHost();
      EXPECT_LT(testing::NormwiseError(both, std::vector<float>(want_g.begin(), want_g.end())), 1e-5) << "dgamma";
      EXPECT_LT(testing::NormwiseError(b, std::vector<float>(want_b.begin(), want_b.end())), 1e-5) << "dbeta";
      both.insert(both.end(), b.begin(), b.end());
      runs.push_back(both);
    }
    EXPECT_EQ(runs[0], runs[1]) << "another run, other bits";
  }
}

TEST_P(LayerNormTest, ShapeErrorsNameTheSizes) {
  Buffer<float> x(device(), 12), y(device(), 12), g(device(), 4), rstd(device(), 3);
  try {
    backend_->LayerNorm(BatchView(x.data(), 3, 4, device()), AsVector(g), AsVector(g), AsVector(rstd),
                        BatchView(y.data(), 4, 3, device()), Activation::kRelu);
    FAIL() << "a y of another shape was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("LayerNorm: x is 3 x 4, y 4 x 3"), std::string::npos) << e.what();
  }
  Buffer<float> short_rstd(device(), 2);
  EXPECT_THROW(backend_->LayerNorm(BatchView(x.data(), 3, 4, device()), AsVector(g), AsVector(g), AsVector(short_rstd),
                                   BatchView(y.data(), 3, 4, device()), Activation::kRelu),
               std::invalid_argument);
}

// The network in float64 from its flat parameters: Linear -> LayerNorm -> activation ... -> Linear.
std::vector<double> NetRef(const Mlp& net, const std::vector<double>& p, std::vector<double> a, int n) {
  auto slice = [&](int64_t offset, int64_t count) {
    return std::vector<double>(p.begin() + offset, p.begin() + offset + count);
  };
  const std::vector<int>& s = net.layer_sizes();
  for (int l = 0; l < net.num_layers(); ++l) {
    const int64_t in = s[l], out = s[l + 1];
    const std::vector<double> w = slice(net.weight_offset(l), out * in), b = slice(net.bias_offset(l), out);
    std::vector<double> z(static_cast<std::size_t>(n * out));
    for (int r = 0; r < n; ++r)
      for (int64_t o = 0; o < out; ++o) {
        z[r * out + o] = b[o];
        for (int64_t i = 0; i < in; ++i) z[r * out + o] += a[r * in + i] * w[o * in + i];
      }
    a = l + 1 < net.num_layers() ? LayerNormRef(z, slice(net.norm_weight_offset(l), out),
                                                slice(net.norm_bias_offset(l), out), n, out, net.activation())
                                 : z;
  }
  return a;
}

MlpOptions NormOptions(uint64_t seed, int max_batch) {
  MlpOptions o;
  o.seed = seed;
  o.max_batch = max_batch;
  o.layer_norm = true;
  return o;
}

// A 5-9-6-3 network with LayerNorm and `activation`: output and every parameter's gradient against
// the float64 reference and its finite differences.
void CheckNormMlpGradients(const std::shared_ptr<Backend>& backend, Device device, Activation activation) {
  const int n = 4;
  MlpOptions options = NormOptions(17, n);
  options.activation = activation;
  Mlp net(backend, {5, 9, 6, 3}, options);
  EXPECT_EQ(net.num_parameters(), 9 * 6 + 2 * 9 + 6 * 10 + 2 * 6 + 3 * 7);
  // Scales away from 1 and shifts away from 0, so their gradients are checked in general position.
  std::vector<float> host = ToHost(net.parameters());
  const std::vector<float> scales = RandomFloats(9, 71, 0.5f, 1.5f), shifts = RandomFloats(9, 72, -0.2f, 0.2f);
  for (int l = 0; l < 2; ++l)
    for (int j = 0; j < net.layer_sizes()[l + 1]; ++j) {
      EXPECT_EQ(host[net.norm_weight_offset(l) + j], 1.0f) << "LayerNorm starts as the identity";
      EXPECT_EQ(host[net.norm_bias_offset(l) + j], 0.0f);
      host[net.norm_weight_offset(l) + j] = scales[j];
      host[net.norm_bias_offset(l) + j] = shifts[j];
    }
  CopyFromHost(net.parameters(), host);
  const std::vector<float> x = RandomFloats(n * 5, 73, -2.0f, 2.0f), r = RandomFloats(n * 3, 74);
  Buffer<float> xd = ToDevice(device, x), rd = ToDevice(device, r);
  const ConstBatchView y = net.ForwardTrain(ConstBatchView(xd.data(), n, 5, device));
  const std::vector<double> params = ToDouble(host), rv = ToDouble(r);
  ExpectGradientsNear(ToHost(y), NetRef(net, params, ToDouble(x), n), "output");
  const std::vector<float> out = ToHost(y);
  net.Backward(BatchView(rd.data(), n, 3, device));
  ExpectGradientsNear(
      ToHost(net.gradients()),
      NumericGradient([&](const std::vector<double>& p) { return Dot(rv, NetRef(net, p, ToDouble(x), n)); }, params),
      "parameters");
  EXPECT_EQ(ToHost(net.Forward(ConstBatchView(xd.data(), n, 5, device))), out) << "inference = training forward";
}

TEST_P(LayerNormTest, MlpGradientsMatchFiniteDifferences) {
  CheckNormMlpGradients(backend_, device(), Activation::kRelu);
}
TEST_P(LayerNormTest, TanhMlpGradientsMatchFiniteDifferences) {
  CheckNormMlpGradients(backend_, device(), Activation::kTanh);
}

TEST_P(LayerNormTest, MlpLearnsAFixedMinibatchInACapturedStep) {
  const int n = 32;
  Mlp net(backend_, {8, 64, 64, 4}, NormOptions(5, n));
  AdamOptions a;
  a.lr = 3e-3;
  a.rectified = true;
  a.max_grad_norm = 10.0;
  Adam adam(backend_, net.parameters().size(), a);
  Buffer<float> xd = ToDevice(device(), RandomFloats(n * 8, 81)), targets = ToDevice(device(), RandomFloats(n, 82));
  Buffer<int32_t> actions = ToDevice(device(), testing::RandomActions(n, 4, 83));
  Buffer<float> stats(device(), 2);
  auto step = [&] {
    ConstBatchView q = net.ForwardTrain(ConstBatchView(xd.data(), n, 8, device()));
    backend_->GatherLoss(LossKind::kMse, q, AsVector(actions), AsVector(targets), net.OutputGrad(),
                         net.linear_grads(2).bias, AsVector(stats));
    net.Backward(net.OutputGrad(), true);
    adam.Step(net.parameters(), net.gradients());
  };
  step();
  const float first = stats.ToHost()[0];
  std::unique_ptr<Graph> graph = backend_->Capture(step);
  for (int i = 0; i < 300; ++i) graph->Replay();
  step();
  EXPECT_LT(stats.ToHost()[0], 0.01f * first) << "first loss " << first;
  EXPECT_NE(ToHost(net.norm(0).gamma), std::vector<float>(64, 1.0f)) << "the LayerNorm's scale trains too";
}

INSTANTIATE_TEST_SUITE_P(Devices, LayerNormTest, ::testing::ValuesIn(AllDevices()), DeviceParamName);

TEST(LayerNormCheckpoint, PyTorchSequentialNamesAndMetadata) {
  auto backend = MakeBackend(Device::kCpu);
  MlpOptions o = NormOptions(3, 2);
  o.conv = ConvSpec{5, 4, 2, 3, 3};
  Mlp net(backend, {40, 6, 3}, o);
  const std::string path = "/tmp/cugym_ln_" + std::to_string(getpid()) + ".safetensors";
  SaveMlp(path, net, {{"cugym.norm", "ignored"}});
  const SafetensorsFile file = ReadSafetensors(path);
  EXPECT_EQ(file.metadata.at("cugym.norm"), "layer_norm");
  // nn.Sequential(Linear, LayerNorm, ReLU, Linear) behind the convolution and its LayerNorm.
  for (const char* name : {"conv.weight", "conv.bias", "conv_norm.weight", "conv_norm.bias", "0.weight", "0.bias",
                           "1.weight", "1.bias", "3.weight", "3.bias"})
    EXPECT_NE(file.Find(name), nullptr) << name;
  EXPECT_EQ(file.Find("2.weight"), nullptr);
  EXPECT_EQ(file.Find("conv_norm.weight")->shape, (std::vector<int64_t>{3}));
  EXPECT_TRUE(ReadMlpLayerNorm(file, path));

  MlpOptions seeded = o;
  seeded.seed = 99;
  Mlp copy(backend, {40, 6, 3}, seeded);
  LoadMlp(path, copy);
  EXPECT_EQ(ToHost(copy.parameters()), ToHost(net.parameters()));

  // A network without LayerNorm refuses the file, and the message says why.
  MlpOptions plain = o;
  plain.layer_norm = false;
  Mlp other(backend, {40, 6, 3}, plain);
  try {
    LoadMlp(path, other);
    FAIL() << "a LayerNorm file loaded into a network without LayerNorm";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("LayerNorm network, this one is conv"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cugym::nn
