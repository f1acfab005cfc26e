// Conv2d (im2col + GEMM, NHWC, PyTorch's weight layout) and the Mlp with a convolution in front:
// a hand-computed forward, finite-difference gradients against a float64 reference written the
// PyTorch way (NCHW, weight [out][in][kh][kw], flatten (c, y, x) permuted to (y, x, c)),
// initialization, model files, and learning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "nn/adam.h"
#include "nn/checkpoint.h"
#include "nn/init.h"
#include "nn/layers.h"
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

// PyTorch's Conv2d in float64, as torch computes it: the NHWC input permuted to NCHW, weight
// [out][in][kh][kw], output NCHW; then permuted back to NHWC, which is how cugym flattens it.
std::vector<double> ConvRef(const ConvSpec& s, const std::vector<double>& x_nhwc, const std::vector<double>& w,
                            const std::vector<double>& b, int n, bool relu, std::vector<double>* pre = nullptr) {
  const int h = s.height, wd = s.width, c = s.in_channels, o = s.out_channels, k = s.kernel;
  const int ho = s.out_height(), wo = s.out_width();
  std::vector<double> x_nchw(x_nhwc.size());
  for (int b0 = 0; b0 < n; ++b0)
    for (int y = 0; y < h; ++y)
      for (int xx = 0; xx < wd; ++xx)
        for (int ch = 0; ch < c; ++ch)
          x_nchw[((b0 * c + ch) * h + y) * wd + xx] = x_nhwc[((b0 * h + y) * wd + xx) * c + ch];
  std::vector<double> out_nchw(static_cast<std::size_t>(n) * o * ho * wo);
  for (int b0 = 0; b0 < n; ++b0)
    for (int oc = 0; oc < o; ++oc)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) {
          double z = b[oc];
          for (int ch = 0; ch < c; ++ch)
            for (int i = 0; i < k; ++i)
              for (int j = 0; j < k; ++j)
                z += w[((oc * c + ch) * k + i) * k + j] * x_nchw[((b0 * c + ch) * h + oy + i) * wd + ox + j];
          out_nchw[((b0 * o + oc) * ho + oy) * wo + ox] = z;
        }
  // out_nchw.permute(0, 2, 3, 1).flatten(1): the (y, x, c) order the first Linear layer reads.
  std::vector<double> out(out_nchw.size());
  for (int b0 = 0; b0 < n; ++b0)
    for (int oc = 0; oc < o; ++oc)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) {
          const double z = out_nchw[((b0 * o + oc) * ho + oy) * wo + ox];
          const std::size_t at = ((static_cast<std::size_t>(b0) * ho + oy) * wo + ox) * o + oc;
          if (pre != nullptr) (*pre)[at] = z;
          out[at] = relu ? std::max(z, 0.0) : z;
        }
  return out;
}

std::vector<double> LinearRef(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                              int n, int64_t in, int64_t out, bool relu) {
  std::vector<double> y(static_cast<std::size_t>(n * out));
  for (int r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double z = b[o];
      for (int64_t i = 0; i < in; ++i) z += x[r * in + i] * w[o * in + i];
      y[r * out + o] = relu ? std::max(z, 0.0) : z;
    }
  return y;
}

// relu(LayerNorm(z) * gamma + beta) over rows of f features in float64 (PyTorch's nn.LayerNorm).
std::vector<double> LayerNormReluRef(const std::vector<double>& z, const std::vector<double>& gamma,
                                     const std::vector<double>& beta, int64_t f) {
  std::vector<double> y(z.size());
  for (std::size_t r = 0; r < z.size() / f; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < f; ++j) mean += z[r * f + j] / f;
    for (int64_t j = 0; j < f; ++j) var += (z[r * f + j] - mean) * (z[r * f + j] - mean) / f;
    for (int64_t j = 0; j < f; ++j)
      y[r * f + j] = std::max((z[r * f + j] - mean) / std::sqrt(var + kLayerNormEps) * gamma[j] + beta[j], 0.0);
  }
  return y;
}

// The whole network in float64 from its flat parameters (with LayerNorm before each ReLU when the
// network has it: over each position's channels after the convolution).
std::vector<double> NetRef(const Mlp& net, const std::vector<double>& p, const std::vector<double>& x, int n) {
  auto slice = [&](int64_t offset, int64_t count) {
    return std::vector<double>(p.begin() + offset, p.begin() + offset + count);
  };
  const ConvSpec& c = net.conv();
  const bool ln = net.layer_norm();
  std::vector<double> a = ConvRef(c, x, slice(net.conv_weight_offset(), c.out_channels * c.patch_size()),
                                  slice(net.conv_bias_offset(), c.out_channels), n, !ln);
  if (ln) {
    a = LayerNormReluRef(a, slice(net.conv_norm_weight_offset(), c.out_channels),
                         slice(net.conv_norm_bias_offset(), c.out_channels), c.out_channels);
  }
  const std::vector<int>& s = net.layer_sizes();
  for (int l = 0; l < net.num_layers(); ++l) {
    const bool hidden = l + 1 < net.num_layers();
    a = LinearRef(a, slice(net.weight_offset(l), s[l + 1] * net.linear_in(l)), slice(net.bias_offset(l), s[l + 1]), n,
                  net.linear_in(l), s[l + 1], hidden && !ln);
    if (hidden && ln)
      a = LayerNormReluRef(a, slice(net.norm_weight_offset(l), s[l + 1]), slice(net.norm_bias_offset(l), s[l + 1]),
                           s[l + 1]);
  }
  return a;
}

class Conv : public testing::DeviceTest {};

TEST_P(Conv, HandComputedForward) {
  // One 3 x 3 image of two channels, x[y][x][c] = 3y + x + 10c; two 2 x 2 filters:
  // filter 0 = x[oy][ox][0] + x[oy+1][ox+1][1] + 0.5, filter 1 = relu(2 - x[oy][ox+1][0]).
  const ConvSpec s{3, 3, 2, 2, 2};
  std::vector<float> x(18);
  for (int y = 0; y < 3; ++y)
    for (int xx = 0; xx < 3; ++xx)
      for (int c = 0; c < 2; ++c) x[(y * 3 + xx) * 2 + c] = static_cast<float>(3 * y + xx + 10 * c);
  std::vector<float> w(2 * 2 * 2 * 2, 0.0f);  // [out][in][kh][kw]
  w[((0 * 2 + 0) * 2 + 0) * 2 + 0] = 1;
  w[((0 * 2 + 1) * 2 + 1) * 2 + 1] = 1;
  w[((1 * 2 + 0) * 2 + 0) * 2 + 1] = -1;
  const std::vector<float> b = {0.5f, 2.0f};
  Buffer<float> xd = ToDevice(device(), x), wd = ToDevice(device(), w), bd = ToDevice(device(), b);
  Buffer<float> patches(device(), 4 * 8), y(device(), 8);
  const LinearParams p{ConstWeightView(wd.data(), 2, 8, device()), VectorView<const float>(bd.data(), 2, device())};
  Conv2dForward(*backend_, s, p, ConstBatchView(xd.data(), 1, 18, device()), BatchView(patches.data(), 4, 8, device()),
                BatchView(y.data(), 1, 8, device()), Activation::kRelu);
  // NHWC: [oy][ox][filter].
  EXPECT_EQ(y.ToHost(), (std::vector<float>{14.5f, 1.0f, 16.5f, 0.0f, 20.5f, 0.0f, 22.5f, 0.0f}));
  // The first patch (oy = ox = 0) in the weight's order (c, i, j): channel 0's window, then channel 1's.
  const std::vector<float> all = patches.ToHost();
  const std::vector<float> first(all.begin(), all.begin() + 8);
  EXPECT_EQ(first, (std::vector<float>{0, 1, 3, 4, 10, 11, 13, 14}));
}

// L = sum(r * Conv2d(x)) with and without ReLU: dW, db and dx against float64 differences, on a
// non-square image (a swapped height and width would show).
void CheckConvGradients(Backend& backend, Device device, bool relu) {
  const ConvSpec s{5, 4, 3, 4, 3};
  const int n = 2, ho = s.out_height(), wo = s.out_width(), o = s.out_channels;
  const int64_t in = s.in_features(), k = s.patch_size(), rows = n * ho * wo;
  const std::vector<float> x = RandomFloats(n * in, 31);
  const std::vector<float> w = RandomFloats(o * k, 32, -0.4f, 0.4f);
  const std::vector<float> b = RandomFloats(o, 33, -0.3f, 0.3f);
  const std::vector<float> r = RandomFloats(n * s.out_features(), 34);
  std::vector<double> z(n * s.out_features());
  ConvRef(s, ToDouble(x), ToDouble(w), ToDouble(b), n, false, &z);
  for (double v : z) ASSERT_GT(std::fabs(v), 1e-3) << "pick other seeds: a pre-activation sits on ReLU's kink";

  Buffer<float> xd = ToDevice(device, x), wd = ToDevice(device, w), bd = ToDevice(device, b), rd = ToDevice(device, r);
  Buffer<float> patches(device, rows * k), dpatches(device, rows * k), y(device, n * s.out_features());
  Buffer<float> dw(device, o * k), db(device, o), dx(device, n * in);
  const LinearParams p{ConstWeightView(wd.data(), o, k, device), VectorView<const float>(bd.data(), o, device)};
  const Activation act = relu ? Activation::kRelu : Activation::kNone;
  Conv2dForward(backend, s, p, ConstBatchView(xd.data(), n, in, device), BatchView(patches.data(), rows, k, device),
                BatchView(y.data(), n, s.out_features(), device), act);
  ExpectGradientsNear(y.ToHost(), ConvRef(s, ToDouble(x), ToDouble(w), ToDouble(b), n, relu), "y");
  Conv2dBackward(backend, s, p, ConstBatchView(patches.data(), rows, k, device),
                 ConstBatchView(y.data(), n, s.out_features(), device),
                 BatchView(rd.data(), n, s.out_features(), device), act,
                 LinearGrads{WeightView(dw.data(), o, k, device), VectorView<float>(db.data(), o, device)},
                 BatchView(dpatches.data(), rows, k, device), BatchView(dx.data(), n, in, device));

  const std::vector<double> rv = ToDouble(r), xv = ToDouble(x), wv = ToDouble(w), bv = ToDouble(b);
  ExpectGradientsNear(
      dw.ToHost(),
      NumericGradient([&](const std::vector<double>& v) { return Dot(rv, ConvRef(s, xv, v, bv, n, relu)); }, wv), "dW");
  ExpectGradientsNear(
      db.ToHost(),
      NumericGradient([&](const std::vector<double>& v) { return Dot(rv, ConvRef(s, xv, wv, v, n, relu)); }, bv), "db");
  ExpectGradientsNear(
      dx.ToHost(),
      NumericGradient([&](const std::vector<double>& v) { return Dot(rv, ConvRef(s, v, wv, bv, n, relu)); }, xv), "dx");
}

TEST_P(Conv, GradientsMatchFiniteDifferences) { CheckConvGradients(*backend_, device(), false); }
TEST_P(Conv, GradientsWithReluMatchFiniteDifferences) { CheckConvGradients(*backend_, device(), true); }

TEST_P(Conv, ShapeErrorsNameTheSizes) {
  const ConvSpec s{5, 4, 3, 4, 3};
  Buffer<float> x(device(), 60), patches(device(), 6 * 27);
  EXPECT_THROW(
      backend_->Im2Col(ConstBatchView(x.data(), 1, 59, device()), s, BatchView(patches.data(), 6, 27, device())),
      std::invalid_argument);
  EXPECT_THROW(
      backend_->Im2Col(ConstBatchView(x.data(), 1, 60, device()), s, BatchView(patches.data(), 5, 27, device())),
      std::invalid_argument);
  ConvSpec too_big = s;
  too_big.kernel = 5;  // wider than the image
  EXPECT_THROW(CheckConvSpec(too_big, "test"), std::invalid_argument);
}

MlpOptions ConvOptions(uint64_t seed, int max_batch) {
  MlpOptions o;
  o.seed = seed;
  o.max_batch = max_batch;
  o.conv = ConvSpec{5, 4, 2, 3, 3};  // 5 x 4 x 2 images -> 3 x 2 x 3 = 18 features
  return o;
}

TEST_P(Conv, MlpWithConvGradientsAndPadding) {
  const int n = 3;
  Mlp net(backend_, {40, 6, 3}, ConvOptions(9, 4));
  ASSERT_TRUE(net.has_conv());
  EXPECT_EQ(net.linear_in(0), 18);
  EXPECT_EQ(net.num_parameters(), 3 * 18 + 3 + 6 * 18 + 6 + 3 * 6 + 3);
  const std::vector<float> x = RandomFloats(n * 40, 41, -2.0f, 2.0f);
  const std::vector<float> r = RandomFloats(n * 3, 42);
  Buffer<float> xd = ToDevice(device(), x), rd = ToDevice(device(), r);
  ConstBatchView y = net.ForwardTrain(ConstBatchView(xd.data(), n, 40, device()));
  const std::vector<double> params = ToDouble(ToHost(net.parameters()));
  ExpectGradientsNear(ToHost(y), NetRef(net, params, ToDouble(x), n), "output");
  net.Backward(BatchView(rd.data(), n, 3, device()));
  const std::vector<float> analytic = ToHost(net.gradients());
  const std::vector<double> rv = ToDouble(r);
  ExpectGradientsNear(
      analytic,
      NumericGradient([&](const std::vector<double>& p) { return Dot(rv, NetRef(net, p, ToDouble(x), n)); }, params),
      "parameters (the padding's gradient is 0 on both sides)");
  // Inference gives the training forward's output.
  EXPECT_EQ(ToHost(net.Forward(ConstBatchView(xd.data(), n, 40, device()))), ToHost(y));
}

TEST_P(Conv, MlpWithConvAndLayerNormGradients) {
  // PQN's MinAtar network in small: conv -> LayerNorm over each position's channels -> ReLU ->
  // Linear -> LayerNorm -> ReLU -> Linear.
  const int n = 3;
  MlpOptions o = ConvOptions(19, 4);
  o.layer_norm = true;
  Mlp net(backend_, {40, 6, 3}, o);
  EXPECT_EQ(net.num_parameters(), 3 * 18 + 3 + 2 * 3 + 6 * 18 + 6 + 2 * 6 + 3 * 6 + 3);
  std::vector<float> host = ToHost(net.parameters());
  const std::vector<float> noise = RandomFloats(6, 43, -0.3f, 0.3f);
  for (int j = 0; j < 3; ++j) host[net.conv_norm_weight_offset() + j] += noise[j];
  for (int j = 0; j < 6; ++j) host[net.norm_bias_offset(0) + j] += noise[j];
  CopyFromHost(net.parameters(), host);
  const std::vector<float> x = RandomFloats(n * 40, 44, -2.0f, 2.0f);
  const std::vector<float> r = RandomFloats(n * 3, 45);
  Buffer<float> xd = ToDevice(device(), x), rd = ToDevice(device(), r);
  ConstBatchView y = net.ForwardTrain(ConstBatchView(xd.data(), n, 40, device()));
  const std::vector<double> params = ToDouble(host), rv = ToDouble(r);
  ExpectGradientsNear(ToHost(y), NetRef(net, params, ToDouble(x), n), "output");
  net.Backward(BatchView(rd.data(), n, 3, device()));
  ExpectGradientsNear(
      ToHost(net.gradients()),
      NumericGradient([&](const std::vector<double>& p) { return Dot(rv, NetRef(net, p, ToDouble(x), n)); }, params),
      "parameters");
}

TEST_P(Conv, MlpWithConvLearnsAFixedMinibatch) {
  // MinAtar-like: 10 x 10 x 4 binary images, conv 16, 128 hidden, 6 outputs; regress one output
  // per row (the DQN loss), 150 Adam steps from one captured step.
  const int n = 32;
  MlpOptions o;
  o.seed = 3;
  o.max_batch = n;
  o.conv = ConvSpec{10, 10, 4, 16, 3};
  Mlp net(backend_, {400, 128, 6}, o);
  EXPECT_EQ(net.num_parameters(), 16 * 37 + 128 * 1025 + 6 * 129);  // 132,566
  AdamOptions a;
  a.lr = 1e-3;
  Adam adam(backend_, net.parameters().size(), a);
  std::vector<float> x = RandomFloats(n * 400, 51, 0.0f, 1.0f);
  for (float& v : x) v = v < 0.1f ? 1.0f : 0.0f;
  Buffer<float> xd = ToDevice(device(), x), targets = ToDevice(device(), RandomFloats(n, 52));
  Buffer<int32_t> actions = ToDevice(device(), testing::RandomActions(n, 6, 53));
  Buffer<float> stats(device(), 2);
  auto step = [&] {
    ConstBatchView q = net.ForwardTrain(ConstBatchView(xd.data(), n, 400, device()));
    backend_->GatherLoss(LossKind::kMse, q, AsVector(actions), AsVector(targets), net.OutputGrad(),
                         net.linear_grads(1).bias, AsVector(stats));
    net.Backward(net.OutputGrad(), true);
    adam.Step(net.parameters(), net.gradients());
  };
  step();
  const float first = stats.ToHost()[0];
  const std::vector<float> conv_before = ToHost(net.conv_params().weight);
  std::unique_ptr<Graph> graph = backend_->Capture(step);
  for (int i = 0; i < 150; ++i) graph->Replay();
  step();
  const float last = stats.ToHost()[0];
  EXPECT_GT(first, 0.05f);
  EXPECT_LT(last, 0.01f * first) << "first loss " << first;
  EXPECT_NE(ToHost(net.conv_params().weight), conv_before) << "the convolution trains too";
}

INSTANTIATE_TEST_SUITE_P(Devices, Conv, ::testing::ValuesIn(AllDevices()), DeviceParamName);

TEST(ConvInit, PyTorchsBoundsAndItsOwnDraws) {
  std::vector<float> w(16 * 36), b(16);
  InitConv2d(5, 16, 4, 3, w.data(), b.data());
  const float bound = 1.0f / 6.0f;  // 1 / sqrt(fan_in = 4 * 3 * 3)
  for (float v : w) ASSERT_LE(std::fabs(v), bound);
  for (float v : b) ASSERT_LE(std::fabs(v), bound);
  EXPECT_GT(*std::max_element(w.begin(), w.end()), 0.95f * bound);
  // Its draws are no Linear layer's, and a convolution leaves the Linear layers' draws alone.
  std::vector<float> lw(16 * 36), lb(16);
  InitLinear(5, 0, 16, 36, lw.data(), lb.data());
  EXPECT_NE(w, lw);
  auto cpu = MakeBackend(Device::kCpu);
  Mlp plain(cpu, {400, 8, 2}, MlpOptions{4, true, 5, {}});
  Mlp with_conv(cpu, {400, 8, 2}, MlpOptions{4, true, 5, ConvSpec{10, 10, 4, 1, 10}});  // 1 feature out
  const std::vector<float> p = ToHost(plain.parameters()), q = ToHost(with_conv.parameters());
  std::vector<float> cw(400), cb(1);
  InitConv2d(5, 1, 4, 10, cw.data(), cb.data());
  EXPECT_EQ(
      std::vector<float>(q.begin() + with_conv.conv_weight_offset(), q.begin() + with_conv.conv_weight_offset() + 400),
      cw);
  EXPECT_EQ(q[with_conv.conv_bias_offset()], cb[0]);
  // Layer 1 (8 -> 2) is drawn from its own stream either way.
  EXPECT_EQ(std::vector<float>(p.begin() + plain.weight_offset(1), p.begin() + plain.bias_offset(1) + 2),
            std::vector<float>(q.begin() + with_conv.weight_offset(1), q.begin() + with_conv.bias_offset(1) + 2));
}

TEST(ConvMlp, RefusesAnInputSizeThatIsNotTheImage) {
  auto cpu = MakeBackend(Device::kCpu);
  MlpOptions o;
  o.conv = ConvSpec{10, 10, 4, 16, 3};
  try {
    Mlp net(cpu, {401, 128, 6}, o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "Mlp: the convolution takes 10 x 10 x 4 = 400 inputs, the layer sizes start with 401");
  }
  Mlp a(cpu, {400, 128, 6}, o), b(cpu, {400, 128, 6});
  EXPECT_THROW(a.CopyParametersFrom(b), std::invalid_argument);
  EXPECT_THROW(b.conv_params(), std::invalid_argument);
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "cugym_conv_" + std::to_string(::getpid()) + "_" + name;
}

TEST(ConvCheckpoint, RoundTripInPyTorchsLayout) {
  auto cpu = MakeBackend(Device::kCpu);
  MlpOptions o;
  o.seed = 21;
  o.max_batch = 2;
  o.conv = ConvSpec{6, 5, 3, 4, 3};
  Mlp net(cpu, {90, 7, 2}, o);
  const std::string path = TempPath("model.safetensors");
  SaveMlp(path, net, {{"cugym.conv", "ignored"}});
  const SafetensorsFile file = ReadSafetensors(path);
  std::remove(path.c_str());
  EXPECT_EQ(file.metadata.at("cugym.conv"), "height=6,width=5,in_channels=3,out_channels=4,kernel=3");
  EXPECT_EQ(file.metadata.at("cugym.layers"), "90,7,2");
  ASSERT_EQ(file.tensors.size(), 6u);
  EXPECT_EQ(file.Find("conv.weight")->shape, (std::vector<int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(file.Find("conv.bias")->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(file.Find("0.weight")->shape, (std::vector<int64_t>{7, 4 * 3 * 4}));
  EXPECT_EQ(ReadMlpConv(file, path), o.conv);

  // The file's tensors, read as PyTorch reads them (NCHW conv, weight [out][in][kh][kw], the conv
  // output permuted to (y, x, c) before flattening), give the network's forward pass.
  const std::vector<float> x = RandomFloats(2 * 90, 61);
  std::vector<double> a = ConvRef(o.conv, ToDouble(x), ToDouble(file.Find("conv.weight")->ToF32()),
                                  ToDouble(file.Find("conv.bias")->ToF32()), 2, true);
  a = LinearRef(a, ToDouble(file.Find("0.weight")->ToF32()), ToDouble(file.Find("0.bias")->ToF32()), 2, 48, 7, true);
  a = LinearRef(a, ToDouble(file.Find("2.weight")->ToF32()), ToDouble(file.Find("2.bias")->ToF32()), 2, 7, 2, false);
  ExpectGradientsNear(ToHost(net.Forward(ConstBatchView(x.data(), 2, 90, Device::kCpu))), a, "forward from the file");

  o.seed = 22;
  Mlp other(cpu, {90, 7, 2}, o);
  ASSERT_NE(ToHost(other.parameters()), ToHost(net.parameters()));
  LoadMlp(file, path, other);
  EXPECT_EQ(ToHost(other.parameters()), ToHost(net.parameters()));

  // Into a network without the convolution, or with another one: an error naming both.
  Mlp plain(cpu, {90, 7, 2});
  EXPECT_THROW(
      {
        try {
          LoadMlp(file, path, plain);
        } catch (const std::invalid_argument& e) {
          EXPECT_EQ(std::string(e.what()),
                    path + ": the file holds a conv 6x5x3->4 3x3, 90,7,2 network, this one is 90,7,2");
          throw;
        }
      },
      std::invalid_argument);
  o.conv.out_channels = 5;
  Mlp wider(cpu, {90, 7, 2}, o);
  EXPECT_THROW(LoadMlp(file, path, wider), std::invalid_argument);
}

TEST(ConvCheckpoint, PlainFilesLoadAsBeforeAndBadConvMetadataIsRefused) {
  auto cpu = MakeBackend(Device::kCpu);
  Mlp plain(cpu, {4, 8, 2});
  const std::string path = TempPath("plain.safetensors");
  SaveMlp(path, plain);
  const SafetensorsFile file = ReadSafetensors(path);
  EXPECT_EQ(file.metadata.count("cugym.conv"), 0u);
  EXPECT_FALSE(ReadMlpConv(file, path).enabled());
  EXPECT_EQ(file.tensors.size(), 4u);
  Mlp again(cpu, {4, 8, 2});
  LoadMlp(file, path, again);
  EXPECT_EQ(ToHost(again.parameters()), ToHost(plain.parameters()));
  std::remove(path.c_str());

  EXPECT_EQ(ParseConv("height=10,width=10,in_channels=4,out_channels=16,kernel=3"), (ConvSpec{10, 10, 4, 16, 3}));
  for (const char* bad : {"", "height=10", "height=10,width=10,in_channels=4,out_channels=16,kernel=3,x=1",
                          "width=10,height=10,in_channels=4,out_channels=16,kernel=3",
                          "height=10,width=10,in_channels=4,out_channels=0,kernel=3",
                          "height=2,width=10,in_channels=4,out_channels=16,kernel=3",
                          "height=10,width=10,in_channels=4,out_channels=16,kernel=-3"}) {
    EXPECT_THROW(ParseConv(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace cugym::nn
