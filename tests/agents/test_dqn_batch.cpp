// K DQN agents in lockstep (agents/dqn_batch.h): agent k's network after T iterations is, on the
// CPU, bit for bit that of a DqnAgent with seed k's seed trained T iterations alone: the shipped
// CartPole config (prioritized replay, a dueling head, Polyak targets), and Double DQN with 3-step
// returns and ez-greedy holds. On CUDA the same within rounding (cuBLAS's batched GEMMs).
#include "agents/dqn_batch.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "agents/dqn.h"
#include "agents/train_run.h"
#include "nn/checkpoint.h"
#include "tests/agents/agent_test_util.h"
#include "tests/core/test_util.h"
#include "tests/gpu_skip.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::agent {
namespace {

using testing::Builtins;
using testing::ScratchDir;

// The shipped CartPole config, short: 3000 env steps (375 iterations, 1,000 before learning).
DqnConfig Config(TomlTable keys) {
  TrainConfigSource source;
  source.env_id = "CartPole-v1";
  keys["total_steps"] = ParseTomlValue(testing::kSanitizerBuild ? "2000" : "3000", "t");
  keys["eval_episodes"] = ParseTomlValue("0", "t");
  source.overrides = keys;
  std::ostringstream notes;
  return ResolveTrainConfig(Builtins(), source, notes);
}

// DqnAgent with `seed` trained through its own loop, its model's parameters.
std::vector<float> SoloParameters(DqnConfig config, uint64_t seed, Device device, const std::string& path) {
  config.seed = seed;
  DqnAgent agent(Builtins(), config, device);
  agent.Train([](const DqnProgress&) {}, [] { return false; }, [] {});
  agent.SaveModel(path);
  nn::Mlp net(nn::MakeBackend(device), nn::ReadMlpLayerSizes(path), nn::MlpOptions{});
  nn::LoadMlp(path, net);
  return nn::ToHost(net.parameters());
}

class DqnBatchTest : public ::testing::TestWithParam<Device> {};

TEST_P(DqnBatchTest, EachAgentTrainsAsItsSoloRun) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const ScratchDir scratch("cugym_dqn_batch");
  const std::vector<uint64_t> seeds = {3, 11, 42};
  const std::vector<TomlTable> variants = {{},  // the shipped config
                                           {{"double_dqn", ParseTomlValue("true", "t")},
                                            {"n_step", ParseTomlValue("3", "t")},
                                            {"prioritized_replay", ParseTomlValue("false", "t")},
                                            {"dueling", ParseTomlValue("false", "t")},
                                            {"exploration_hold_mu", ParseTomlValue("2.0", "t")}}};
  for (std::size_t v = 0; v < variants.size(); ++v) {
    SCOPED_TRACE(::testing::Message() << "variant " << v);
    const DqnConfig config = Config(variants[v]);
    DqnBatch batch(Builtins(), config, seeds, device);
    while (batch.global_step() < config.total_steps) batch.Iterate();
    for (int k = 0; k < batch.agents(); ++k) {
      SCOPED_TRACE(::testing::Message() << "seed " << seeds[k]);
      const std::vector<float> solo =
          SoloParameters(config, seeds[k], device, (scratch / ("solo_" + std::to_string(k))).string());
      // A network of one on the batch's back end (CopyReplicaTo wants the same one).
      nn::Mlp same_backend(batch.learner().online().shared_backend(), batch.learner().online().layer_sizes(),
                           nn::MlpOptions{});
      batch.CopyNetworkTo(k, same_backend);
      const std::vector<float> got = nn::ToHost(same_backend.parameters());
      if (device == Device::kCpu) {
        EXPECT_EQ(got, solo);
      } else {
        EXPECT_LT(nn::testing::NormwiseError(got, solo), 1e-3);
      }
      EXPECT_GT(batch.episodes(k).Read().episodes, 10) << "episodes ended and reset";
    }
  }
}

TEST(DqnBatch, RefusesWhatItCannotBatch) {
  using cugym::testing::InvalidArgumentMessage;
  DqnConfig config = Config({});
  EXPECT_EQ(InvalidArgumentMessage([&] { DqnBatch(Builtins(), config, {}, Device::kCpu); }), "DqnBatch: no seeds");
  EXPECT_EQ(InvalidArgumentMessage([&] {
              DqnBatch(Builtins(), config, {1, 2, 1}, Device::kCpu);
            }),
            "DqnBatch: a seed appears twice");
  // Two agents whose replay memories take 70% of the free memory each (one would fit).
  const int64_t per_transition = 8 * 4 + 13;  // CartPole: 4 floats per observation (no priorities here)
  DqnConfig big = Config({{"prioritized_replay", ParseTomlValue("false", "t")}});
  big.buffer_size = static_cast<int64_t>(0.7 * static_cast<double>(AvailableBytes(Device::kCpu)) /
                                         static_cast<double>(per_transition));
  const std::string memory = InvalidArgumentMessage([&] { DqnBatch(Builtins(), big, {1, 2}, Device::kCpu); });
  EXPECT_EQ(memory.rfind("2 agents' replay memories need 2 x ", 0), 0u) << memory;
  EXPECT_NE(memory.find("transitions of 4 floats per observation, 8 envs)"), std::string::npos) << memory;
  config.max_grad_norm = 10.0;
  EXPECT_NE(InvalidArgumentMessage([&] {
              DqnBatch(Builtins(), config, {1, 2}, Device::kCpu);
            }).find("clipping"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Devices, DqnBatchTest, ::testing::ValuesIn(nn::testing::AllDevices()),
                         nn::testing::DeviceParamName);

}  // namespace
}  // namespace cugym::agent
