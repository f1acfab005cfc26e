// Regression test: an MLP fits sin on [-pi, pi] to a small MSE within a bounded number of Adam
// steps (full batch), on every back end.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/adam.h"
#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::ToDevice;

class MlpFit : public ::testing::TestWithParam<Device> {};

TEST_P(MlpFit, LearnsSine) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  auto backend = MakeBackend(device);
  const int n = 128;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(-M_PI + 2 * M_PI * i / (n - 1));
    y[i] = std::sin(x[i]);
  }
  Buffer<float> xd = ToDevice(device, x), yd = ToDevice(device, y), stats(device, 2);
  MlpOptions mo;
  mo.max_batch = n;
  mo.seed = 3;
  Mlp net(backend, {1, 32, 32, 1}, mo);
  AdamOptions ao;
  ao.lr = 1e-2;
  Adam adam(backend, net.parameters().size(), ao);

  // About 6.5 kFLOP per sample per step: 1000 full-batch steps take a few tens of ms (PyTorch gets there in ~100).
  const int kMaxSteps = 1000;
  const float kTargetMse = 1e-4f;  // sin's variance on the interval is 0.5
  int steps = 0;
  float mse = 1.0f;
  while (steps < kMaxSteps) {
    ConstBatchView out = net.ForwardTrain(ConstBatchView(xd.data(), n, 1, device));
    backend->GatherLoss(LossKind::kMse, out, VectorView<const int32_t>(), AsVector(yd), net.OutputGrad(),
                        net.linear_grads(net.num_layers() - 1).bias, AsVector(stats));
    net.Backward(net.OutputGrad(), true);
    adam.Step(net.parameters(), net.gradients());
    ++steps;
    if (steps % 50 == 0) {
      mse = stats.ToHost()[0];  // loss before this step's update
      if (mse < kTargetMse) break;
    }
  }
  EXPECT_LT(mse, kTargetMse) << "after " << steps << " steps";
  // Inference agrees with what was trained.
  ConstBatchView pred = net.Forward(ConstBatchView(xd.data(), n, 1, device));
  const std::vector<float> p = ToHost(pred);
  double err = 0;
  for (int i = 0; i < n; ++i) err += (p[i] - y[i]) * (p[i] - y[i]);
  EXPECT_LT(err / n, 3 * kTargetMse);
  RecordProperty("steps", steps);
}

INSTANTIATE_TEST_SUITE_P(Devices, MlpFit, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
