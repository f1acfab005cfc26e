// PQN: its config keys, the Q(lambda) targets and the minibatch permutation against hand-made
// cases, exact resumption, the whole-iteration graph's scheduling, checkpoints of the other
// algorithm refused, and a short CartPole run through RunTraining (run folder, evaluation).
#include "agents/on_policy/pqn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "agents/common/train_config.h"
#include "agents/off_policy/dqn.h"
#include "agents/run/config_source.h"
#include "agents/run/trainer.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"
#include "tests/agents/agent_test_util.h"
#include "tests/gpu_skip.h"

namespace cugym::agent {
namespace {

namespace fs = std::filesystem;

using testing::Builtins;
using testing::ConfigError;
using testing::ScratchDir;
using testing::SoloRun;

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(PqnConfig, BadKeysAndValuesNameTheKey) {
  EXPECT_EQ(ConfigError("algo = \"pqn\"\nnum_envs = 8\nnum_steps = 16\nnum_minibatches = 4"), "");
  EXPECT_EQ(ConfigError("algo = \"td3\""), "algo must be \"dqn\", \"pqn\", \"ppo\" or \"sac\", got \"td3\"");
  EXPECT_EQ(ConfigError("optimizer = \"sgd\""), "optimizer must be \"adam\" or \"radam\", got \"sgd\"");
  EXPECT_EQ(ConfigError("algo = \"pqn\"\nnum_envs = 8\nnum_steps = 10\nnum_minibatches = 3"),
            "num_minibatches must divide num_envs * num_steps (80), got 3");
  EXPECT_EQ(ConfigError("algo = \"pqn\"\nnum_envs = 8\nnum_steps = 16\nnum_minibatches = 4\nprioritized_replay = true"),
            "prioritized_replay needs a replay memory (algo = \"dqn\"), got true");
  EXPECT_EQ(ConfigError("algo = \"pqn\"\nnum_envs = 8\nnum_steps = 16\nnum_minibatches = 4\nn_step = 3"),
            "n_step must be 1 with algo = \"pqn\" (q_lambda sets how far its targets look), got 3");
  EXPECT_EQ(ConfigError("q_lambda = 1.5"), "q_lambda must be in [0, 1], got 1.5");
  EXPECT_EQ(ConfigError("num_epochs = 0"), "num_epochs must be in 1..1000, got 0");
  EXPECT_EQ(ConfigError("reward_scale = 0"), "reward_scale must be > 0, got 0");
  // The PQN keys are checked for DQN configs too, but their divisibility only matters to PQN.
  EXPECT_EQ(ConfigError("num_envs = 8\nnum_steps = 10\nnum_minibatches = 3"), "");

  TrainConfig c;
  c.Apply(
      ParseToml("algo = \"pqn\"\nnum_envs = 8\nnum_steps = 16\nnum_minibatches = 4\nnum_epochs = 2\n"
                "total_steps = 1000",
                "c.toml"));
  EXPECT_EQ(c.rollout_size(), 128);
  EXPECT_EQ(c.minibatch_size(), 32);
  EXPECT_EQ(c.PlannedUpdates(), 8 * 2 * 4) << "ceil(1000 / 128) rollouts of 2 epochs x 4 minibatches";
  TrainConfig again;
  again.Apply(ParseToml(c.ToToml(), "written.toml"));
  EXPECT_EQ(again.ToToml(), c.ToToml());
  EXPECT_TRUE(again.pqn());
}

TEST(PqnConfig, ShippedPqnConfigsAreFoundByAlgo) {
  for (const char* id : {"CartPole-v1", "Acrobot-v1", "MinAtar-Asterix-v1", "MinAtar-Breakout-v1", "MinAtar-Freeway-v1",
                         "MinAtar-Seaquest-v1", "MinAtar-SpaceInvaders-v1"}) {
    const ShippedConfig* pqn = FindShippedConfig(id, "pqn");
    ASSERT_NE(pqn, nullptr) << id;
    const std::string path = std::string(CUGYM_SOURCE_DIR) + "/" + pqn->path;
    EXPECT_EQ(std::string(pqn->toml), FileBytes(path)) << path << " changed without a rebuild";
    TrainConfig config;
    config.Apply(ParseToml(pqn->toml, pqn->path));
    config.Validate();
    EXPECT_TRUE(config.pqn()) << pqn->path;
    EXPECT_TRUE(config.layer_norm) << pqn->path;
    EXPECT_FALSE(FindShippedConfig(id) == pqn) << "DQN stays the default for " << id;
  }
  EXPECT_EQ(FindShippedConfig("MountainCar-v0", "pqn"), nullptr) << "PQN does not solve sparse MountainCar";

  // `cugym train --env CartPole-v1 --set algo=pqn`: the algorithm's own shipped config.
  TrainConfigSource source;
  source.env_id = "CartPole-v1";
  source.overrides["algo"] = ParseTomlValue("\"pqn\"", "--set");
  std::ostringstream notes;
  const TrainConfig resolved = ResolveTrainConfig(Builtins(), source, notes);
  EXPECT_TRUE(resolved.pqn());
  EXPECT_TRUE(resolved.layer_norm);
  EXPECT_NE(notes.str().find("configs/cartpole_pqn.toml"), std::string::npos) << notes.str();
  source.env_id = "MountainCar-v0";
  std::ostringstream none;
  EXPECT_TRUE(ResolveTrainConfig(Builtins(), source, none).pqn());
  EXPECT_NE(none.str().find("no tuned config ships for MountainCar-v0 with algo = pqn"), std::string::npos)
      << none.str();
}

// A rollout of `steps` x `envs` on the host (no obs), for the target recursion alone.
struct HostRollout {
  std::vector<float> rewards, values, targets;
  std::vector<uint8_t> terminated, truncated;
  RolloutArrays arrays(int64_t steps, int64_t envs) {
    RolloutArrays r;
    r.rewards = rewards.data();
    r.next_values = values.data();
    r.targets = targets.data();
    r.terminated = terminated.data();
    r.truncated = truncated.data();
    r.steps = steps;
    r.envs = envs;
    return r;
  }
};

TEST(QLambda, TargetsFollowTheRecursion) {
  // 5 steps of 2 envs (step-major). Env 0 terminates at t = 1 and is truncated at t = 3; env 1
  // runs through and terminates at the last step.
  const int64_t T = 5, N = 2;
  HostRollout h;
  h.rewards = {1, 2, 1, 0, 3, 1, 0, 2, 1, 5};
  h.values = {10, 20, 11, 21, 12, 22, 13, 23, 14, 24};
  h.terminated = {0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  h.truncated = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  h.targets.assign(T * N, 0.0f);
  const double g = 0.9, l = 0.5, scale = 2.0;
  auto cpu = MakeOps<RolloutOps>(Device::kCpu, nullptr);
  cpu->QLambdaTargets(h.arrays(T, N), g, l, scale);
  auto target = [&](int64_t t, int64_t i) { return h.targets[t * N + i]; };
  // Env 0, backwards: t = 4 ends the rollout (bootstrap from its value), t = 3 is truncated
  // (bootstrap from the final observation's value), t = 2 continues, t = 1 terminated, t = 0.
  const double g4 = 2 * 1 + g * 14;
  const double g3 = 2 * 0 + g * 13;
  const double g2 = 2 * 3 + g * (l * g3 + (1 - l) * 12);
  const double g1 = 2 * 1;
  const double g0 = 2 * 1 + g * (l * g1 + (1 - l) * 10);
  EXPECT_FLOAT_EQ(target(4, 0), static_cast<float>(g4));
  EXPECT_FLOAT_EQ(target(3, 0), static_cast<float>(g3));
  EXPECT_FLOAT_EQ(target(2, 0), static_cast<float>(g2));
  EXPECT_FLOAT_EQ(target(1, 0), static_cast<float>(g1));
  EXPECT_FLOAT_EQ(target(0, 0), static_cast<float>(g0));
  // Env 1: terminated at the last step, so no bootstrap there; lambda-returns before it.
  double gn = 2 * 5;
  EXPECT_FLOAT_EQ(target(4, 1), static_cast<float>(gn));
  const double rewards1[] = {2, 0, 1, 2}, values1[] = {20, 21, 22, 23};
  for (int64_t t = 3; t >= 0; --t) {
    gn = 2 * rewards1[t] + g * (l * gn + (1 - l) * values1[t]);
    EXPECT_FLOAT_EQ(target(t, 1), static_cast<float>(gn)) << "t = " << t;
  }
  // lambda 0 is one-step Q-learning; lambda 1 the Monte Carlo return (bootstrapped at the end).
  cpu->QLambdaTargets(h.arrays(T, N), g, 0.0, 1.0);
  EXPECT_FLOAT_EQ(target(0, 1), static_cast<float>(2 + g * 20));
  cpu->QLambdaTargets(h.arrays(T, N), g, 1.0, 1.0);
  EXPECT_FLOAT_EQ(target(2, 1), static_cast<float>(1 + g * (2 + g * 5)));
}

TEST(QLambda, ShuffledIndexIsAPermutation) {
  for (uint32_t size : {1u, 2u, 7u, 128u, 1000u, 2048u, 4097u}) {
    for (uint32_t key : {0u, 1u, 0xDEADBEEFu}) {
      std::set<uint32_t> seen;
      for (uint32_t j = 0; j < size; ++j) seen.insert(ShuffledIndex(j, size, key));
      EXPECT_EQ(seen.size(), size) << "size " << size << " key " << key;
      EXPECT_LT(*seen.rbegin(), size);
    }
  }
  int moved = 0, differ = 0;
  for (uint32_t j = 0; j < 2048; ++j) {
    moved += ShuffledIndex(j, 2048, 5) != j;
    differ += ShuffledIndex(j, 2048, 5) != ShuffledIndex(j, 2048, 6);
  }
  EXPECT_GT(moved, 2000) << "a shuffle, not the identity";
  EXPECT_GT(differ, 2000) << "each epoch's key gives its own order";
}

TrainConfig SmallPqn(uint64_t seed) {
  TrainConfig config;
  config.algo = "pqn";
  config.seed = seed;
  config.num_envs = 8;
  config.num_steps = 16;
  config.num_epochs = 2;
  config.num_minibatches = 4;
  config.total_steps = 3000;
  config.hidden_sizes = {32, 32};
  config.layer_norm = true;
  config.optimizer = "radam";
  config.anneal_lr = true;
  config.max_grad_norm = 10.0;
  config.exploration_fraction = 0.3;
  config.log_interval = 256;
  config.checkpoint_interval = 0;
  config.eval_episodes = 0;
  return config;
}

std::function<void(const MetricsRow&)> RowWriter(std::ostringstream& rows) {
  return [&rows](const MetricsRow& p) {
    rows << p.global_step << " " << p.episodic_return << " " << p.episodic_length << " " << p.Get("td_loss") << " "
         << p.Get("q_values") << " " << p.Get("epsilon") << " " << p.mean_return_100 << " " << p.episodes << "\n";
  };
}

std::string Rows(const TrainConfig& config, const fs::path& model, bool graph_on_cpu = false) {
  SoloRun<PqnAgent> agent(Builtins(), config, Device::kCpu);
  agent->set_iteration_graph_on_cpu(graph_on_cpu);
  std::ostringstream rows;
  agent.Train(
      RowWriter(rows), [] { return false; }, [] {});
  agent.SaveModel(model.string());
  return rows.str();
}

TEST(PqnAgent, TrainsDeterministicallyAndLogsEveryInterval) {
  const ScratchDir dir("cugym_pqn_rows");
  const TrainConfig config = SmallPqn(3);
  const std::string rows = Rows(config, dir / "a.safetensors");
  EXPECT_EQ(Rows(config, dir / "b.safetensors"), rows);
  EXPECT_EQ(FileBytes(dir / "a.safetensors"), FileBytes(dir / "b.safetensors"));
  // 3000 steps in rollouts of 128: 24 rollouts (3072 steps), a row after every second one.
  std::istringstream in(rows);
  std::string line;
  int count = 0;
  int64_t last = 0;
  while (std::getline(in, line)) {
    ++count;
    last = std::stoll(line.substr(0, line.find(' ')));
  }
  EXPECT_EQ(count, 12);
  EXPECT_EQ(last, 3072);
  const SafetensorsFile model = ReadSafetensors((dir / "a.safetensors").string());
  EXPECT_EQ(model.metadata.at("cugym.norm"), "layer_norm");
  EXPECT_NE(model.Find("1.weight"), nullptr) << "the first LayerNorm's scale";
  EXPECT_EQ(model.Find("target.0.weight"), nullptr);

  TrainConfig other = config;
  other.q_lambda = 0.0;
  EXPECT_NE(Rows(other, dir / "c.safetensors"), rows) << "lambda changes the targets";
  other = config;
  other.seed = 4;
  EXPECT_NE(Rows(other, dir / "d.safetensors"), rows);
}

TEST(PqnAgent, TheGraphPathGivesTheEagerRun) {
  // On the CPU the "graph" is the recorded work called again: the iteration that runs every greedy
  // forward (the graph's) gives the eager iteration's bits, which skips them while epsilon is 1.
  const ScratchDir dir("cugym_pqn_graph");
  const TrainConfig config = SmallPqn(5);  // epsilon is 1 at step 0 only: the eager run skips one forward
  const std::string eager = Rows(config, dir / "eager.safetensors");
  EXPECT_EQ(Rows(config, dir / "graph.safetensors", true), eager);
  EXPECT_EQ(FileBytes(dir / "graph.safetensors"), FileBytes(dir / "eager.safetensors"));
}

TEST(PqnAgent, AnInterruptedRunResumesExactly) {
  const ScratchDir dir("cugym_pqn_resume");
  TrainConfig config = SmallPqn(7);
  config.exploration_hold_mu = 2.0;
  const std::string uninterrupted = Rows(config, dir / "full.safetensors");
  std::ostringstream rows;
  const std::string checkpoint = (dir / "ckpt.safetensors").string();
  for (int64_t stop_at : {int64_t{600}, int64_t{1400}, int64_t{1} << 40}) {
    SoloRun<PqnAgent> agent(Builtins(), config, Device::kCpu);
    if (fs::exists(checkpoint)) agent.LoadCheckpoint(checkpoint);
    agent.Train(
        RowWriter(rows), [&] { return agent.global_step() >= stop_at; }, [] {});
    agent.SaveCheckpoint(checkpoint);
    if (stop_at > config.total_steps) agent.SaveModel((dir / "resumed.safetensors").string());
  }
  EXPECT_EQ(rows.str(), uninterrupted);
  EXPECT_EQ(FileBytes(dir / "resumed.safetensors"), FileBytes(dir / "full.safetensors"));
  const SafetensorsFile file = ReadSafetensors(checkpoint);
  EXPECT_EQ(file.metadata.at("cugym.algo"), "pqn");
  EXPECT_NE(file.Find("env.states"), nullptr);
  EXPECT_NE(file.Find("adam.exp_avg.1.weight"), nullptr) << "RAdam's moments of the LayerNorm's scale";
}

TEST(PqnAgent, ACheckpointOfTheOtherAlgorithmIsRefused) {
  const ScratchDir dir("cugym_pqn_mixed");
  TrainConfig pqn = SmallPqn(1);
  pqn.total_steps = 128;
  SoloRun<PqnAgent> a(Builtins(), pqn, Device::kCpu);
  a.TrainQuietly();
  a.SaveCheckpoint((dir / "pqn.safetensors").string());
  TrainConfig dqn;
  dqn.total_steps = 64;
  dqn.learning_starts = 32;
  SoloRun<DqnAgent> b(Builtins(), dqn, Device::kCpu);
  b.TrainQuietly();
  b.SaveCheckpoint((dir / "dqn.safetensors").string());
  try {
    b.LoadCheckpoint((dir / "pqn.safetensors").string());
    FAIL() << "DQN loaded a PQN checkpoint";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a pqn checkpoint; this run's algo is dqn"), std::string::npos) << e.what();
  }
  try {
    a.LoadCheckpoint((dir / "dqn.safetensors").string());
    FAIL() << "PQN loaded a DQN checkpoint";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a dqn checkpoint; this run's algo is pqn"), std::string::npos) << e.what();
  }
}

TEST(PqnAgent, RefusesBoxActionSpaces) {
  TrainConfig config = SmallPqn(1);
  config.env_id = "Pendulum-v1";
  try {
    SoloRun<PqnAgent> agent(Builtins(), config, Device::kCpu);
    FAIL() << "Pendulum accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("PQN needs a discrete action space"), std::string::npos) << e.what();
  }
}

// The shipped CartPole config through RunTraining, as `cugym train --config configs/cartpole_pqn.toml`
// runs it: it stops once an evaluation clears the threshold, and the model file (LayerNorm in it)
// evaluates solved. Under AddressSanitizer a shorter run checks the same path.
TEST(PqnAgent, ShippedCartPoleConfigSolvesThroughRunTraining) {
  const ScratchDir dir("cugym_pqn_cartpole");
  const ShippedConfig* shipped = FindShippedConfig("CartPole-v1", "pqn");
  ASSERT_NE(shipped, nullptr);
  TrainConfig config;
  config.Apply(ParseToml(shipped->toml, shipped->path));
  if (testing::kSanitizerBuild) {
    config.total_steps = 4096;
    config.eval_interval = 2048;  // two evaluations, so best.safetensors is written
    config.eval_episodes = 5;
  }
  TrainRunOptions options;
  options.run_dir = (dir / "run").string();
  std::ostringstream notes;
  const TrainRunResult run = RunTraining(
      Builtins(), config, options, [] { return false; }, notes);
  ASSERT_FALSE(run.model.empty());
  EXPECT_TRUE(fs::exists(dir / "run" / "evals.csv"));
  EXPECT_TRUE(fs::exists(dir / "run" / "best.safetensors"));
  const EvalResult r = EvaluateModel(Builtins(), run.model, 20, 10, 2024, Device::kCpu, 0.0);
  if (testing::kSanitizerBuild) return;
  EXPECT_GE(r.mean_return, 475.0);
  EXPECT_LT(run.global_step, config.total_steps) << "stopped at the threshold";
  EXPECT_GE(run.threshold_step, 0);
}

TEST(PqnCuda, GraphReplayGivesTheEagerWeights) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_pqn_cuda_graph");
  TrainConfig config = SmallPqn(4);
  config.exploration_hold_mu = 2.0;
  for (bool graph : {true, false}) {
    config.cuda_graph = graph;
    SoloRun<PqnAgent> agent(Builtins(), config, Device::kCuda);
    agent.TrainQuietly();
    EXPECT_EQ(agent->replays_iteration_graph(), graph);
    agent.SaveModel((dir / (graph ? "graph.safetensors" : "eager.safetensors")).string());
  }
  EXPECT_EQ(FileBytes(dir / "graph.safetensors"), FileBytes(dir / "eager.safetensors"));
}

}  // namespace
}  // namespace cugym::agent
