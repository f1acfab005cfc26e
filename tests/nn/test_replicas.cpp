// K networks run as one (MlpOptions::replicas, for K agents trained together): the batched GEMM and
// the grouped bias and LayerNorm passes give each replica what its own call gives, and a
// replicated Mlp's outputs, gradients and Adam steps (clipped per replica) are, replica by
// replica, those of K networks of one. On the
// CPU bit for bit; on CUDA the grouped passes bit for bit and cuBLAS's batched GEMM within
// rounding of cublasSgemm (the suite prints how many entries are the same bits).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "nn/adam.h"
#include "nn/checkpoint.h"
#include "nn/mlp.h"
#include "tests/core/test_util.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::nn {
namespace {

using testing::AllDevices;
using testing::DeviceParamName;
using testing::MaxRelError;
using testing::RandomFloats;
using testing::ToDevice;

// The same bits on the CPU; within float rounding of a differently ordered sum on CUDA, where the
// batched GEMM may pick other kernels than the single one. Returns the entries with equal bits.
int ExpectSame(const std::vector<float>& got, const std::vector<float>& want, Device device, const char* what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  int same = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] == want[i]) ++same;
    if (device == Device::kCpu) {
      EXPECT_EQ(got[i], want[i]) << what << " entry " << i;
      if (got[i] != want[i]) break;
    }
  }
  if (device != Device::kCpu) {
    EXPECT_LT(MaxRelError(got, want), 1e-5) << what;
  }
  return same;
}

std::vector<float> Slice(const std::vector<float>& v, int64_t first, int64_t count) {
  return {v.begin() + first, v.begin() + first + count};
}

class Replicas : public ::testing::TestWithParam<Device> {};

TEST_P(Replicas, BatchedGemmIsEachProductOnItsOwn) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  auto backend = MakeBackend(device);
  constexpr int64_t kCount = 3, m = 7, n = 5, k = 9;
  // Strides with gaps between the replicas' operands, as a network's parameter blocks have.
  constexpr int64_t kStrideA = m * k + 5, kStrideB = k * n + 3, kStrideC = m * n + 2;
  int same = 0, total = 0;
  for (Op op_a : {Op::kN, Op::kT}) {
    for (Op op_b : {Op::kN, Op::kT}) {
      SCOPED_TRACE(::testing::Message() << "op_a " << (op_a == Op::kT ? "T" : "N") << " op_b "
                                        << (op_b == Op::kT ? "T" : "N"));
      const std::vector<float> a = RandomFloats(kCount * kStrideA, 1), b = RandomFloats(kCount * kStrideB, 2);
      const std::vector<float> c0 = RandomFloats(kCount * kStrideC, 3);
      Buffer<float> ad = ToDevice(device, a), bd = ToDevice(device, b);
      Buffer<float> batched = ToDevice(device, c0), each = ToDevice(device, c0);
      const int64_t a_rows = op_a == Op::kN ? m : k, b_rows = op_b == Op::kN ? k : n;
      auto view_a = [&](int64_t r) {
        return ConstColMajorView(ad.data() + r * kStrideA, a_rows, m * k / a_rows, device);
      };
      auto view_b = [&](int64_t r) {
        return ConstColMajorView(bd.data() + r * kStrideB, b_rows, k * n / b_rows, device);
      };
      backend->GemmBatched(kCount, op_a, view_a(0), kStrideA, op_b, view_b(0), kStrideB, 0.5f, 0.25f,
                           ColMajorView(batched.data(), m, n, device), kStrideC);
      for (int64_t r = 0; r < kCount; ++r) {
        backend->Gemm(op_a, view_a(r), op_b, view_b(r), 0.5f, 0.25f,
                      ColMajorView(each.data() + r * kStrideC, m, n, device));
      }
      const std::vector<float> got = batched.ToHost(), want = each.ToHost();
      same += ExpectSame(got, want, device, "c");
      total += static_cast<int>(got.size());
      // The gaps between the outputs are left alone.
      for (int64_t r = 0; r < kCount; ++r) {
        for (int64_t i = m * n; i < kStrideC; ++i) EXPECT_EQ(got[r * kStrideC + i], c0[r * kStrideC + i]);
      }
    }
  }
  std::printf("[replicas] %s: batched GEMM, %d of %d entries the bits of one GEMM per replica\n", DeviceName(device),
              same, total);
}

TEST_P(Replicas, GroupedBiasPassesAreEachGroupsOwn) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  auto backend = MakeBackend(device);
  constexpr int64_t kGroups = 3, rows = 6, f = 37, kStride = 48;  // > 32 features: two blocks on CUDA
  const std::vector<float> y0 = RandomFloats(kGroups * rows * f, 4), bias = RandomFloats(kGroups * kStride, 5);
  const std::vector<float> dy0 = RandomFloats(kGroups * rows * f, 6);
  for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kTanh}) {
    SCOPED_TRACE(ActivationName(act));
    Buffer<float> bias_d = ToDevice(device, bias);
    Buffer<float> grouped = ToDevice(device, y0), each = ToDevice(device, y0);
    backend->BiasActivation(BatchView(grouped.data(), kGroups * rows, f, device),
                            VectorView<const float>(bias_d.data(), f, device), act, kGroups, kStride);
    for (int64_t g = 0; g < kGroups; ++g) {
      backend->BiasActivation(BatchView(each.data() + g * rows * f, rows, f, device),
                              VectorView<const float>(bias_d.data() + g * kStride, f, device), act);
    }
    ExpectSame(grouped.ToHost(), each.ToHost(), Device::kCpu, "y");  // elementwise: the same bits everywhere

    // Backward, on the forward's output (the ReLU's mask, tanh's 1 - y^2).
    Buffer<float> dy_grouped = ToDevice(device, dy0), dy_each = ToDevice(device, dy0);
    Buffer<float> db_grouped = ToDevice(device, std::vector<float>(kGroups * kStride, 7.0f));
    Buffer<float> db_each = ToDevice(device, std::vector<float>(kGroups * kStride, 7.0f));
    backend->ActivationBackward(BatchView(dy_grouped.data(), kGroups * rows, f, device),
                                ConstBatchView(each.data(), kGroups * rows, f, device),
                                VectorView<float>(db_grouped.data(), f, device), act, kGroups, kStride);
    for (int64_t g = 0; g < kGroups; ++g) {
      backend->ActivationBackward(BatchView(dy_each.data() + g * rows * f, rows, f, device),
                                  ConstBatchView(each.data() + g * rows * f, rows, f, device),
                                  VectorView<float>(db_each.data() + g * kStride, f, device), act);
    }
    ExpectSame(dy_grouped.ToHost(), dy_each.ToHost(), Device::kCpu, "dz");
    ExpectSame(db_grouped.ToHost(), db_each.ToHost(), Device::kCpu, "dbias (the gaps untouched)");
  }
}

// What a replicated network is checked with: its layers, Adam's clipping, the hidden activation
// and the initialization.
struct NetworkKind {
  const char* name;
  std::vector<int> sizes;
  ConvSpec conv;
  bool layer_norm = false;
  double max_grad_norm = 0.0;
  Activation activation = Activation::kRelu;
  MlpInit init = MlpInit::kTorchDefault;
};

// Three replicas against three networks of one with the same weights: forward, backward and three
// Adam steps on the whole parameter buffer, for a plain MLP, for a convolution with LayerNorms
// whose gradients Adam clips (each replica by its own norm), and for both with tanh hidden layers
// and orthogonal weights (PPO's), each replica drawn from its own seed.
TEST_P(Replicas, ReplicatedMlpIsKNetworksOfOne) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  auto backend = MakeBackend(device);
  constexpr int kReplicas = 3;
  constexpr int64_t kRows = 7;  // per replica, under max_batch
  const std::vector<NetworkKind> kinds = {
      {"mlp", {5, 16, 12, 3}, ConvSpec(), false, 0.0},
      {"conv + layer_norm + clipping", {5 * 5 * 2, 16, 12, 3}, ConvSpec{5, 5, 2, 4, 3}, true, 0.05},
      {"tanh + orthogonal", {5, 16, 12, 3}, ConvSpec(), false, 0.0, Activation::kTanh, MlpInit::kOrthogonal},
      {"conv + layer_norm + clipping, tanh + orthogonal",
       {5 * 5 * 2, 16, 12, 3},
       ConvSpec{5, 5, 2, 4, 3},
       true,
       0.05,
       Activation::kTanh,
       MlpInit::kOrthogonal}};
  for (const NetworkKind& kind : kinds) {
    SCOPED_TRACE(kind.name);
    const std::vector<int>& sizes = kind.sizes;
    MlpOptions options;
    options.max_batch = 8;
    options.replicas = kReplicas;
    options.conv = kind.conv;
    options.layer_norm = kind.layer_norm;
    options.activation = kind.activation;
    options.init = kind.init;
    options.output_gain = 0.5;  // orthogonal: another gain than the hidden layers'
    Mlp batch(backend, sizes, options);
    std::vector<std::unique_ptr<Mlp>> solo;
    for (int r = 0; r < kReplicas; ++r) {
      batch.Initialize(r, 100 + r);
      MlpOptions one = options;
      one.replicas = 1;
      one.seed = 100 + r;
      solo.push_back(std::make_unique<Mlp>(backend, sizes, one));
    }
    const int64_t stride = batch.replica_stride();
    ASSERT_EQ(stride, solo[0]->parameters().size());
    ASSERT_EQ(batch.parameters().size(), kReplicas * stride);
    const std::vector<float> params = ToHost(batch.parameters());
    for (int r = 0; r < kReplicas; ++r) {
      EXPECT_EQ(Slice(params, r * stride, stride), ToHost(solo[r]->parameters())) << "replica " << r << "'s weights";
    }

    AdamOptions adam_options;
    adam_options.lr = 1e-2;
    adam_options.max_grad_norm = kind.max_grad_norm;
    Adam batch_adam(backend, batch.parameters().size(), adam_options, kReplicas);
    std::vector<std::unique_ptr<Adam>> solo_adam;
    for (int r = 0; r < kReplicas; ++r) {
      solo_adam.push_back(std::make_unique<Adam>(backend, solo[r]->parameters().size(), adam_options));
    }
    const int64_t in = sizes.front(), out = sizes.back();
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE(::testing::Message() << "step " << step);
      const std::vector<float> x = RandomFloats(kReplicas * kRows * in, 10 + step);
      const std::vector<float> dy = RandomFloats(kReplicas * kRows * out, 20 + step);
      Buffer<float> xd = ToDevice(device, x), dyd = ToDevice(device, dy);

      // Inference first (the acting path), then the training forward and backward.
      const std::vector<float> inferred =
          ToHost(batch.Forward(ConstBatchView(xd.data(), kReplicas * kRows, in, device)));
      const std::vector<float> trained =
          ToHost(batch.ForwardTrain(ConstBatchView(xd.data(), kReplicas * kRows, in, device)));
      EXPECT_EQ(inferred, trained);
      batch.Backward(BatchView(dyd.data(), kReplicas * kRows, out, device));
      const std::vector<float> grads = ToHost(batch.gradients());
      batch_adam.Step(batch.parameters(), batch.gradients());
      const std::vector<float> stepped = ToHost(batch.parameters());
      const std::vector<float> norms = batch_adam.ReadGradNorms();

      for (int r = 0; r < kReplicas; ++r) {
        SCOPED_TRACE(::testing::Message() << "replica " << r);
        const ConstBatchView xr(xd.data() + r * kRows * in, kRows, in, device);
        ExpectSame(Slice(inferred, r * kRows * out, kRows * out), ToHost(solo[r]->Forward(xr)), device, "output");
        solo[r]->ForwardTrain(xr);
        solo[r]->Backward(BatchView(dyd.data() + r * kRows * out, kRows, out, device));
        ExpectSame(Slice(grads, r * stride, stride), ToHost(solo[r]->gradients()), device, "gradients");
        solo_adam[r]->Step(solo[r]->parameters(), solo[r]->gradients());
        ExpectSame(Slice(stepped, r * stride, stride), ToHost(solo[r]->parameters()), device, "parameters after Adam");
        if (kind.max_grad_norm > 0) {
          const float norm = solo_adam[r]->ReadGradNorms()[0];
          EXPECT_GT(norm, kind.max_grad_norm) << "clipping engaged";
          ExpectSame({norms[r]}, {norm}, device, "the replica's own gradient norm");
        }
      }
    }
  }
}

TEST_P(Replicas, OneReplicaCopiesInAndOut) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  auto backend = MakeBackend(device);
  const std::vector<int> sizes = {4, 8, 2};
  MlpOptions options;
  options.replicas = 3;
  options.trainable = false;
  Mlp batch(backend, sizes, options);
  for (int r = 0; r < 3; ++r) batch.Initialize(r, 7 + r);
  MlpOptions one;
  one.seed = 99;
  Mlp solo(backend, sizes, one), other(backend, sizes, one);
  const int64_t stride = batch.replica_stride();

  batch.CopyReplicaTo(1, solo);
  EXPECT_EQ(ToHost(solo.parameters()), Slice(ToHost(batch.parameters()), stride, stride));
  other.Initialize(5);
  batch.CopyReplicaFrom(2, other);
  const std::vector<float> after = ToHost(batch.parameters());
  EXPECT_EQ(Slice(after, 2 * stride, stride), ToHost(other.parameters()));
  EXPECT_EQ(Slice(after, stride, stride), ToHost(solo.parameters())) << "replica 1 untouched";
  // A file holds one network: save one replica through a network of one.
  EXPECT_THROW(SaveMlp(::testing::TempDir() + "replicas.safetensors", batch), std::invalid_argument);
}

TEST_P(Replicas, BadShapesAreRefused) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  auto backend = MakeBackend(device);
  MlpOptions options;
  options.replicas = 0;
  EXPECT_THROW(Mlp(backend, {4, 8, 2}, options), std::invalid_argument);
  options.replicas = 2;
  options.max_batch = 4;
  Mlp net(backend, {4, 8, 2}, options);
  Mlp single(backend, {4, 8, 2}, MlpOptions{});
  Buffer<float> x(device, 9 * 4);
  x.Zero();
  EXPECT_THROW(net.Forward(ConstBatchView(x.data(), 7, 4, device)), std::invalid_argument) << "7 rows in 2 replicas";
  EXPECT_THROW(net.CopyReplicaTo(2, single), std::invalid_argument) << "replica 2 of 2";
  EXPECT_THROW(net.PolyakFrom(single, 0.5f), std::invalid_argument);
  EXPECT_THROW(net.CopyReplicaFrom(0, net), std::invalid_argument) << "not a network of one";
  Buffer<float> c(device, 8);
  EXPECT_THROW(backend->GemmBatched(2, Op::kN, ConstColMajorView(x.data(), 2, 2, device), 4, Op::kN,
                                    ConstColMajorView(x.data(), 2, 2, device), 4, 1.0f, 0.0f,
                                    ColMajorView(c.data(), 2, 2, device), 3),
               std::invalid_argument)
      << "overlapping outputs";
  EXPECT_THROW(backend->BiasActivation(BatchView(x.data(), 9, 4, device), VectorView<const float>(c.data(), 4, device),
                                       Activation::kRelu, 2, 4),
               std::invalid_argument)
      << "9 rows in 2 groups";
  Buffer<float> gamma(device, 8);
  EXPECT_THROW(
      backend->LayerNorm(BatchView(x.data(), 9, 4, device), VectorView<const float>(gamma.data(), 4, device),
                         VectorView<const float>(gamma.data(), 4, device), VectorView<float>(c.data(), 9, device),
                         BatchView(x.data(), 9, 4, device), Activation::kRelu, 2, 4),
      std::invalid_argument)
      << "9 rows in 2 groups";
  EXPECT_THROW(Adam(backend, 9, AdamOptions{}, 2), std::invalid_argument) << "9 parameters in 2 groups";
}

// More replicas than CUDA runs in one op (ActivationBackward's grid rows) are refused when the
// network is made, not at its first backward pass, which may be inside a CUDA graph's capture;
// the CPU has no such limit.
TEST(Replicas, MoreThanCudaRunsInOneOpAreRefusedAtConstruction) {
  EXPECT_NO_THROW(CheckGroupCount(Device::kCuda, kMaxCudaGroups, "Mlp"));
  EXPECT_NO_THROW(CheckGroupCount(Device::kCpu, kMaxCudaGroups + 1, "Mlp"));
  EXPECT_EQ(cugym::testing::InvalidArgumentMessage([] { CheckGroupCount(Device::kCuda, kMaxCudaGroups + 1, "Mlp"); }),
            "Mlp: 65536 replicas, but CUDA runs at most 65535 in one op (a grid's rows); split them into batches");
  MlpOptions options;
  options.replicas = static_cast<int>(kMaxCudaGroups + 1);
  options.max_batch = 1;
  EXPECT_EQ(Mlp(MakeBackend(Device::kCpu), {1, 1}, options).replicas(), kMaxCudaGroups + 1);
  if (CudaAvailable()) {
    EXPECT_EQ(cugym::testing::InvalidArgumentMessage([&] {
                Mlp(MakeBackend(Device::kCuda), {1, 1}, options);
              }),
              "Mlp: 65536 replicas, but CUDA runs at most 65535 in one op (a grid's rows); split them into batches");
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, Replicas, ::testing::ValuesIn(AllDevices()), DeviceParamName);

}  // namespace
}  // namespace cugym::nn
