// DQN: config keys and validation, refusal of Box action spaces, CPU determinism, checkpoints,
// evaluation errors; and (label slow) learning with the shipped configs.
#include "agents/common/policy.h"
#include "agents/off_policy/dqn.h"
#include "agents/run/config_source.h"
#include "agents/run/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/build_info.h"
#include "core/safetensors.h"
#include "envs/builtin.h"
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

TEST(TrainConfig, BadKeysAndValuesNameTheKey) {
  EXPECT_EQ(ConfigError("learning_rate = 1e-3\nbuffer_size = 500\n"), "");
  EXPECT_EQ(ConfigError("num_envs = 512\nbuffer_size = 256\nbatch_size = 32\n"),
            "num_envs must not exceed buffer_size (256): one vector step writes num_envs rows of the replay ring, "
            "got 512");
  EXPECT_EQ(ConfigError("[dqn]\ngamma = 0.9\n"), "");
  EXPECT_EQ(ConfigError("learning_rate = -1e-3\n"), "learning_rate must be in (0, 1), got -0.001");
  EXPECT_EQ(ConfigError("gamma = 1.5\n"), "gamma must be in [0, 1], got 1.5");
  EXPECT_EQ(ConfigError("batch_size = 128\nbuffer_size = 100\n"),
            "batch_size must not exceed buffer_size (100), got 128");
  EXPECT_EQ(ConfigError("loss = \"l1\"\n"), "loss must be \"mse\" or \"huber\", got \"l1\"");
  EXPECT_EQ(ConfigError("num_envs = 2.5\n"), "num_envs (line 1) must be an integer");
  EXPECT_EQ(ConfigError("double_dqn = 1\n"), "double_dqn (line 1) must be true or false");
  EXPECT_EQ(ConfigError("exploration_hold_mu = 1.0\n"), "exploration_hold_mu must be 0 (off) or in (1, 100], got 1");
  EXPECT_EQ(ConfigError("exploration_hold_mu = 2\nexploration_max_hold = 0\n"),
            "exploration_max_hold must be in 1..1e9, got 0");
  EXPECT_EQ(ConfigError("anneal_lr = \"yes\"\n"), "anneal_lr (line 1) must be true or false");
  EXPECT_EQ(ConfigError("eval_interval = 0\n"),
            "eval_interval must be > 0 (eval_episodes = 0 turns evaluation off), got 0");
  EXPECT_EQ(ConfigError("eval_episodes = -1\n"), "eval_episodes must be in 0..100000, got -1");
  EXPECT_EQ(ConfigError("n_step = 0\n"), "n_step must be in 1..1000, got 0");
  EXPECT_EQ(ConfigError("per_alpha = -0.5\n"), "per_alpha must be in [0, 10] (0: uniform sampling), got -0.5");
  EXPECT_EQ(ConfigError("per_beta = 1.5\n"), "per_beta must be in [0, 1], got 1.5");
  EXPECT_EQ(ConfigError("per_eps = 0\n"), "per_eps must be in (0, 1], got 0");
  EXPECT_EQ(ConfigError("prioritized_replay = 1\n"), "prioritized_replay (line 1) must be true or false");
  EXPECT_EQ(ConfigError("hidden_sizes = 64\n"), "hidden_sizes (line 1) must be an array of integers, e.g. [120, 84]");
  EXPECT_EQ(ConfigError("conv_channels = 16\n"), "");
  EXPECT_EQ(ConfigError("conv_channels = -1\n"), "conv_channels must be in 0..4096 (0: no convolution), got -1");
  EXPECT_EQ(ConfigError("conv_channels = 1.5\n"), "conv_channels (line 1) must be an integer");
  EXPECT_EQ(ConfigError("learnig_rate = 1e-3\n").rfind("unknown config key 'learnig_rate' (line 1); known keys: ", 0),
            0u);
}

TEST(TrainConfig, WrittenConfigReadsBackTheSame) {
  TrainConfig config;
  config.Apply(
      ParseToml("env_id = \"Acrobot-v1\"\nhidden_sizes = [64, 64]\ndouble_dqn = true\nlearning_rate = 6.3e-4\n"
                "anneal_lr = true\nexploration_hold_mu = 2.5\nexploration_max_hold = 300\ntensorboard = false\n"
                "seed = 7\nloss = \"huber\"\nconv_channels = 16\n",
                "a"));
  TrainConfig again;
  again.Apply(ParseToml(config.ToToml(), "b"));
  EXPECT_EQ(again.ToToml(), config.ToToml());
  EXPECT_FALSE(again.tensorboard);
  EXPECT_EQ(again.seed, 7u);
  EXPECT_EQ(again.loss, "huber");
  // config.toml: every key once, sorted by name.
  std::vector<std::string> names;
  std::istringstream lines(config.ToToml());
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') names.push_back(line.substr(0, line.find(" = ")));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_EQ(names.size(), 66u);  // DQN's 40, PQN's algo, layer_norm, num_steps, num_epochs, ..., PPO's 12, SAC's 6
  EXPECT_EQ(again.conv_channels, 16);
  EXPECT_EQ(again.hidden_sizes, (std::vector<int>{64, 64}));
  EXPECT_TRUE(again.double_dqn);
  EXPECT_TRUE(again.anneal_lr);
  EXPECT_EQ(again.exploration_hold_mu, 2.5);
  EXPECT_EQ(again.exploration_max_hold, 300);
  EXPECT_EQ(again.env_id, "Acrobot-v1");
}

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TrainConfig, ShippedConfigsAreTheFilesAndCartPolesAreTheDefaults) {
  ASSERT_EQ(kNumShippedConfigs, 27);  // and 7 PQN configs (test_pqn.cpp), 8 PPO (test_ppo.cpp), 3 SAC (test_sac.cpp)
  for (const char* id :
       {"CartPole-v1", "Acrobot-v1", "MountainCar-v0", "LunarLander-v3", "MinAtar-Asterix-v1", "MinAtar-Breakout-v1",
        "MinAtar-Freeway-v1", "MinAtar-Seaquest-v1", "MinAtar-SpaceInvaders-v1"}) {
    const ShippedConfig* shipped = FindShippedConfig(id);
    ASSERT_NE(shipped, nullptr) << id;
    const std::string path = std::string(CUGYM_SOURCE_DIR) + "/" + shipped->path;
    EXPECT_EQ(std::string(shipped->toml), FileBytes(path)) << path << " changed without a rebuild";
  }
  EXPECT_EQ(FindShippedConfig("Pendulum-v1"), nullptr);
  EXPECT_EQ(FindShippedConfig("MountainCar"), nullptr);
  TrainConfig cartpole;
  cartpole.Apply(ParseToml(FindShippedConfig("CartPole-v1")->toml, "cartpole.toml"));
  TrainConfig defaults;  // the fast CartPole preset, but for what cartpole.toml opts into
  defaults.dueling = true;
  defaults.prioritized_replay = true;
  defaults.eval_interval = 5000;
  defaults.stop_at_threshold = true;
  defaults.stop_margin = 2.0;
  EXPECT_EQ(cartpole.ToToml(), defaults.ToToml()) << "TrainConfig's defaults are configs/cartpole.toml's";
}

TEST(DqnAgent, RefusesBoxActionSpaces) {
  TrainConfig config;
  config.env_id = "Pendulum-v1";
  try {
    SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "DQN needs a discrete action space, but Pendulum-v1 has Box(1,) float32 actions");
  }
}

TEST(DqnAgent, AConvolutionNeedsImageObservations) {
  TrainConfig config;
  config.conv_channels = 16;
  try {
    SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "conv_channels needs an image observation (H, W, C); CartPole-v1's is (4,)");
  }
}

TEST(DqnAgent, EpsilonScheduleIsLinearThenFlat) {
  TrainConfig config;
  config.total_steps = 1000;
  config.exploration_fraction = 0.5;
  config.start_e = 1.0;
  config.end_e = 0.1;
  SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
  EXPECT_DOUBLE_EQ(agent->Epsilon(0), 1.0);
  EXPECT_NEAR(agent->Epsilon(250), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(agent->Epsilon(500), 0.1);
  EXPECT_DOUBLE_EQ(agent->Epsilon(900), 0.1);
}

TrainConfig SmallRun(uint64_t seed) {
  TrainConfig config;
  config.seed = seed;
  config.total_steps = 4000;
  config.learning_starts = 500;
  config.log_interval = 500;
  config.checkpoint_interval = 0;
  return config;
}

// Everything but the wall-clock columns, for each metrics row.
// Appends a metrics row (all but the wall-clock columns) to `rows`.
std::function<void(const MetricsRow&)> RowWriter(std::ostringstream& rows) {
  return [&rows](const MetricsRow& p) {
    rows << p.global_step << " " << p.episodic_return << " " << p.episodic_length << " " << p.Get("td_loss") << " "
         << p.Get("q_values") << " " << p.Get("epsilon") << " " << p.mean_return_100 << " " << p.episodes << "\n";
  };
}

std::string Rows(const TrainConfig& config, fs::path model) {
  SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
  std::ostringstream rows;
  agent.Train(
      RowWriter(rows), [] { return false; }, [] {});
  agent.SaveModel(model.string());
  return rows.str();
}

TEST(DqnAgent, ADuelingModelIsWrittenAndEvaluatedAsSuch) {
  const ScratchDir dir("cugym_dqn_dueling");
  TrainConfig config = SmallRun(9);
  config.dueling = true;
  const std::string rows = Rows(config, dir / "m.safetensors");
  config.dueling = false;
  EXPECT_NE(rows, Rows(config, dir / "plain.safetensors"));
  const SafetensorsFile model = ReadSafetensors((dir / "m.safetensors").string());
  EXPECT_EQ(model.metadata.at("cugym.head"), "dueling");
  EXPECT_EQ(model.metadata.at("cugym.layers"), "4,120,84,3");  // 2 advantages and the value
  const EvalResult r = EvaluateModel(Builtins(), (dir / "m.safetensors").string(), 6, 3, 1, Device::kCpu, 0.0);
  EXPECT_EQ(r.episodes, 6);
  // The same weights read as a plain 3-action Q network do not fit CartPole.
  SafetensorsMetadata meta = model.metadata;
  meta["cugym.head"] = "q";
  WriteSafetensors((dir / "plain_head.safetensors").string(), model.tensors, meta);
  EXPECT_THROW(EvaluateModel(Builtins(), (dir / "plain_head.safetensors").string(), 2, 1, 1, Device::kCpu, 0.0),
               std::invalid_argument);
}

TEST(DqnAgent, AnInterruptedRunResumesExactly) {
  // Stopped twice (mid log interval, and where a checkpoint would be), each time checkpointed
  // and resumed in a new agent: the same metrics rows and the same weights, bit for bit, as the
  // run that never stopped. Holds, Double DQN, 3-step returns, prioritized replay and the annealed
  // rate exercise every piece of state.
  const ScratchDir dir("cugym_dqn_resume");
  TrainConfig config = SmallRun(7);
  config.exploration_hold_mu = 2.0;
  config.anneal_lr = true;
  config.double_dqn = true;
  config.n_step = 3;
  config.prioritized_replay = true;
  const std::string uninterrupted = Rows(config, dir / "full.safetensors");
  TrainConfig one_step = config;
  one_step.n_step = 1;
  EXPECT_NE(Rows(one_step, dir / "one.safetensors"), uninterrupted) << "n_step changes the targets";
  TrainConfig uniform = config;
  uniform.prioritized_replay = false;
  EXPECT_NE(Rows(uniform, dir / "uniform.safetensors"), uninterrupted) << "priorities change the minibatches";
  std::ostringstream rows;
  const std::string checkpoint = (dir / "ckpt.safetensors").string();
  for (int64_t stop_at : {int64_t{1203}, int64_t{2504}, int64_t{1} << 40}) {
    SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
    if (fs::exists(checkpoint)) agent.LoadCheckpoint(checkpoint);
    agent.Train(
        RowWriter(rows), [&] { return agent.global_step() >= stop_at; }, [] {});
    agent.SaveCheckpoint(checkpoint);
    if (stop_at > config.total_steps) agent.SaveModel((dir / "resumed.safetensors").string());
  }
  EXPECT_EQ(rows.str(), uninterrupted);
  EXPECT_EQ(FileBytes(dir / "resumed.safetensors"), FileBytes(dir / "full.safetensors"));

  // Without the replay memory the run goes on, but refills it first: no longer the same run.
  config.save_replay = false;
  SoloRun<DqnAgent> partial(Builtins(), config, Device::kCpu);
  partial.Train([](const MetricsRow&) {}, [&] { return partial.global_step() >= 1203; }, [] {});
  partial.SaveCheckpoint(checkpoint);
  EXPECT_EQ(ReadSafetensors(checkpoint).Find("replay.obs"), nullptr);
  SoloRun<DqnAgent> refilled(Builtins(), config, Device::kCpu);
  refilled.LoadCheckpoint(checkpoint);
  EXPECT_EQ(refilled.global_step(), 1208);
  refilled.TrainQuietly();
  EXPECT_EQ(refilled.global_step(), config.total_steps);
}

}  // namespace
}  // namespace cugym::agent

// OpenBLAS's own: a process on a machine with another core count starts with another count.
extern "C" void openblas_set_num_threads(int num_threads);

namespace cugym::agent {
namespace {

// The CPU back end runs a DQN's small GEMMs on one thread whatever OpenBLAS was started with (its
// own SmallGemm, or OpenBLAS on one thread in a build without FMA), so a run gives the same bits on
// any number of cores (OpenBLAS splits a GEMM's sums by thread count: the shipped CartPole
// config's 120-84 dueling network trained differently on 1 and 2).
TEST(DqnAgent, TheBlasThreadCountDoesNotChangeACpuRun) {
  const ScratchDir dir("cugym_dqn_threads");
  const ShippedConfig* shipped = FindShippedConfig("CartPole-v1");
  TrainConfig config;
  config.Apply(ParseToml(shipped->toml, shipped->path));
  config.total_steps = 4000;
  config.eval_episodes = 0;
  config.stop_at_threshold = false;
  std::string rows[2];
  for (int threads : {1, 2}) {
    openblas_set_num_threads(threads);
    rows[threads - 1] = Rows(config, dir / (std::to_string(threads) + ".safetensors"));
  }
  EXPECT_EQ(rows[0], rows[1]);
  EXPECT_EQ(FileBytes(dir / "1.safetensors"), FileBytes(dir / "2.safetensors"));
}

TEST(DqnAgent, SameSeedSameMetricsAndWeightsOnTheCpu) {
  const ScratchDir dir("cugym_dqn_determinism");
  const std::string a = Rows(SmallRun(3), dir / "a.safetensors");
  const std::string b = Rows(SmallRun(3), dir / "b.safetensors");
  const std::string c = Rows(SmallRun(4), dir / "c.safetensors");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(FileBytes(dir / "a.safetensors"), FileBytes(dir / "b.safetensors"));
  EXPECT_NE(a.find("4000 "), std::string::npos);  // a row at the last step
}

TEST(DqnAgent, AnnealedLearningRateEndsWithTheLastUpdate) {
  const ScratchDir dir("cugym_dqn_anneal");
  TrainConfig config = SmallRun(6);
  config.anneal_lr = true;
  config.exploration_hold_mu = 2.0;
  config.exploration_max_hold = 20;
  SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
  agent.TrainQuietly();
  agent.SaveCheckpoint((dir / "ckpt.safetensors").string());
  const SafetensorsFile file = ReadSafetensors((dir / "ckpt.safetensors").string());
  // 8 envs learn from the vector step that ends at 504 (> 500) to 4000: 438 vector steps of 4
  // updates. The schedule's length is exactly the updates taken, so the last one has lr > 0.
  EXPECT_NE(file.metadata.at("cugym.adam").find(",lr_decay_updates=1752"), std::string::npos)
      << file.metadata.at("cugym.adam");
  EXPECT_EQ(file.Find("adam.step")->ToI64(), (std::vector<int64_t>{1752}));
}

TEST(DqnAgent, EzGreedyChangesTheRunButStaysDeterministic) {
  const ScratchDir dir("cugym_dqn_ez");
  TrainConfig held = SmallRun(3);
  held.exploration_hold_mu = 2.0;
  const std::string a = Rows(held, dir / "a.safetensors");
  EXPECT_EQ(a, Rows(held, dir / "b.safetensors"));
  EXPECT_NE(a, Rows(SmallRun(3), dir / "c.safetensors"));
}

TEST(DqnAgent, CheckpointsRestoreCountersWeightsAndReplay) {
  const ScratchDir dir("cugym_dqn_checkpoint");
  TrainConfig config = SmallRun(5);
  config.total_steps = 2000;
  {
    SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
    agent.TrainQuietly();
    agent.SaveCheckpoint((dir / "ckpt.safetensors").string());
    agent.SaveModel((dir / "before.safetensors").string());
  }
  config.total_steps = 3000;
  SoloRun<DqnAgent> resumed(Builtins(), config, Device::kCpu);
  resumed.LoadCheckpoint((dir / "ckpt.safetensors").string());
  EXPECT_EQ(resumed.global_step(), 2000);
  resumed.SaveModel((dir / "after.safetensors").string());
  EXPECT_EQ(FileBytes(dir / "before.safetensors"), FileBytes(dir / "after.safetensors"));
  int64_t last = 0;
  resumed.Train([&](const MetricsRow& p) { last = p.global_step; }, [] { return false; }, [] {});
  EXPECT_EQ(last, 3000);
  // A checkpoint of another env is refused.
  TrainConfig other = config;
  other.env_id = "Acrobot-v1";
  SoloRun<DqnAgent> acrobot(Builtins(), other, Device::kCpu);
  EXPECT_THROW(acrobot.LoadCheckpoint((dir / "ckpt.safetensors").string()), std::invalid_argument);
}

// Checkpoints written before the renames (the replay's terminal flags as replay.dones, the
// learner's kind "q_trainer") resume to the same bits as the new names; one from before exact
// resumption (no cugym.update_debt) is refused, naming the file.
TEST(DqnAgent, CheckpointsOfTheOldNamesResumeTheSame) {
  const ScratchDir dir("cugym_dqn_old_names");
  TrainConfig config = SmallRun(5);
  config.total_steps = 2000;
  const std::string checkpoint = (dir / "ckpt.safetensors").string();
  {
    SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
    agent.TrainQuietly();
    agent.SaveCheckpoint(checkpoint);
  }
  SafetensorsFile file = ReadSafetensors(checkpoint);
  EXPECT_EQ(file.metadata.at("cugym.kind"), "q_learner");
  ASSERT_NE(file.Find("replay.terminals"), nullptr);
  EXPECT_EQ(file.Find("replay.dones"), nullptr);
  for (NamedTensor& t : file.tensors)
    if (t.name == "replay.terminals") t.name = "replay.dones";
  file.metadata["cugym.kind"] = "q_trainer";
  const std::string old_names = (dir / "old_names.safetensors").string();
  WriteSafetensors(old_names, file.tensors, file.metadata);

  config.total_steps = 3000;
  for (const std::string& path : {checkpoint, old_names}) {
    SoloRun<DqnAgent> resumed(Builtins(), config, Device::kCpu);
    resumed.LoadCheckpoint(path);
    resumed.TrainQuietly();
    resumed.SaveModel(path + ".model");
  }
  EXPECT_EQ(FileBytes(fs::path(checkpoint + ".model")), FileBytes(fs::path(old_names + ".model")));

  file.metadata.erase("cugym.update_debt");
  const std::string legacy = (dir / "legacy.safetensors").string();
  WriteSafetensors(legacy, file.tensors, file.metadata);
  SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
  try {
    agent.LoadCheckpoint(legacy);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), legacy +
                                         ": a checkpoint from a cugym before exact resumption (no cugym.update_debt)"
                                         " cannot be resumed; cugym eval still reads its network");
  }
}

TEST(Evaluate, RefusesMissingDamagedAndMismatchedModels) {
  const ScratchDir dir("cugym_eval_errors");
  TrainConfig config = SmallRun(1);
  config.total_steps = 1000;
  SoloRun<DqnAgent> agent(Builtins(), config, Device::kCpu);
  agent.TrainQuietly();
  const std::string model = (dir / "m.safetensors").string();
  agent.SaveModel(model);
  EXPECT_EQ(ReadSafetensors(model).metadata.at("cugym.version"), VersionString());  // which cugym wrote it
  const EvalResult r = EvaluateModel(Builtins(), model, 7, 3, 1, Device::kCpu, 0.0);
  EXPECT_EQ(r.episodes, 7);
  EXPECT_EQ(r.env_id, "CartPole-v1");
  // Statistics of the same 7 episodes, and greedy seeded episodes are the same again.
  EXPECT_LE(r.min_return, r.mean_return);
  EXPECT_LE(r.mean_return, r.max_return);
  EXPECT_LT(r.min_return, r.max_return) << "7 episodes from different starts, all the same return";
  const EvalResult again = EvaluateModel(Builtins(), model, 7, 3, 1, Device::kCpu, 0.0);
  EXPECT_EQ(again.mean_return, r.mean_return);
  EXPECT_EQ(again.min_return, r.min_return);
  EXPECT_EQ(again.max_return, r.max_return);
  EXPECT_THROW(EvaluateModel(Builtins(), (dir / "none.safetensors").string(), 5, 1, 1, Device::kCpu, 0),
               std::exception);
  std::string bytes = FileBytes(model);
  std::ofstream((dir / "cut.safetensors").string(), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(EvaluateModel(Builtins(), (dir / "cut.safetensors").string(), 5, 1, 1, Device::kCpu, 0),
               std::invalid_argument);
  try {
    EvaluateModel(Builtins(), model, 5, 1, 1, Device::kCpu, 0, "Acrobot-v1");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit Acrobot-v1"), std::string::npos) << e.what();
  }
}

// A model file's network is rebuilt with the file's hidden activation: a tanh network (PPO's)
// acts as that network does.
TEST(GreedyPolicy, BuildsTheModelFilesActivation) {
  const ScratchDir dir("cugym_policy_tanh");
  nn::MlpOptions o;
  o.max_batch = 8;
  o.seed = 12;
  o.activation = nn::Activation::kTanh;
  o.init = nn::MlpInit::kOrthogonal;
  nn::Mlp net(nn::MakeBackend(Device::kCpu), {4, 16, 2}, o);
  const std::string model = (dir / "tanh.safetensors").string();
  nn::SaveMlp(model, net, {{"cugym.env_id", "CartPole-v1"}});
  GreedyPolicy policy(Builtins(), model, "", 8, Device::kCpu);
  std::vector<float> obs(8 * 4);
  for (std::size_t i = 0; i < obs.size(); ++i) obs[i] = std::sin(1.7f * static_cast<float>(i));
  std::vector<int32_t> actions(8, -1);
  policy.Act(obs.data(), actions.data(), 8);
  const std::vector<float> q = nn::ToHost(net.Forward(nn::ConstBatchView(obs.data(), 8, 4, Device::kCpu)));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(actions[r], q[2 * r + 1] > q[2 * r] ? 1 : 0) << "row " << r;
}

// On every back end: the sampling counter advances once per gradient step, through checkpoints.
class DqnOnDevice : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { CUGYM_SKIP_WITHOUT_GPU(GetParam()); }
};

TEST_P(DqnOnDevice, DrawCounterEqualsTheUpdatesTaken) {
  const ScratchDir dir(std::string("cugym_dqn_draws_") + DeviceName(GetParam()));
  SoloRun<DqnAgent> agent(Builtins(), SmallRun(2), GetParam());
  agent.TrainQuietly();
  agent.SaveCheckpoint((dir / "ckpt.safetensors").string());
  const SafetensorsFile file = ReadSafetensors((dir / "ckpt.safetensors").string());
  // 8 envs learn from the vector step that ends at 504 (> 500) to 4000: 438 vector steps of 4.
  EXPECT_EQ(file.Find("adam.step")->ToI64(), (std::vector<int64_t>{1752}));
  EXPECT_EQ(file.metadata.at("cugym.draws"), "1752");
}

INSTANTIATE_TEST_SUITE_P(Devices, DqnOnDevice, ::testing::Values(Device::kCpu, Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); });

std::vector<float> ModelWeights(const fs::path& path) {
  const SafetensorsFile file = ReadSafetensors(path.string());
  std::vector<float> all;
  for (const NamedTensor& t : file.tensors) {
    const std::vector<float> values = t.ToF32();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

// The captured update graph replays exactly the eager kernels: the same bits, and it is used.
// 2.4 gradient steps per vector step: no whole-iteration graph (test_dqn_iteration.cpp), the
// per-update one.
TEST(DqnCuda, GraphReplayGivesTheEagerWeights) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_dqn_cuda_graph");
  TrainConfig config = SmallRun(4);
  config.replay_ratio = 0.3;
  config.double_dqn = true;
  config.max_grad_norm = 10.0;
  config.anneal_lr = true;
  config.exploration_hold_mu = 2.0;
  config.prioritized_replay = true;  // the priority tree's kernels are captured too
  for (bool graph : {true, false}) {
    config.cuda_graph = graph;
    SoloRun<DqnAgent> agent(Builtins(), config, Device::kCuda);
    agent.TrainQuietly();
    EXPECT_EQ(agent->replays_update_graph(), graph);
    EXPECT_FALSE(agent->replays_iteration_graph());
    agent.SaveModel((dir / (graph ? "graph.safetensors" : "eager.safetensors")).string());
  }
  EXPECT_EQ(ModelWeights(dir / "graph.safetensors"), ModelWeights(dir / "eager.safetensors"));
}

// CPU and CUDA from the same transitions: with epsilon held at 1 no action depends on the
// network, so both fill the same replay memory and draw the same minibatches; after 20 Adam
// steps the weights differ only by fp32 summation order (about 1e-6 per step; 1e-3 leaves room
// for Adam's normalisation of near-zero gradients).
TEST(DqnCuda, TwentyUpdatesAgreeWithTheCpu) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_dqn_cuda_cpu");
  TrainConfig config = SmallRun(8);
  config.start_e = config.end_e = 1.0;
  config.learning_starts = 256;
  config.total_steps = 296;  // 5 learning vector steps of 4 updates
  for (Device device : {Device::kCpu, Device::kCuda}) {
    SoloRun<DqnAgent> agent(Builtins(), config, device);
    agent.TrainQuietly();
    agent.SaveModel((dir / (std::string(DeviceName(device)) + ".safetensors")).string());
  }
  const std::vector<float> cpu = ModelWeights(dir / "cpu.safetensors"), gpu = ModelWeights(dir / "cuda.safetensors");
  ASSERT_EQ(cpu.size(), gpu.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(gpu[i]) - cpu[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(cpu[i])));
  }
  EXPECT_LT(diff / scale, 1e-3);
}

// Greedy evaluation on CUDA plays the same episodes as on the CPU (same env bits; the network's
// argmax could only differ at near-ties).
TEST(DqnCuda, EvaluationAgreesWithTheCpu) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_dqn_cuda_eval");
  SoloRun<DqnAgent> agent(Builtins(), SmallRun(1), Device::kCpu);
  agent.TrainQuietly();
  const std::string model = (dir / "m.safetensors").string();
  agent.SaveModel(model);
  const EvalResult cpu = EvaluateModel(Builtins(), model, 40, 8, 5, Device::kCpu, 0.0);
  const EvalResult gpu = EvaluateModel(Builtins(), model, 40, 8, 5, Device::kCuda, 0.0);
  EXPECT_EQ(gpu.episodes, 40);
  EXPECT_NEAR(gpu.mean_return, cpu.mean_return, 0.02 * std::fabs(cpu.mean_return));
  EXPECT_NEAR(gpu.mean_length, cpu.mean_length, 0.02 * cpu.mean_length);
}

// Label slow: the shipped configs reach Gymnasium's thresholds for seed 1 (greedy mean over 100
// episodes; CartPole-v1 475, Acrobot-v1 -100 and MountainCar-v0 -110, about 7 s for DQN's three on
// a 2-core CPU; docs/benchmarks.md has more seeds), DQN's and PQN's.
struct LearningCase {
  const char* env_id;
  double threshold;
  const char* algo;
};

class ShippedConfigLearning : public ::testing::TestWithParam<LearningCase> {};

TEST_P(ShippedConfigLearning, ReachesTheThreshold) {
  const auto [env_id, threshold, algo] = GetParam();
  const ScratchDir dir(std::string("cugym_learning_") + algo + "_" + env_id);
  const ShippedConfig* shipped = FindShippedConfig(env_id, algo);
  ASSERT_NE(shipped, nullptr) << env_id;
  TrainConfig config;
  config.Apply(ParseToml(shipped->toml, shipped->path));
  config.seed = 1;
  // As `cugym train` runs it: a run folder, evaluations, the early stop where the config has one.
  TrainRunOptions options;
  options.run_dir = (dir / "run").string();
  std::ostringstream notes;
  const TrainRunResult run = RunTraining(
      Builtins(), config, options, [] { return false; }, notes);
  const EvalResult r = EvaluateModel(Builtins(), run.model, 100, 10, 2024, Device::kCpu, 0.0);
  EXPECT_GE(r.mean_return, threshold) << shipped->path;
  if (config.stop_at_threshold && run.global_step < config.total_steps) {
    EXPECT_GE(run.global_step, run.threshold_step) << "the run ended at an evaluation that reached the threshold";
    EXPECT_GE(run.threshold_step, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(DqnLearning, ShippedConfigLearning,
                         ::testing::Values(LearningCase{"CartPole-v1", 475.0, "dqn"},
                                           LearningCase{"Acrobot-v1", -100.0, "dqn"},
                                           LearningCase{"MountainCar-v0", -110.0, "dqn"},
                                           LearningCase{"CartPole-v1", 475.0, "pqn"},
                                           LearningCase{"Acrobot-v1", -100.0, "pqn"}),
                         [](const ::testing::TestParamInfo<LearningCase>& info) {
                           std::string name = std::string(info.param.algo) + "_" + info.param.env_id;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace cugym::agent
