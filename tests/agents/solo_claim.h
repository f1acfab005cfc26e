// What a test of K agents trained as one batched network may claim against their solo runs on one
// device. On the CPU each agent is its solo run, bit for bit, by construction. On CUDA the batch's
// layers are cuBLAS's strided-batched GEMMs where a solo run's are single GEMMs, and cuBLAS picks
// its kernels per shape and batch count: where they sum in another order, one rounding apart
// changes a prioritized draw or a greedy tie somewhere in a thousand updates and the runs part for
// good. So a test asserts the solo run's bits only where a direct check at the learner's shapes
// finds the batched network giving a network of one's bits (SoloClaim::kBits); elsewhere it runs
// the config only to its third learning iteration (FirstLearningIterations: a handful of updates)
// and compares the schedule (env steps, episodes) exactly and the networks within rounding
// (kRoundingTolerance). Kept apart from the suites so that it moves with them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/train_config.h"
#include "core/device.h"
#include "core/memory.h"
#include "nn/mlp.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::testing {

enum class SoloClaim { kBits, kRounding };

// Normwise relative error of a network within rounding of its solo run after a few learning
// iterations (a few Adam steps: a sign that rounding flips on a near-zero gradient moves a weight
// by twice the learning rate). A fault (another replica's weights or minibatch) is far beyond it.
constexpr double kRoundingTolerance = 1e-3;

// Values that differ between `replicas` networks of `sizes` (with `shape`'s convolution and
// LayerNorm) run as one on `backend` and networks of one with the same parameters, replica by
// replica: Forward at each of `rows` (rows per replica) and, at the largest, ForwardTrain and
// Backward's gradients. 0: the same bits.
inline int64_t BatchedAgainstSoloDifferences(const std::shared_ptr<nn::Backend>& backend, const std::vector<int>& sizes,
                                             int replicas, const std::vector<int>& rows,
                                             const nn::MlpOptions& shape = {}) {
  const Device device = backend->device();
  const int most = *std::max_element(rows.begin(), rows.end());
  nn::MlpOptions one;
  one.conv = shape.conv;
  one.layer_norm = shape.layer_norm;
  one.max_batch = most;
  nn::MlpOptions many = one;
  many.replicas = replicas;
  nn::Mlp solo(backend, sizes, one), batched(backend, sizes, many);
  for (int r = 0; r < replicas; ++r) batched.Initialize(r, 1000 + r);
  const int64_t in = sizes.front(), out = sizes.back(), stride = batched.replica_stride();
  const std::vector<float> x = nn::testing::RandomFloats(static_cast<std::size_t>(replicas) * most * in, 11);
  const std::vector<float> dy = nn::testing::RandomFloats(static_cast<std::size_t>(replicas) * most * out, 12);
  Buffer<float> xd = nn::testing::ToDevice(device, x), dyd(device, dy.size());
  int64_t differ = 0;
  auto count = [&differ](const std::vector<float>& a, const std::vector<float>& b, int64_t first) {
    for (std::size_t i = 0; i < b.size(); ++i) differ += a[first + i] != b[i];
  };
  for (int m : rows) {
    const std::vector<float> all = nn::ToHost(batched.Forward(nn::ConstBatchView(xd.data(), replicas * m, in, device)));
    for (int r = 0; r < replicas; ++r) {
      batched.CopyReplicaTo(r, solo);
      count(all, nn::ToHost(solo.Forward(nn::ConstBatchView(xd.data() + r * m * in, m, in, device))), r * m * out);
    }
  }
  dyd.FromHost(dy.data(), dy.size());
  batched.ForwardTrain(nn::ConstBatchView(xd.data(), replicas * most, in, device));
  batched.Backward(nn::BatchView(dyd.data(), replicas * most, out, device));
  const std::vector<float> grads = nn::ToHost(batched.gradients());
  for (int r = 0; r < replicas; ++r) {
    batched.CopyReplicaTo(r, solo);
    dyd.FromHost(dy.data() + r * most * out, static_cast<std::size_t>(most) * out);
    solo.ForwardTrain(nn::ConstBatchView(xd.data() + r * most * in, most, in, device));
    solo.Backward(nn::BatchView(dyd.data(), most, out, device));
    count(grads, nn::ToHost(solo.gradients()), r * stride);
  }
  return differ;
}

// The claim for a test of the agents whose replicated network is `online` (its layer sizes, replica
// count and back end), trained with `config` (acting on num_envs rows per agent, learning on
// batch_size), printed with the reason. The CPU must give the bits: a difference there is a fault.
inline SoloClaim ClaimFor(const nn::Mlp& online, const agent::TrainConfig& config) {
  const std::vector<int> rows = {static_cast<int>(config.num_envs), static_cast<int>(config.batch_size)};
  nn::MlpOptions shape;
  shape.conv = online.conv();
  shape.layer_norm = online.layer_norm();
  const int64_t differ =
      BatchedAgainstSoloDifferences(online.shared_backend(), online.layer_sizes(), online.replicas(), rows, shape);
  std::string sizes;
  for (int s : online.layer_sizes()) sizes += (sizes.empty() ? "" : "-") + std::to_string(s);
  std::printf("[  claim   ] %s, %d replicas of %s at %lld and %lld rows: %s\n", DeviceName(online.device()),
              online.replicas(), sizes.c_str(), static_cast<long long>(config.num_envs),
              static_cast<long long>(config.batch_size),
              differ == 0 ? "the batched network gives a network of one's bits: the solo runs' bytes are asserted"
                          : (std::to_string(differ) +
                             " values differ from a network of one's: three learning iterations are compared within "
                             "rounding, the schedule exactly")
                                .c_str());
  std::fflush(stdout);
  if (online.device() == Device::kCpu) {
    EXPECT_EQ(differ, 0) << "on the CPU replica r is a network of one, bit for bit, by construction";
  }
  return differ == 0 ? SoloClaim::kBits : SoloClaim::kRounding;
}

// `config` cut to its first three learning iterations (from the first that ends past
// learning_starts with a minibatch stored): a handful of updates, the last replayed from the
// iteration's CUDA graph (captured at the second). The runs a rounding claim compares.
inline agent::TrainConfig FirstLearningIterations(agent::TrainConfig config) {
  const int64_t n = config.num_envs;
  const int64_t first = std::max(config.learning_starts / n + 1, (config.batch_size + n - 1) / n);  // 1-based
  config.total_steps = (first + 2) * n;
  return config;
}

inline agent::TrainConfig ForClaim(const agent::TrainConfig& config, SoloClaim claim) {
  return claim == SoloClaim::kBits ? config : FirstLearningIterations(config);
}

}  // namespace cugym::testing
