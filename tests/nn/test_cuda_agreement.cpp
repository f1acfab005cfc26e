// The CPU back end is the oracle: the CUDA back end must agree with it on random inputs at the
// sizes the agents use (relative error, max |cuda - cpu| / max |cpu| per tensor, below 1e-4; fp32
// sums in another order differ by ~1e-6). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::NormwiseError;
using testing::RandomActions;
using testing::RandomFloats;
using testing::ToDevice;

constexpr double kTol = 1e-4;

class CudaAgreement : public ::testing::TestWithParam<std::vector<int>> {
 protected:
  void SetUp() override {
    CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
    cpu_ = MakeBackend(Device::kCpu);
    gpu_ = MakeBackend(Device::kCuda);
  }
  std::shared_ptr<Backend> cpu_, gpu_;
};

TEST_P(CudaAgreement, ForwardBackwardAndLoss) {
  const std::vector<int> sizes = GetParam();
  const int n = 128, in = sizes.front(), out = sizes.back();
  MlpOptions o;
  o.max_batch = n;
  o.seed = 2024;
  Mlp c(cpu_, sizes, o), g(gpu_, sizes, o);
  ASSERT_EQ(ToHost(c.parameters()), ToHost(g.parameters()));
  const std::vector<float> x = RandomFloats(n * in, 1, -3.0f, 3.0f);
  Buffer<float> xc = ToDevice(Device::kCpu, x), xg = ToDevice(Device::kCuda, x);

  // Inference.
  EXPECT_LT(NormwiseError(ToHost(g.Forward(ConstBatchView(xg.data(), n, in, Device::kCuda))),
                          ToHost(c.Forward(ConstBatchView(xc.data(), n, in, Device::kCpu)))),
            kTol);

  // Training forward, loss with the fused bias gradient, backward.
  const std::vector<int32_t> a = RandomActions(n, out, 2);
  const std::vector<float> t = RandomFloats(n, 3, -2.0f, 2.0f);
  Buffer<int32_t> ac = ToDevice(Device::kCpu, a), ag = ToDevice(Device::kCuda, a);
  Buffer<float> tc = ToDevice(Device::kCpu, t), tg = ToDevice(Device::kCuda, t);
  Buffer<float> sc(Device::kCpu, 2), sg(Device::kCuda, 2);
  for (LossKind loss : {LossKind::kMse, LossKind::kHuber}) {
    SCOPED_TRACE(LossName(loss));
    for (auto [net, xb, ab, tb, sb] : {std::tuple{&c, &xc, &ac, &tc, &sc}, std::tuple{&g, &xg, &ag, &tg, &sg}}) {
      const Device d = net->device();
      ConstBatchView q = net->ForwardTrain(ConstBatchView(xb->data(), n, in, d));
      net->backend().GatherLoss(loss, q, AsVector(*ab), AsVector(*tb), net->OutputGrad(),
                                net->linear_grads(net->num_layers() - 1).bias, AsVector(*sb));
      net->Backward(net->OutputGrad(), true);
    }
    EXPECT_LT(NormwiseError(sg.ToHost(), sc.ToHost()), kTol);
    for (int l = 0; l < c.num_layers(); ++l) {
      SCOPED_TRACE("layer " + std::to_string(l));
      EXPECT_LT(NormwiseError(ToHost(g.linear_grads(l).weight), ToHost(c.linear_grads(l).weight)), kTol);
      EXPECT_LT(NormwiseError(ToHost(g.linear_grads(l).bias), ToHost(c.linear_grads(l).bias)), kTol);
    }
  }
}

// MinAtar's network (10 x 10 x 4 images, conv 16, 128 hidden, 6 actions) at batch 32: im2col
// and its adjoint give the same bits (copies, and sums in one order); forward, loss and every
// gradient, the convolution's included (and with layer_norm, PQN's network, the LayerNorms'),
// agree within kTol.
void CheckMinAtarNetwork(bool layer_norm) {
  auto cpu = MakeBackend(Device::kCpu), gpu = MakeBackend(Device::kCuda);
  const ConvSpec conv{10, 10, 4, 16, 3};
  const int n = 32, in = 400, out = 6;
  const int64_t rows = n * 64, k = conv.patch_size();
  const std::vector<float> x = RandomFloats(n * in, 7, -1.0f, 1.0f), d = RandomFloats(rows * k, 8);
  Buffer<float> xc = ToDevice(Device::kCpu, x), xg = ToDevice(Device::kCuda, x);
  Buffer<float> dc = ToDevice(Device::kCpu, d), dg = ToDevice(Device::kCuda, d);
  Buffer<float> pc(Device::kCpu, rows * k), pg(Device::kCuda, rows * k), ic(Device::kCpu, n * in),
      ig(Device::kCuda, n * in);
  cpu->Im2Col(ConstBatchView(xc.data(), n, in, Device::kCpu), conv, BatchView(pc.data(), rows, k, Device::kCpu));
  gpu->Im2Col(ConstBatchView(xg.data(), n, in, Device::kCuda), conv, BatchView(pg.data(), rows, k, Device::kCuda));
  EXPECT_EQ(pg.ToHost(), pc.ToHost());
  cpu->Col2Im(ConstBatchView(dc.data(), rows, k, Device::kCpu), conv, BatchView(ic.data(), n, in, Device::kCpu));
  gpu->Col2Im(ConstBatchView(dg.data(), rows, k, Device::kCuda), conv, BatchView(ig.data(), n, in, Device::kCuda));
  EXPECT_EQ(ig.ToHost(), ic.ToHost());

  MlpOptions o;
  o.max_batch = n;
  o.seed = 77;
  o.conv = conv;
  o.layer_norm = layer_norm;
  Mlp c(cpu, {in, 128, out}, o), g(gpu, {in, 128, out}, o);
  ASSERT_EQ(ToHost(c.parameters()), ToHost(g.parameters()));
  const std::vector<int32_t> a = RandomActions(n, out, 9);
  const std::vector<float> t = RandomFloats(n, 10);
  Buffer<int32_t> ac = ToDevice(Device::kCpu, a), ag = ToDevice(Device::kCuda, a);
  Buffer<float> tc = ToDevice(Device::kCpu, t), tg = ToDevice(Device::kCuda, t);
  Buffer<float> sc(Device::kCpu, 2), sg(Device::kCuda, 2);
  for (auto [net, xb, ab, tb, sb] : {std::tuple{&c, &xc, &ac, &tc, &sc}, std::tuple{&g, &xg, &ag, &tg, &sg}}) {
    const Device dev = net->device();
    ConstBatchView q = net->ForwardTrain(ConstBatchView(xb->data(), n, in, dev));
    net->backend().GatherLoss(LossKind::kHuber, q, AsVector(*ab), AsVector(*tb), net->OutputGrad(),
                              net->linear_grads(1).bias, AsVector(*sb));
    net->Backward(net->OutputGrad(), true);
  }
  EXPECT_LT(NormwiseError(sg.ToHost(), sc.ToHost()), kTol);
  EXPECT_LT(NormwiseError(ToHost(g.conv_grads().weight), ToHost(c.conv_grads().weight)), kTol);
  EXPECT_LT(NormwiseError(ToHost(g.conv_grads().bias), ToHost(c.conv_grads().bias)), kTol);
  for (int l = 0; l < 2; ++l) {
    EXPECT_LT(NormwiseError(ToHost(g.linear_grads(l).weight), ToHost(c.linear_grads(l).weight)), kTol) << l;
    EXPECT_LT(NormwiseError(ToHost(g.linear_grads(l).bias), ToHost(c.linear_grads(l).bias)), kTol) << l;
  }
  if (layer_norm) {
    EXPECT_LT(NormwiseError(ToHost(g.conv_norm_grads().gamma), ToHost(c.conv_norm_grads().gamma)), kTol);
    EXPECT_LT(NormwiseError(ToHost(g.conv_norm_grads().beta), ToHost(c.conv_norm_grads().beta)), kTol);
    EXPECT_LT(NormwiseError(ToHost(g.norm_grads(0).gamma), ToHost(c.norm_grads(0).gamma)), kTol);
    EXPECT_LT(NormwiseError(ToHost(g.norm_grads(0).beta), ToHost(c.norm_grads(0).beta)), kTol);
  }
  EXPECT_LT(NormwiseError(ToHost(g.Forward(ConstBatchView(xg.data(), n, in, Device::kCuda))),
                          ToHost(c.Forward(ConstBatchView(xc.data(), n, in, Device::kCpu)))),
            kTol);
}

TEST(CudaAgreementConv, MinAtarNetwork) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  CheckMinAtarNetwork(false);
}

TEST(CudaAgreementConv, MinAtarNetworkWithLayerNorm) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  CheckMinAtarNetwork(true);
}

// PPO's networks (tanh hidden layers, orthogonal weights with the actor's output gain 0.01 or the
// critic's 1), with and without LayerNorm, at a minibatch of 128: the same weights on both (host
// draws), and forward, loss and every gradient within kTol (the two tanhf differ by an ulp or two).
void CheckTanhNetwork(const std::vector<int>& sizes, double output_gain, bool layer_norm) {
  SCOPED_TRACE(::testing::Message() << "output gain " << output_gain << (layer_norm ? ", LayerNorm" : ""));
  auto cpu = MakeBackend(Device::kCpu), gpu = MakeBackend(Device::kCuda);
  const int n = 128, in = sizes.front(), out = sizes.back();
  MlpOptions o;
  o.max_batch = n;
  o.seed = 31;
  o.activation = Activation::kTanh;
  o.init = MlpInit::kOrthogonal;
  o.output_gain = output_gain;
  o.layer_norm = layer_norm;
  Mlp c(cpu, sizes, o), g(gpu, sizes, o);
  ASSERT_EQ(ToHost(c.parameters()), ToHost(g.parameters()));
  const std::vector<float> x = RandomFloats(n * in, 41, -3.0f, 3.0f);
  Buffer<float> xc = ToDevice(Device::kCpu, x), xg = ToDevice(Device::kCuda, x);
  EXPECT_LT(NormwiseError(ToHost(g.Forward(ConstBatchView(xg.data(), n, in, Device::kCuda))),
                          ToHost(c.Forward(ConstBatchView(xc.data(), n, in, Device::kCpu)))),
            kTol);

  const std::vector<int32_t> a = RandomActions(n, out, 42);
  const std::vector<float> t = RandomFloats(n, 43);
  Buffer<int32_t> ac = ToDevice(Device::kCpu, a), ag = ToDevice(Device::kCuda, a);
  Buffer<float> tc = ToDevice(Device::kCpu, t), tg = ToDevice(Device::kCuda, t);
  Buffer<float> sc(Device::kCpu, 2), sg(Device::kCuda, 2);
  for (auto [net, xb, ab, tb, sb] : {std::tuple{&c, &xc, &ac, &tc, &sc}, std::tuple{&g, &xg, &ag, &tg, &sg}}) {
    const Device d = net->device();
    ConstBatchView q = net->ForwardTrain(ConstBatchView(xb->data(), n, in, d));
    net->backend().GatherLoss(LossKind::kMse, q, AsVector(*ab), AsVector(*tb), net->OutputGrad(),
                              net->linear_grads(net->num_layers() - 1).bias, AsVector(*sb));
    net->Backward(net->OutputGrad(), true);
  }
  EXPECT_LT(NormwiseError(sg.ToHost(), sc.ToHost()), kTol);
  for (int l = 0; l < c.num_layers(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    EXPECT_LT(NormwiseError(ToHost(g.linear_grads(l).weight), ToHost(c.linear_grads(l).weight)), kTol);
    EXPECT_LT(NormwiseError(ToHost(g.linear_grads(l).bias), ToHost(c.linear_grads(l).bias)), kTol);
    if (layer_norm && l + 1 < c.num_layers()) {
      EXPECT_LT(NormwiseError(ToHost(g.norm_grads(l).gamma), ToHost(c.norm_grads(l).gamma)), kTol);
      EXPECT_LT(NormwiseError(ToHost(g.norm_grads(l).beta), ToHost(c.norm_grads(l).beta)), kTol);
    }
  }
}

TEST(CudaAgreementTanh, PpoActorAndCritic) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  for (bool layer_norm : {false, true}) {
    CheckTanhNetwork({8, 64, 64, 4}, 0.01, layer_norm);
    CheckTanhNetwork({8, 64, 64, 1}, 1.0, layer_norm);
  }
}

INSTANTIATE_TEST_SUITE_P(Nets, CudaAgreement,
                         ::testing::Values(std::vector<int>{4, 120, 84, 2}, std::vector<int>{8, 256, 256, 4}),
                         [](const ::testing::TestParamInfo<std::vector<int>>& info) {
                           std::string name;
                           for (int s : info.param) name += (name.empty() ? "" : "_") + std::to_string(s);
                           return "mlp_" + name;
                         });

}  // namespace
}  // namespace cugym::nn
