// The per-env code path of the CUDA back end (StepOneEnv: random actions with the state in
// registers) run on the CPU one env at a time, against the vectorized CPU back end: the same
// bits in every output array. This checks the GPU's semantics on machines without a GPU.
#include <gtest/gtest.h>

#include "envs/batched_env.h"
#include "envs/classic/cartpole.h"
#include "tests/envs/env_test_util.h"
#include "tests/envs/reference_backend.h"

namespace cugym {
namespace {

using testing::Host;
using testing::ReferenceBackend;
using testing::StepWith;

void ExpectSameOutputs(const VectorEnv& a, const VectorEnv& b) {
  const int64_t n = a.num_envs();
  const int64_t dim = a.spec().obs_dim();
  EXPECT_EQ(Host(a.obs(), n * dim, Device::kCpu), Host(b.obs(), n * dim, Device::kCpu));
  EXPECT_EQ(Host(a.final_obs(), n * dim, Device::kCpu), Host(b.final_obs(), n * dim, Device::kCpu));
  EXPECT_EQ(Host(a.rewards(), n, Device::kCpu), Host(b.rewards(), n, Device::kCpu));
  EXPECT_EQ(Host(a.terminated(), n, Device::kCpu), Host(b.terminated(), n, Device::kCpu));
  EXPECT_EQ(Host(a.truncated(), n, Device::kCpu), Host(b.truncated(), n, Device::kCpu));
  EXPECT_EQ(Host(a.episode_returns(), n, Device::kCpu), Host(b.episode_returns(), n, Device::kCpu));
  EXPECT_EQ(Host(a.episode_lengths(), n, Device::kCpu), Host(b.episode_lengths(), n, Device::kCpu));
  EXPECT_EQ(a.GetStates(0, n), b.GetStates(0, n));
}

TEST(ReferenceBackend, RandomRolloutInRegistersEqualsTheVectorizedCpuPath) {
  const int64_t n = 257;
  BatchedEnv<CartPole, ReferenceBackend> reference(n, Device::kCpu);
  auto cpu = MakeCpuVectorEnv<CartPole>(n);
  reference.Reset(13);
  cpu->Reset(13);
  reference.StepRandom(700);  // one call: every env crosses several episodes and truncations
  for (int t = 0; t < 700; ++t) cpu->StepRandom(1);
  ExpectSameOutputs(reference, *cpu);
  reference.StepRandom(1);
  cpu->StepRandom(1);
  ExpectSameOutputs(reference, *cpu);
}

TEST(ReferenceBackend, GivenActionsEqualTheVectorizedCpuPath) {
  const int64_t n = 33;
  BatchedEnv<CartPole, ReferenceBackend> reference(n, Device::kCpu);
  auto cpu = MakeCpuVectorEnv<CartPole>(n);
  reference.Reset(3);
  cpu->Reset(3);
  for (int t = 0; t < 120; ++t) {
    std::vector<int32_t> actions(n);
    for (int64_t i = 0; i < n; ++i) actions[i] = static_cast<int32_t>((i * 7 + t * 3) % 5 < 2);
    StepWith(reference, actions);
    StepWith(*cpu, actions);
  }
  ExpectSameOutputs(reference, *cpu);
}

TEST(ReferenceBackend, AutoresetOffAgrees) {
  BatchedEnv<CartPole, ReferenceBackend> reference(16, Device::kCpu);
  auto cpu = MakeCpuVectorEnv<CartPole>(16);
  reference.set_autoreset(false);
  cpu->set_autoreset(false);
  reference.Reset(8);
  cpu->Reset(8);
  reference.StepRandom(60);
  for (int t = 0; t < 60; ++t) cpu->StepRandom(1);
  ExpectSameOutputs(reference, *cpu);
}

}  // namespace
}  // namespace cugym
