// A PQN agent of K lanes (agents/on_policy/pqn.h): lane k's network, metrics row, evaluation and checkpoint
// after T iterations are, on the CPU, bit for bit those of the agent of one lane with seed k's seed
// (its minibatches drawn from its own rollout by its own permutation, its next values taken in the
// solo run's chunks); a batch resumes from its lanes' checkpoints and shrinks to some of its lanes
// as the whole batch goes on. On CUDA, where batched GEMMs may round otherwise than single ones
// (tests/agents/solo_claim.h), the first iterations within rounding.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "agents/common/train_config.h"
#include "agents/on_policy/pqn.h"
#include "agents/on_policy/rollout_ops.h"
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

// A small CartPole PQN: rollouts of 8 envs x 16 steps, 4 minibatches of 32, a forward of 32 rows
// at most per lane, so the next values take 4 chunks per rollout.
TrainConfig Small(bool holds) {
  TrainConfig config;
  config.algo = "pqn";
  config.num_envs = 8;
  config.num_steps = 16;
  config.num_epochs = 2;
  config.num_minibatches = 4;
  config.total_steps = 2048;
  config.hidden_sizes = {32, 32};
  config.layer_norm = true;
  config.optimizer = "radam";
  config.anneal_lr = true;
  config.max_grad_norm = 1.0;
  config.exploration_fraction = 0.3;
  config.eval_episodes = 4;
  if (holds) config.exploration_hold_mu = 2.0;
  return config;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<float> Parameters(const std::string& model, Device device) {
  nn::Mlp net(nn::MakeBackend(device), nn::ReadMlpLayerSizes(model), nn::MlpOptions{});
  nn::LoadMlp(model, net);
  return nn::ToHost(net.parameters());
}

void IterateTo(Agent& agent, int64_t step) {
  while (agent.global_step() < step) agent.Iterate();
}

// Lane k of `batch` against a solo agent of its seed at the same step: model file, metrics row,
// evaluation and checkpoint, the same bytes on the CPU; the parameters within rounding on CUDA.
void ExpectLaneIsSolo(Agent& batch, int k, Agent& solo, const ScratchDir& scratch) {
  SCOPED_TRACE(::testing::Message() << "seed " << batch.seeds()[k]);
  const std::string mine = (scratch / "lane.safetensors").string(), theirs = (scratch / "solo.safetensors").string();
  batch.SaveModel(k, mine);
  solo.SaveModel(0, theirs);
  const MetricsRow got = batch.Progress(k, 1.0, 100, LoopState{1.0, 2.0});
  const MetricsRow want = solo.Progress(0, 1.0, 100, LoopState{1.0, 2.0});
  EXPECT_EQ(got.global_step, want.global_step);
  EXPECT_EQ(got.episodes, want.episodes) << "episodes ended and reset alike";
  EXPECT_EQ(Bytes(mine), Bytes(theirs)) << "the solo run's model file";
  EXPECT_EQ(got.Get("td_loss"), want.Get("td_loss"));
  EXPECT_EQ(got.mean_return_100, want.mean_return_100);
  EXPECT_EQ(batch.Evaluate(k, 1).mean_return, solo.Evaluate(0, 1).mean_return);
  batch.SaveCheckpoint(k, mine, LoopState{1.0, 2.0});
  solo.SaveCheckpoint(0, theirs, LoopState{1.0, 2.0});
  EXPECT_EQ(Bytes(mine), Bytes(theirs)) << "the solo run's checkpoint";
}

TEST(PqnLanes, EachLaneTrainsAsItsSoloRun) {
  const ScratchDir scratch("cugym_pqn_lanes");
  const std::vector<uint64_t> seeds = {3, 11, 42};
  for (const bool holds : {false, true}) {
    for (const bool graph : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "holds " << holds << ", graph " << graph);
      const TrainConfig config = Small(holds);
      PqnAgent batch(Builtins(), config, Device::kCpu, seeds);
      batch.set_iteration_graph_on_cpu(graph);
      IterateTo(batch, config.total_steps);
      EXPECT_EQ(batch.replays_iteration_graph(), graph);
      for (int k = 0; k < batch.lanes(); ++k) {
        PqnAgent solo(Builtins(), config, Device::kCpu, {seeds[k]});
        IterateTo(solo, config.total_steps);
        ExpectLaneIsSolo(batch, k, solo, scratch);
      }
    }
  }
}

// Half way, every lane's checkpoint; a new batch of the same seeds loads them and ends where the
// uninterrupted solo runs end. A batch of checkpoints of different steps is refused.
TEST(PqnLanes, ABatchResumesFromItsLanesCheckpoints) {
  const ScratchDir scratch("cugym_pqn_lanes_resume");
  const std::vector<uint64_t> seeds = {5, 6};
  const TrainConfig config = Small(true);
  std::vector<std::string> paths;
  {
    PqnAgent first(Builtins(), config, Device::kCpu, seeds);
    IterateTo(first, config.total_steps / 2);
    for (int k = 0; k < first.lanes(); ++k) {
      paths.push_back((scratch / ("lane_" + std::to_string(k) + ".safetensors")).string());
      first.SaveCheckpoint(k, paths.back(), LoopState{3.0, 4.0});
    }
  }
  PqnAgent resumed(Builtins(), config, Device::kCpu, seeds);
  const std::vector<LoopState> loops = resumed.LoadCheckpoints(paths);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[1].wall_time, 3.0);
  EXPECT_EQ(resumed.global_step(), config.total_steps / 2);
  IterateTo(resumed, config.total_steps);
  for (int k = 0; k < resumed.lanes(); ++k) {
    PqnAgent solo(Builtins(), config, Device::kCpu, {seeds[k]});
    IterateTo(solo, config.total_steps);
    ExpectLaneIsSolo(resumed, k, solo, scratch);
  }
  // Lane 1's checkpoint from one iteration further on.
  PqnAgent later(Builtins(), config, Device::kCpu, {seeds[1]});
  IterateTo(later, config.total_steps / 2 + config.rollout_size());
  later.SaveCheckpoint(0, paths[1], LoopState{});
  PqnAgent refused(Builtins(), config, Device::kCpu, seeds);
  const std::string message = cugym::testing::InvalidArgumentMessage([&] { refused.LoadCheckpoints(paths); });
  EXPECT_NE(message.find("not of the same step as"), std::string::npos) << message;
}

// Lanes 2 and 0 kept half way go on as they would have in the whole batch.
TEST(PqnLanes, AShrunkBatchGoesOnAsTheWholeOne) {
  const ScratchDir scratch("cugym_pqn_lanes_keep");
  const std::vector<uint64_t> seeds = {3, 11, 42};
  const TrainConfig config = Small(true);
  PqnAgent whole(Builtins(), config, Device::kCpu, seeds);
  IterateTo(whole, config.total_steps / 2);
  for (int k = 0; k < whole.lanes(); ++k) whole.Progress(k, 1.0, 100, LoopState{});  // rows read
  const std::unique_ptr<Agent> kept = whole.Keep({2, 0});
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->seeds(), (std::vector<uint64_t>{42, 3}));
  IterateTo(whole, config.total_steps);
  IterateTo(*kept, config.total_steps);
  const std::vector<int> theirs = {2, 0};
  for (int mine = 0; mine < 2; ++mine) {
    const std::string a = (scratch / "kept").string(), b = (scratch / "whole").string();
    kept->SaveCheckpoint(mine, a, LoopState{1.0, 2.0});
    whole.SaveCheckpoint(theirs[mine], b, LoopState{1.0, 2.0});
    EXPECT_EQ(Bytes(a), Bytes(b)) << "the whole batch's checkpoint of seed " << seeds[theirs[mine]];
    EXPECT_EQ(kept->Progress(mine, 1.0, 100, LoopState{}).mean_return_100,
              whole.Progress(theirs[mine], 1.0, 100, LoopState{}).mean_return_100);
  }
  EXPECT_THROW(whole.Keep({0, 3}), std::out_of_range);
}

// The lane ops on both back ends against each lane's own rollout (the solo run's layout), laid out
// by hand: every lane's minibatch rows are those its solo rollout gives with its seed, and the
// staged next observations and their values go to and come from the solo run's rows.
class PqnLaneOps : public ::testing::TestWithParam<Device> {};

TEST_P(PqnLaneOps, EachLaneGathersAndStagesItsSoloRows) {
  CUGYM_SKIP_WITHOUT_GPU(GetParam());
  const Device device = GetParam();
  const int64_t lanes = 3, n = 4, steps = 5, obs_dim = 2, envs = lanes * n, rows = steps * n;
  const std::vector<uint64_t> seeds = {7, 8, 9};
  // Observation (t, lane, i) holds {100 t + 10 lane + i, -that}; actions and targets likewise.
  std::vector<float> obs(steps * envs * obs_dim), targets(steps * envs);
  std::vector<int32_t> actions(steps * envs);
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t e = 0; e < envs; ++e) {
      const float v = static_cast<float>(100 * t + 10 * (e / n) + e % n);
      obs[(t * envs + e) * obs_dim] = v;
      obs[(t * envs + e) * obs_dim + 1] = -v;
      targets[t * envs + e] = v / 2;
      actions[t * envs + e] = static_cast<int32_t>(v);
    }
  auto upload = [&](const auto& host) {
    Buffer<typename std::decay_t<decltype(host)>::value_type> b(device, host.size());
    b.FromHost(host.data(), host.size());
    return b;
  };
  Buffer<float> obs_d = upload(obs), next_d = upload(obs), targets_d = upload(targets);
  Buffer<int32_t> actions_d = upload(actions);
  Buffer<float> values_d(device, steps * envs);
  values_d.Zero();
  RolloutArrays r;
  r.obs = obs_d.data();
  r.next_obs = next_d.data();
  r.actions = actions_d.data();
  r.targets = targets_d.data();
  r.next_values = values_d.data();
  r.steps = steps;
  r.envs = envs;
  r.obs_dim = obs_dim;
  r.lanes = lanes;
  const StepCounters at{6, 6 * n};
  Buffer<StepCounters> counters = upload(std::vector<StepCounters>{at});
  Buffer<uint64_t> seeds_d = upload(seeds);
  const int64_t size = 6, first = 5;
  Buffer<float> batch_obs(device, lanes * size * obs_dim), batch_targets(device, lanes * size);
  Buffer<int32_t> batch_actions(device, lanes * size);
  auto rollout_ops = MakeOps<RolloutOps>(device, nullptr);
  GatherColumns columns;
  columns.Add(r.obs, batch_obs.data(), obs_dim);
  columns.Add(r.actions, batch_actions.data(), 1);
  columns.Add(r.targets, batch_targets.data(), 1);
  rollout_ops->GatherMinibatch(r, columns, first, size, counters.data(), seeds_d.data(), 1);
  const int64_t count = 7;
  Buffer<float> staged(device, lanes * count * obs_dim), staged_values(device, lanes * count);
  rollout_ops->StageNextObs(r, first, count, staged.data());
  std::vector<float> values(lanes * count);
  for (std::size_t e = 0; e < values.size(); ++e) values[e] = 0.5f + static_cast<float>(e);
  staged_values.FromHost(values.data(), values.size());
  rollout_ops->UnstageValues(r, first, count, staged_values.data());

  const std::vector<float> got_obs = batch_obs.ToHost(), got_staged = staged.ToHost(), got_values = values_d.ToHost();
  const std::vector<int32_t> got_actions = batch_actions.ToHost();
  for (int64_t l = 0; l < lanes; ++l) {
    SCOPED_TRACE(::testing::Message() << "lane " << l);
    // Lane l's own rollout row q = t n + i is (t, l, i).
    auto value_of = [&](int64_t q) { return static_cast<float>(100 * (q / n) + 10 * l + q % n); };
    const uint32_t key = EpochKey(seeds[l], &at, 1);
    for (int64_t j = 0; j < size; ++j) {
      const int64_t q = ShuffledIndex(static_cast<uint32_t>(first + j), static_cast<uint32_t>(rows), key);
      EXPECT_EQ(got_obs[(l * size + j) * obs_dim], value_of(q)) << j;
      EXPECT_EQ(got_obs[(l * size + j) * obs_dim + 1], -value_of(q)) << j;
      EXPECT_EQ(got_actions[l * size + j], static_cast<int32_t>(value_of(q))) << j;
    }
    for (int64_t j = 0; j < count; ++j) {
      const int64_t q = first + j;
      EXPECT_EQ(got_staged[(l * count + j) * obs_dim], value_of(q)) << j;
      EXPECT_EQ(got_values[(q / n) * envs + l * n + q % n], values[l * count + j]) << j;
    }
  }
  int64_t valued = 0;
  for (float v : got_values) valued += v != 0.0f;
  EXPECT_EQ(valued, lanes * count) << "no other row valued";
}

INSTANTIATE_TEST_SUITE_P(Devices, PqnLaneOps, ::testing::ValuesIn(nn::testing::AllDevices()),
                         nn::testing::DeviceParamName);

// CUDA: the first iterations of every lane within rounding of its solo run (solo_claim.h).
TEST(PqnLanesCuda, FirstIterationsAgreeWithTheSoloRunsWithinRounding) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir scratch("cugym_pqn_lanes_cuda");
  const std::vector<uint64_t> seeds = {3, 11, 42};
  TrainConfig config = Small(false);
  config.total_steps = 3 * config.rollout_size();
  PqnAgent batch(Builtins(), config, Device::kCuda, seeds);
  IterateTo(batch, config.total_steps);
  for (int k = 0; k < batch.lanes(); ++k) {
    PqnAgent solo(Builtins(), config, Device::kCuda, {seeds[k]});
    IterateTo(solo, config.total_steps);
    const std::string mine = (scratch / "lane").string(), theirs = (scratch / "solo").string();
    batch.SaveModel(k, mine);
    solo.SaveModel(0, theirs);
    EXPECT_LT(nn::testing::NormwiseError(Parameters(mine, Device::kCuda), Parameters(theirs, Device::kCuda)),
              testing::kRoundingTolerance)
        << "seed " << seeds[k];
    EXPECT_EQ(batch.Progress(k, 1.0, 100, LoopState{}).episodes, solo.Progress(0, 1.0, 100, LoopState{}).episodes);
  }
}

}  // namespace
}  // namespace cugym::agent
