// A DQN agent of K lanes (agents/off_policy/dqn.h): lane k's network after T iterations is, on the CPU, bit
// for bit that of the agent of one lane with seed k's seed trained T iterations alone: the shipped
// CartPole config (prioritized replay, a dueling head, Polyak targets), and Double DQN with 3-step
// returns and ez-greedy holds. On CUDA the same bits where cuBLAS's batched GEMMs give the single
// GEMM's at the learner's shapes, else the schedule and a few updates within rounding
// (tests/agents/solo_claim.h says why, and each test prints which case it was).
#include "agents/common/algorithm.h"
#include "agents/off_policy/dqn.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agents/common/train_config.h"
#include "agents/run/config_source.h"
#include "nn/checkpoint.h"
#include "tests/agents/agent_test_util.h"
#include "tests/agents/solo_claim.h"
#include "tests/core/test_util.h"
#include "tests/gpu_skip.h"
#include "tests/nn/nn_test_util.h"

namespace cugym::agent {
namespace {

using testing::Builtins;
using testing::ScratchDir;
using testing::SoloClaim;

// The shipped CartPole config, short: 3000 env steps (375 iterations, 1,000 before learning),
// 10-episode evaluations only when called (no early stop), no log rows in between.
TrainConfig Config(TomlTable keys) {
  TrainConfigSource source;
  source.env_id = "CartPole-v1";
  keys["total_steps"] = ParseTomlValue(testing::kSanitizerBuild ? "2000" : "3000", "t");
  keys["eval_episodes"] = ParseTomlValue("10", "t");
  keys["eval_interval"] = ParseTomlValue("1000000", "t");
  keys["log_interval"] = ParseTomlValue("1000000", "t");
  keys["stop_at_threshold"] = ParseTomlValue("false", "t");
  source.overrides = keys;
  std::ostringstream notes;
  return ResolveTrainConfig(Builtins(), source, notes);
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a DqnAgent with `seed` gives after training alone: its model file's bytes and parameters,
// its second evaluation, and a metrics row's episode figures and last update.
struct Solo {
  std::string model;
  std::vector<float> parameters;
  EvalResult eval;
  MetricsRow progress;
};

Solo TrainSolo(TrainConfig config, uint64_t seed, Device device, const std::string& path) {
  config.seed = seed;
  testing::SoloRun<DqnAgent> agent(Builtins(), config, device);
  Solo solo;
  agent.Train([&](const MetricsRow& p) { solo.progress = p; }, [] { return false; }, [] {});
  agent.SaveModel(path);
  solo.model = Bytes(path);
  solo.parameters = nn::ToHost(agent->learner().online().parameters());
  solo.eval = agent.Evaluate(2);
  return solo;
}

// A resumed run's model file against its uninterrupted solo run's: the same bytes where the claim
// is bits (the CPU always), the same parameters within rounding otherwise.
void ExpectSoloModel(const std::string& path, const Solo& solo, SoloClaim claim, Device device) {
  if (claim == SoloClaim::kBits) {
    EXPECT_EQ(Bytes(path), solo.model) << "the uninterrupted solo run's model file";
    return;
  }
  nn::Mlp net(nn::MakeBackend(device), nn::ReadMlpLayerSizes(path), nn::MlpOptions{});
  nn::LoadMlp(path, net);
  EXPECT_LT(nn::testing::NormwiseError(nn::ToHost(net.parameters()), solo.parameters), testing::kRoundingTolerance);
}

// The config a test of `seeds` as the lanes of one agent runs and what it may claim against their
// solo runs (tests/agents/solo_claim.h, printed): bits and `full`, or rounding and its first
// learning iterations. `rounding` asks for the second case whatever the check finds (bits are
// within it).
struct Claimed {
  TrainConfig config;
  SoloClaim claim;
};
Claimed Claim(const TrainConfig& full, const std::vector<uint64_t>& seeds, Device device, bool rounding = false) {
  const DqnAgent probe(Builtins(), full, device, seeds);
  const SoloClaim claim = rounding ? SoloClaim::kRounding : testing::ClaimFor(probe.learner().online(), full);
  return {testing::ForClaim(full, claim), claim};
}

class DqnLanesTest : public ::testing::TestWithParam<Device> {};

// Each lane of an agent against its solo run: the bits where the claim is bits, else the schedule
// exactly and a few updates within rounding (rounding = true: that case on any device).
void CheckEachLaneAgainstItsSoloRun(Device device, bool rounding) {
  const ScratchDir scratch("cugym_dqn_batch");
  const std::vector<uint64_t> seeds = {3, 11, 42};
  const std::vector<TomlTable> variants = {
      {},  // the shipped config
      {{"double_dqn", ParseTomlValue("true", "t")},
       {"n_step", ParseTomlValue("3", "t")},
       {"prioritized_replay", ParseTomlValue("false", "t")},
       {"dueling", ParseTomlValue("false", "t")},
       {"exploration_hold_mu", ParseTomlValue("2.0", "t")}},
      // LayerNorms and gradients clipped by each lane's own norm
      {{"layer_norm", ParseTomlValue("true", "t")}, {"max_grad_norm", ParseTomlValue("0.5", "t")}}};
  // The shipped config once more through the whole-iteration graph's schedule (on the CPU the
  // "graph" calls the work again; on CUDA it is the path taken anyway).
  for (std::size_t v = 0; v <= variants.size(); ++v) {
    SCOPED_TRACE(::testing::Message() << "variant " << v);
    const bool graph = v == variants.size();
    const auto [config, claim] = Claim(Config(variants[graph ? 0 : v]), seeds, device, rounding);
    DqnAgent batch(Builtins(), config, device, seeds);
    batch.set_iteration_graph_on_cpu(graph);
    while (batch.global_step() < config.total_steps) batch.Iterate();
    EXPECT_EQ(batch.replays_iteration_graph(), graph || device == Device::kCuda);
    for (int k = 0; k < batch.lanes(); ++k) {
      SCOPED_TRACE(::testing::Message() << "seed " << seeds[k]);
      const Solo solo = TrainSolo(config, seeds[k], device, (scratch / ("solo_" + std::to_string(k))).string());
      // A network of one on the batch's back end (CopyReplicaTo wants the same one).
      nn::MlpOptions shape;
      shape.conv = batch.learner().online().conv();
      shape.layer_norm = batch.learner().online().layer_norm();
      nn::Mlp mine(batch.learner().online().shared_backend(), batch.learner().online().layer_sizes(), shape);
      batch.learner().online().CopyReplicaTo(k, mine);
      const std::vector<float> got = nn::ToHost(mine.parameters());
      const MetricsRow progress = batch.Progress(k, 1.0, config.total_steps, LoopState{0.0, 0.0});
      EXPECT_EQ(progress.global_step, solo.progress.global_step);
      EXPECT_EQ(progress.episodes, solo.progress.episodes) << "episodes ended and reset alike";
      EXPECT_GT(progress.episodes, 10);
      const EvalResult eval = batch.Evaluate(k, 2);
      EXPECT_EQ(eval.episodes, solo.eval.episodes);
      if (claim == SoloClaim::kBits) {
        EXPECT_EQ(got, solo.parameters);
        const std::string path = (scratch / ("batch_" + std::to_string(k))).string();
        batch.SaveModel(k, path);
        EXPECT_EQ(Bytes(path), solo.model) << "the model file of the solo run";
        EXPECT_EQ(progress.Get("td_loss"), solo.progress.Get("td_loss"));
        EXPECT_EQ(progress.Get("q_values"), solo.progress.Get("q_values"));
        EXPECT_EQ(progress.mean_return_100, solo.progress.mean_return_100);
        EXPECT_EQ(eval.mean_return, solo.eval.mean_return);
        EXPECT_EQ(eval.std_return, solo.eval.std_return);
      } else {
        EXPECT_LT(nn::testing::NormwiseError(got, solo.parameters), testing::kRoundingTolerance);
      }
    }
  }
}

TEST_P(DqnLanesTest, EachAgentTrainsAsItsSoloRun) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  CheckEachLaneAgainstItsSoloRun(GetParam(), false);
}

// The comparison a device whose batched GEMMs round otherwise than its single ones gets, here on
// every device (so that it runs, and must catch a fault, on the CPU too).
TEST_P(DqnLanesTest, FirstLearningIterationsAgreeWithTheSoloRunsWithinRounding) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  CheckEachLaneAgainstItsSoloRun(GetParam(), true);
}

// Agent k's checkpoint half-way is a solo run's: a DqnAgent that loads it and trains on ends with
// the model file of the solo run that was never interrupted.
TEST_P(DqnLanesTest, AnAgentsCheckpointResumesAsItsSoloRun) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const ScratchDir scratch("cugym_dqn_batch_checkpoint");
  const std::vector<uint64_t> seeds = {5, 9};
  for (const TomlTable& keys : {TomlTable{}, TomlTable{{"exploration_hold_mu", ParseTomlValue("2.0", "t")}}}) {
    const auto [config, claim] = Claim(Config(keys), seeds, device);
    DqnAgent batch(Builtins(), config, device, seeds);
    while (batch.global_step() < config.total_steps / 2) batch.Iterate();
    for (int k = 0; k < batch.lanes(); ++k) {
      SCOPED_TRACE(::testing::Message() << "seed " << seeds[k]);
      const std::string checkpoint = (scratch / ("agent_" + std::to_string(k) + ".safetensors")).string();
      batch.SaveCheckpoint(k, checkpoint, LoopState{0.0, std::numeric_limits<double>::quiet_NaN()});
      TrainConfig one = config;
      one.seed = seeds[k];
      testing::SoloRun<DqnAgent> resumed(Builtins(), one, device);
      resumed.LoadCheckpoint(checkpoint);
      EXPECT_EQ(resumed.global_step(), batch.global_step());
      resumed.Train([](const MetricsRow&) {}, [] { return false; }, [] {});
      const std::string path = (scratch / ("resumed_" + std::to_string(k))).string();
      resumed.SaveModel(path);
      ExpectSoloModel(path, TrainSolo(config, seeds[k], device, (scratch / ("solo_" + std::to_string(k))).string()),
                      claim, device);
    }
  }
}

// Checkpoints without the replay memory (save_replay off): a batch loaded from them refills its
// memories first, as a DqnAgent resumed from the same file does, to the same model.
TEST_P(DqnLanesTest, ABatchResumesWithoutItsReplayMemoriesAsItsAgentsWould) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const ScratchDir scratch("cugym_dqn_batch_no_replay");
  const std::vector<uint64_t> seeds = {4, 6};
  const auto [config, claim] = Claim(Config({{"save_replay", ParseTomlValue("false", "t")}}), seeds, device);
  std::vector<std::string> paths;
  {
    DqnAgent first(Builtins(), config, device, seeds);
    while (first.global_step() < config.total_steps / 2) first.Iterate();
    for (int k = 0; k < first.lanes(); ++k) {
      paths.push_back((scratch / ("agent_" + std::to_string(k) + ".safetensors")).string());
      first.SaveCheckpoint(k, paths.back(), LoopState{0.0, 0.0});
    }
  }
  DqnAgent resumed(Builtins(), config, device, seeds);
  resumed.LoadCheckpoints(paths);
  while (resumed.global_step() < config.total_steps) resumed.Iterate();
  for (int k = 0; k < resumed.lanes(); ++k) {
    SCOPED_TRACE(::testing::Message() << "seed " << seeds[k]);
    TrainConfig one = config;
    one.seed = seeds[k];
    testing::SoloRun<DqnAgent> alone(Builtins(), one, device);
    alone.LoadCheckpoint(paths[k]);
    alone.Train([](const MetricsRow&) {}, [] { return false; }, [] {});
    Solo solo;
    const std::string solo_path = (scratch / ("alone_" + std::to_string(k))).string();
    alone.SaveModel(solo_path);
    solo.model = Bytes(solo_path);
    nn::Mlp net(nn::MakeBackend(device), nn::ReadMlpLayerSizes(solo_path), nn::MlpOptions{});
    nn::LoadMlp(solo_path, net);
    solo.parameters = nn::ToHost(net.parameters());
    const std::string path = (scratch / ("resumed_" + std::to_string(k))).string();
    resumed.SaveModel(k, path);
    ExpectSoloModel(path, solo, claim, device);
  }
}

// A batch stopped half-way and loaded from its agents' checkpoints goes on to each agent's
// uninterrupted solo model; checkpoints of different steps are refused.
TEST_P(DqnLanesTest, ABatchResumesFromItsAgentsCheckpoints) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const ScratchDir scratch("cugym_dqn_batch_resume");
  const std::vector<uint64_t> seeds = {5, 9};
  const auto [config, claim] = Claim(Config({{"exploration_hold_mu", ParseTomlValue("2.0", "t")}}), seeds, device);
  std::vector<std::string> paths;
  {
    DqnAgent first(Builtins(), config, device, seeds);
    while (first.global_step() < config.total_steps / 2) first.Iterate();
    for (int k = 0; k < first.lanes(); ++k) {
      paths.push_back((scratch / ("agent_" + std::to_string(k) + ".safetensors")).string());
      first.SaveCheckpoint(k, paths.back(), LoopState{1.5 + k, 100.0 + k});
    }
    first.Iterate();
    const std::string later = (scratch / "later.safetensors").string();
    first.SaveCheckpoint(1, later, LoopState{0.0, 0.0});
    DqnAgent mixed(Builtins(), config, device, seeds);
    EXPECT_NE(cugym::testing::InvalidArgumentMessage([&] {
                mixed.LoadCheckpoints({paths[0], later});
              }).find("not of the same step"),
              std::string::npos);
  }
  DqnAgent resumed(Builtins(), config, device, seeds);
  const std::vector<LoopState> loops = resumed.LoadCheckpoints(paths);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[1].wall_time, 2.5);
  EXPECT_EQ(loops[1].last_eval_return, 101.0);
  while (resumed.global_step() < config.total_steps) resumed.Iterate();
  for (int k = 0; k < resumed.lanes(); ++k) {
    SCOPED_TRACE(::testing::Message() << "seed " << seeds[k]);
    const std::string path = (scratch / ("resumed_" + std::to_string(k))).string();
    resumed.SaveModel(k, path);
    ExpectSoloModel(path, TrainSolo(config, seeds[k], device, (scratch / ("solo_" + std::to_string(k))).string()),
                    claim, device);
  }
}

// An agent shrunk to some of its lanes (Agent::Keep, in another order) goes on as the whole
// batch does for them: the same checkpoints (networks, Adam, replay lanes with their priorities,
// envs, holds, episodes, counters) on the CPU, byte for byte, the same metrics rows and
// evaluations; on CUDA the same where the batched GEMMs give the single GEMM's bits at both lane
// counts, else the schedule and the networks within rounding after a few learning iterations.
TEST_P(DqnLanesTest, AShrunkBatchGoesOnAsTheWholeOne) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const ScratchDir scratch("cugym_dqn_batch_keep");
  const std::vector<uint64_t> seeds = {3, 11, 42};
  const std::vector<int> keep = {2, 0};
  for (const TomlTable& keys : {TomlTable{}, TomlTable{{"exploration_hold_mu", ParseTomlValue("2.0", "t")},
                                                       {"double_dqn", ParseTomlValue("true", "t")}}}) {
    // Bits only where both lane counts (3, and 2 once shrunk) give a network of one's bits.
    const Claimed three = Claim(Config(keys), seeds, device);
    const Claimed two = Claim(Config(keys), {seeds[keep[0]], seeds[keep[1]]}, device);
    const SoloClaim claim = three.claim == SoloClaim::kBits ? two.claim : SoloClaim::kRounding;
    const TrainConfig config = testing::ForClaim(Config(keys), claim);
    DqnAgent whole(Builtins(), config, device, seeds);
    while (whole.global_step() < config.total_steps / 2) whole.Iterate();
    for (int k = 0; k < whole.lanes(); ++k)
      whole.Progress(k, 1.0, whole.global_step(), LoopState{0.0, 0.0});  // rows read
    const std::unique_ptr<Agent> kept = whole.Keep(keep);
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(kept->seeds(), (std::vector<uint64_t>{42, 3}));
    EXPECT_EQ(kept->global_step(), whole.global_step());
    while (whole.global_step() < config.total_steps) {
      whole.Iterate();
      kept->Iterate();
    }
    for (std::size_t i = 0; i < keep.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "seed " << seeds[keep[i]]);
      const int mine = static_cast<int>(i), theirs = keep[i];
      const MetricsRow got = kept->Progress(mine, 1.0, 100, LoopState{0.0, 0.0});
      const MetricsRow want = whole.Progress(theirs, 1.0, 100, LoopState{0.0, 0.0});
      EXPECT_EQ(got.episodes, want.episodes);
      EXPECT_EQ(got.global_step, want.global_step);
      if (claim == SoloClaim::kBits) {
        EXPECT_EQ(got.Get("td_loss"), want.Get("td_loss"));
        EXPECT_EQ(got.Get("q_values"), want.Get("q_values"));
        EXPECT_EQ(got.mean_return_100, want.mean_return_100) << "episodes read before and after alike";
        EXPECT_EQ(kept->Evaluate(mine, 1).mean_return, whole.Evaluate(theirs, 1).mean_return);
        const std::string a = (scratch / "kept.safetensors").string(), b = (scratch / "whole.safetensors").string();
        kept->SaveCheckpoint(mine, a, LoopState{1.0, 2.0});
        whole.SaveCheckpoint(theirs, b, LoopState{1.0, 2.0});
        EXPECT_EQ(Bytes(a), Bytes(b)) << "the whole batch's checkpoint of this agent";
      } else {
        Solo solo;
        const std::string path = (scratch / "whole_model").string();
        whole.SaveModel(theirs, path);
        nn::Mlp net(nn::MakeBackend(device), nn::ReadMlpLayerSizes(path), nn::MlpOptions{});
        nn::LoadMlp(path, net);
        solo.parameters = nn::ToHost(net.parameters());
        kept->SaveModel(mine, (scratch / "kept_model").string());
        ExpectSoloModel((scratch / "kept_model").string(), solo, claim, device);
      }
    }
  }
  DqnAgent batch(Builtins(), Config({}), device, seeds);
  EXPECT_THROW(batch.Keep({0, 3}), std::out_of_range);
  EXPECT_EQ(cugym::testing::InvalidArgumentMessage([&] {
              batch.Keep({1, 1});
            }),
            "a seed appears twice among an agent's lanes");
}

TEST(DqnLanes, RefuseWhatTheyCannotBatch) {
  using cugym::testing::InvalidArgumentMessage;
  TrainConfig config = Config({});
  EXPECT_EQ(DqnAgent(Builtins(), config, Device::kCpu, {}).seeds(), std::vector<uint64_t>{config.seed})
      << "no seeds: one lane of the config's";
  EXPECT_EQ(InvalidArgumentMessage([&] {
              DqnAgent(Builtins(), config, Device::kCpu, {1, 2, 1});
            }),
            "a seed appears twice among an agent's lanes");
  // Two lanes whose replay memories take 70% of the free memory each (one would fit).
  const int64_t per_transition = 8 * 4 + 13;  // CartPole: 4 floats per observation (no priorities here)
  TrainConfig big = Config({{"prioritized_replay", ParseTomlValue("false", "t")}});
  big.buffer_size = static_cast<int64_t>(0.7 * static_cast<double>(AvailableBytes(Device::kCpu)) /
                                         static_cast<double>(per_transition));
  const std::string memory = InvalidArgumentMessage([&] { DqnAgent(Builtins(), big, Device::kCpu, {1, 2}); });
  EXPECT_EQ(memory.rfind("2 lanes' replay memories need 2 x ", 0), 0u) << memory;
  EXPECT_NE(memory.find("transitions of 4 floats per observation, 8 envs; lower buffer_size)"), std::string::npos)
      << memory;
  // PQN takes lanes as well (tests/agents/test_pqn_lanes.cpp).
  config.algo = "pqn";
  config.prioritized_replay = false;
  config.eval_episodes = 0;
  std::unique_ptr<Agent> two = MakeAgent(Builtins(), config, Device::kCpu, {1, 2});
  two->Iterate();
  EXPECT_EQ(two->lanes(), 2);
  EXPECT_EQ(two->global_step(), config.rollout_size());
}

INSTANTIATE_TEST_SUITE_P(Devices, DqnLanesTest, ::testing::ValuesIn(nn::testing::AllDevices()),
                         nn::testing::DeviceParamName);

}  // namespace
}  // namespace cugym::agent
