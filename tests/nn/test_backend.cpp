// Back-end primitives on every device: GEMM orientation, row max/argmax and gather, Polyak and
// hard updates, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nn/backend.h"
#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::ToDevice;

class BackendTest : public testing::DeviceTest {};

TEST_P(BackendTest, GemmOnRowMajorDataThroughTransposedViews) {
  // a = [[1, 2, 3], [4, 5, 6]] and b = [[1, 0], [0, 1], [1, 1]] row-major; c = a b = [[4, 5], [10, 11]].
  Buffer<float> a = ToDevice(device(), std::vector<float>{1, 2, 3, 4, 5, 6});
  Buffer<float> b = ToDevice(device(), std::vector<float>{1, 0, 0, 1, 1, 1});
  Buffer<float> c(device(), 4);
  // Row-major c = a b is column-major c^T = b^T a^T.
  MatrixView<const float, Layout::kRowMajor> av(a.data(), 2, 3, device()), bv(b.data(), 3, 2, device());
  MatrixView<float, Layout::kRowMajor> cv(c.data(), 2, 2, device());
  backend_->Gemm(Op::kN, bv.Transpose(), Op::kN, av.Transpose(), 1.0f, 0.0f, cv.Transpose());
  EXPECT_EQ(c.ToHost(), (std::vector<float>{4, 5, 10, 11}));
  // beta accumulates: c = 2 a b + c.
  backend_->Gemm(Op::kN, bv.Transpose(), Op::kN, av.Transpose(), 2.0f, 1.0f, cv.Transpose());
  EXPECT_EQ(c.ToHost(), (std::vector<float>{12, 15, 30, 33}));
  // Shapes that do not chain are refused with the dimensions.
  try {
    backend_->Gemm(Op::kT, bv.Transpose(), Op::kN, av.Transpose(), 1.0f, 0.0f, cv.Transpose());
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Gemm: op(a) is 3 x 2"), std::string::npos) << e.what();
  }
}

TEST_P(BackendTest, RowMaxArgmaxAndGather) {
  // Ties go to the lowest index, as torch.argmax.
  Buffer<float> q = ToDevice(device(), std::vector<float>{1, 3, 3, -1, -2, -0.5f, 7, 7, 7});
  Buffer<float> max(device(), 3), out(device(), 3);
  Buffer<int32_t> arg(device(), 3);
  ConstBatchView qv(q.data(), 3, 3, device());
  backend_->RowMax(qv, AsVector(max), AsVector(arg));
  EXPECT_EQ(max.ToHost(), (std::vector<float>{3, -0.5f, 7}));
  EXPECT_EQ(arg.ToHost(), (std::vector<int32_t>{1, 2, 0}));
  backend_->RowMax(qv, VectorView<float>(), AsVector(arg));  // argmax only
  EXPECT_EQ(arg.ToHost(), (std::vector<int32_t>{1, 2, 0}));
  Buffer<int32_t> actions = ToDevice(device(), std::vector<int32_t>{2, 0, 1});
  backend_->Gather(qv, AsVector(actions), AsVector(out));
  EXPECT_EQ(out.ToHost(), (std::vector<float>{3, -1, 7}));
}

TEST_P(BackendTest, OutOfRangeActions) {
  Buffer<float> q = ToDevice(device(), std::vector<float>{1, 2, 3, 4}),
                t = ToDevice(device(), std::vector<float>{0, 0});
  Buffer<float> dq(device(), 4), stats(device(), 2), out(device(), 2);
  Buffer<int32_t> actions = ToDevice(device(), std::vector<int32_t>{0, 2});
  ConstBatchView qv(q.data(), 2, 2, device());
  if (device() == Device::kCpu) {
    EXPECT_THROW(backend_->Gather(qv, AsVector(actions), AsVector(out)), std::invalid_argument);
    EXPECT_THROW(backend_->GatherLoss(LossKind::kMse, qv, AsVector(actions), AsVector(t),
                                      BatchView(dq.data(), 2, 2, device()), VectorView<float>(), AsVector(stats)),
                 std::invalid_argument);
  } else {
    // No host reads on CUDA: the loss turns NaN and the bad row gets no gradient.
    backend_->GatherLoss(LossKind::kMse, qv, AsVector(actions), AsVector(t), BatchView(dq.data(), 2, 2, device()),
                         VectorView<float>(), AsVector(stats));
    EXPECT_TRUE(std::isnan(stats.ToHost()[0]));
    EXPECT_EQ(dq.ToHost(), (std::vector<float>{1.0f, 0, 0, 0}));
    backend_->Gather(qv, AsVector(actions), AsVector(out));
    EXPECT_TRUE(std::isnan(out.ToHost()[1]));
  }
}

TEST_P(BackendTest, HuberGradientOfANanDifferenceIsNan) {
  // A diverged target must show in the gradient, not be clamped to +-1 (fminf/fmaxf would).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buffer<float> q = ToDevice(device(), std::vector<float>{1, 2, 3, 4}),
                t = ToDevice(device(), std::vector<float>{nan, 10});
  Buffer<float> dq(device(), 4), stats(device(), 2);
  Buffer<int32_t> actions = ToDevice(device(), std::vector<int32_t>{1, 0});
  backend_->GatherLoss(LossKind::kHuber, ConstBatchView(q.data(), 2, 2, device()), AsVector(actions), AsVector(t),
                       BatchView(dq.data(), 2, 2, device()), VectorView<float>(), AsVector(stats));
  const std::vector<float> g = dq.ToHost();
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_TRUE(std::isnan(g[1]));
  EXPECT_EQ(g[2], -0.5f);  // row 1: d = 3 - 10, clamped to -1, over the batch of 2
  EXPECT_EQ(g[3], 0.0f);
  EXPECT_TRUE(std::isnan(stats.ToHost()[0]));
  EXPECT_EQ(HuberGradient(0.25f), 0.25f);
  EXPECT_EQ(HuberGradient(-3.0f), -1.0f);
}

TEST_P(BackendTest, GatherLossWeighsRowsAndReportsTheirErrors) {
  // Rows: q (1, 2) action 1 target 0 -> d 2; q (3, 4) action 0 target 5 -> d -2. Weights 0.25, 1.
  Buffer<float> q = ToDevice(device(), std::vector<float>{1, 2, 3, 4}),
                t = ToDevice(device(), std::vector<float>{0, 5}), w = ToDevice(device(), std::vector<float>{0.25f, 1});
  Buffer<int32_t> actions = ToDevice(device(), std::vector<int32_t>{1, 0});
  Buffer<float> dq(device(), 4), dbias(device(), 2), stats(device(), 2), errors(device(), 2);
  const ConstBatchView qv(q.data(), 2, 2, device());
  backend_->GatherLoss(LossKind::kMse, qv, AsVector(actions), AsVector(t), BatchView(dq.data(), 2, 2, device()),
                       AsVector(dbias), AsVector(stats), AsVector(w), AsVector(errors));
  EXPECT_EQ(errors.ToHost(), (std::vector<float>{2, -2}));
  // loss = (0.25 * 4 + 1 * 4) / 2; dq = w * 2 d / 2.
  EXPECT_EQ(stats.ToHost()[0], 2.5f);
  EXPECT_EQ(dq.ToHost(), (std::vector<float>{0, 0.5f, -2, 0}));
  EXPECT_EQ(dbias.ToHost(), (std::vector<float>{-2, 0.5f}));
  // Huber: |d| = 2 is in the linear part, gradient sign(d) / 2, weighted.
  backend_->GatherLoss(LossKind::kHuber, qv, AsVector(actions), AsVector(t), BatchView(dq.data(), 2, 2, device()),
                       VectorView<float>(), AsVector(stats), AsVector(w));
  EXPECT_EQ(stats.ToHost()[0], (0.25f * 1.5f + 1.5f) / 2);
  EXPECT_EQ(dq.ToHost(), (std::vector<float>{0, 0.125f, -0.5f, 0}));
  // Without weights the rows count equally (the same call as before weights existed).
  backend_->GatherLoss(LossKind::kMse, qv, AsVector(actions), AsVector(t), BatchView(dq.data(), 2, 2, device()),
                       VectorView<float>(), AsVector(stats));
  EXPECT_EQ(stats.ToHost()[0], 4.0f);
  Buffer<float> short_w = ToDevice(device(), std::vector<float>{1});
  EXPECT_THROW(
      backend_->GatherLoss(LossKind::kMse, qv, AsVector(actions), AsVector(t), BatchView(dq.data(), 2, 2, device()),
                           VectorView<float>(), AsVector(stats), AsVector(short_w)),
      std::invalid_argument);
}

TEST_P(BackendTest, ValueAdvantageAggregatesAndBackpropagates) {
  // Row 0: V 1, A (2, 4), mean 3: Q (0, 2). Row 1: V -1, A (0, 0): Q (-1, -1).
  Buffer<float> x = ToDevice(device(), std::vector<float>{1, 2, 4, -1, 0, 0}), y(device(), 4), dx(device(), 6);
  backend_->ValueAdvantage(ConstBatchView(x.data(), 2, 3, device()), BatchView(y.data(), 2, 2, device()));
  EXPECT_EQ(y.ToHost(), (std::vector<float>{0, 2, -1, -1}));
  // dV = sum dQ; dA_j = dQ_j - mean dQ.
  Buffer<float> dy = ToDevice(device(), std::vector<float>{1, 0, 0.5f, 0.5f});
  backend_->ValueAdvantageBackward(ConstBatchView(dy.data(), 2, 2, device()), BatchView(dx.data(), 2, 3, device()));
  EXPECT_EQ(dx.ToHost(), (std::vector<float>{1, 0.5f, -0.5f, 1, 0, 0}));
  EXPECT_THROW(backend_->ValueAdvantage(ConstBatchView(x.data(), 2, 3, device()), BatchView(y.data(), 2, 3, device())),
               std::invalid_argument);
}

TEST_P(BackendTest, PolyakAndHardCopy) {
  MlpOptions o;
  o.seed = 1;
  Mlp online(backend_, {3, 5, 2}, o);
  o.seed = 2;
  o.trainable = false;
  Mlp target(backend_, {3, 5, 2}, o);
  const std::vector<float> a = ToHost(online.parameters()), b = ToHost(target.parameters());
  ASSERT_NE(a, b);
  target.PolyakFrom(online, 0.25f);
  std::vector<float> c = ToHost(target.parameters());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(c[i], 0.25f * a[i] + 0.75f * b[i]) << i;
  target.PolyakFrom(online, 0.0f);  // tau 0 keeps the target
  EXPECT_EQ(ToHost(target.parameters()), c);
  target.CopyParametersFrom(online);
  EXPECT_EQ(ToHost(target.parameters()), a);  // bit for bit

  Mlp other_shape(backend_, {3, 4, 2}, o);
  EXPECT_THROW(other_shape.CopyParametersFrom(online), std::invalid_argument);
  EXPECT_THROW(target.PolyakFrom(online, 1.5f), std::invalid_argument);
}

TEST_P(BackendTest, RefusesBuffersOnAnotherDevice) {
  if (device() == Device::kCpu && !CudaAvailable()) {
    // Any view that claims to be on CUDA will do: the check comes before any access.
    float fake[4] = {0, 0, 0, 0};
    BatchView y(fake, 2, 2, Device::kCuda);
    Buffer<float> bias(Device::kCpu, 2);
    EXPECT_THROW(backend_->BiasActivation(y, AsVector(bias), Activation::kRelu), std::invalid_argument);
    return;
  }
  Device other = device() == Device::kCpu ? Device::kCuda : Device::kCpu;
  Buffer<float> y(other, 4), bias(device(), 2);
  try {
    backend_->BiasActivation(BatchView(y.data(), 2, 2, other), AsVector(bias), Activation::kRelu);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("BiasActivation: y is on"), std::string::npos) << e.what();
  }
}

TEST_P(BackendTest, MlpRefusesBadShapes) {
  EXPECT_THROW(Mlp(backend_, {4}), std::invalid_argument);
  EXPECT_THROW(Mlp(backend_, {4, 0, 2}), std::invalid_argument);
  MlpOptions o;
  o.max_batch = 4;
  Mlp net(backend_, {3, 8, 2}, o);
  EXPECT_EQ(net.num_parameters(), 3 * 8 + 8 + 8 * 2 + 2);
  Buffer<float> x(device(), 5 * 3);
  EXPECT_THROW(net.Forward(ConstBatchView(x.data(), 5, 3, device())), std::invalid_argument);  // > max_batch
  EXPECT_THROW(net.Forward(ConstBatchView(x.data(), 3, 5, device())), std::invalid_argument);  // wrong width
  EXPECT_THROW(net.Backward(net.OutputGrad()), std::invalid_argument);                         // no ForwardTrain yet
  net.ForwardTrain(ConstBatchView(x.data(), 2, 3, device()));
  net.Forward(ConstBatchView(x.data(), 2, 3, device()));
  EXPECT_THROW(net.Backward(net.OutputGrad()), std::invalid_argument);  // a Forward overwrote it
}

TEST(Backend, CudaWithoutGpuIsAClearError) {
  if (CudaAvailable()) GTEST_SKIP() << "a GPU is present";
  try {
    MakeBackend(Device::kCuda);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("nn back end for cuda: ", 0), 0u) << e.what();
  }
}

TEST(Backend, ParsesLossNames) {
  EXPECT_EQ(ParseLoss("mse"), LossKind::kMse);
  EXPECT_EQ(ParseLoss("huber"), LossKind::kHuber);
  EXPECT_STREQ(LossName(LossKind::kHuber), "huber");
  EXPECT_THROW(ParseLoss("l1"), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Devices, BackendTest, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
