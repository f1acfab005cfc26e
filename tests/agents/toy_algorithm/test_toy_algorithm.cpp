// An algorithm added in its own folder (toy_agent.h) trains through the one driver, writes its own
// metrics column and config key, saves its model and resumes exactly; cugym knows it by one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agents/common/algorithm.h"
#include "agents/run/trainer.h"
#include "core/toml.h"
#include "tests/agents/agent_test_util.h"
#include "tests/agents/toy_algorithm/toy_agent.h"

namespace cugym::testing {
namespace {

namespace fs = std::filesystem;
using agent::RunTraining;
using agent::TrainConfig;
using agent::TrainRunOptions;

class ToyAlgorithm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { agent::RegisterAlgorithm(testing::ToyAlgorithm()); }  // the one line
};

TrainConfig Config(const std::string& extra = "") {
  TrainConfig c;
  c.Apply(
      ParseToml("algo = \"toy_q\"\nenv_id = \"CartPole-v1\"\nnum_envs = 4\nnum_steps = 32\nnum_epochs = 2\n"
                "num_minibatches = 2\ntotal_steps = 2048\nhidden_sizes = [32, 32]\nlearning_rate = 1e-3\n"
                "eval_episodes = 4\neval_interval = 1024\ncheckpoint_interval = 1024\nlog_interval = 512\n"
                "toy_epsilon = 0.2\n" +
                    extra,
                "toy.toml"));
  c.Validate();
  return c;
}

std::string Bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST_F(ToyAlgorithm, TrainsWritesItsColumnAndKeyAndResumesExactly) {
  const ScratchDir scratch("cugym_toy_algorithm");
  std::ostringstream notes;
  const TrainConfig config = Config();
  TrainRunOptions whole;
  whole.run_dir = (scratch / "whole").string();
  const agent::TrainRunResult done = RunTraining(
      Builtins(), config, whole, [] { return false; }, notes);
  EXPECT_TRUE(done.evaluated);
  EXPECT_GE(done.global_step, config.total_steps);

  std::ifstream metrics(scratch / "whole" / "metrics.csv");
  std::string header, row, last;
  std::getline(metrics, header);
  EXPECT_EQ(header, "global_step,wall_time,episodic_return,episodic_length,td_loss,toy_rollouts,sps,eval_return");
  while (std::getline(metrics, row)) last = row;
  EXPECT_EQ(last.substr(0, last.find(',')), "2048");
  EXPECT_NE(last.find(",16,"), std::string::npos) << last;  // 2048 steps of 4 x 32: 16 rollouts
  EXPECT_NE(Bytes(scratch / "whole" / "config.toml").find("toy_epsilon = 0.2"), std::string::npos);

  // Stopped at the first checkpoint and resumed: the uninterrupted run's model.
  TrainRunOptions cut;
  cut.run_dir = (scratch / "cut").string();
  bool stopped = false;
  cut.on_eval = [&](const agent::TrainEvaluation& e) { return stopped = e.global_step >= 1024; };
  const agent::TrainRunResult first = RunTraining(
      Builtins(), config, cut, [] { return false; }, notes);
  ASSERT_TRUE(stopped);
  EXPECT_TRUE(first.interrupted);
  cut.on_eval = {};
  cut.resume = true;
  RunTraining(
      Builtins(), config, cut, [] { return false; }, notes);
  EXPECT_EQ(Bytes(scratch / "cut" / "model.safetensors"), Bytes(scratch / "whole" / "model.safetensors"));
}

TEST_F(ToyAlgorithm, ItsKeyIsCheckedAndBelongsToIt) {
  EXPECT_EQ(ConfigError("algo = \"toy_q\"\ntoy_epsilon = 2.0\n"), "toy_epsilon must be in [0, 1], got 2.0");
  EXPECT_EQ(ConfigError("toy_epsilon = 0.5\n"), "toy_epsilon is a toy_q key (algo = \"toy_q\"), got 0.5");
  EXPECT_EQ(MakeError(Config("seed = 3\n")), "");
  EXPECT_NE(std::find(agent::AlgorithmNames().begin(), agent::AlgorithmNames().end(), "toy_q"),
            agent::AlgorithmNames().end());
}

// Its registration's checks, update count and key families apply as the built-in ones' do.
TEST_F(ToyAlgorithm, ItsChecksAndPlannedUpdatesAreItsFamilys) {
  EXPECT_EQ(ConfigError("algo = \"toy_q\"\nnum_envs = 4\nnum_steps = 32\nnum_minibatches = 3\n"),
            "num_minibatches must divide num_envs * num_steps (128), got 3");
  EXPECT_EQ(Config().PlannedUpdates(), 16 * 2 * 2) << "2048 / 128 rollouts of 2 epochs x 2 minibatches";
  // It reads none of the keys only other algorithms read: each is refused, naming its readers.
  EXPECT_EQ(ConfigError("algo = \"toy_q\"\nnum_envs = 4\nnum_steps = 32\nnum_minibatches = 2\nclip_coef = 0.1"),
            "clip_coef is a PPO key (algo = \"ppo\") (algo is \"toy_q\"), got 0.1");
  EXPECT_EQ(ConfigError("algo = \"toy_q\"\nnum_envs = 4\nnum_steps = 32\nnum_minibatches = 2\nbuffer_size = 5"),
            "buffer_size is a DQN, PQN or SAC key, which TOY_Q does not read (algo is \"toy_q\"), got 5");
}

}  // namespace
}  // namespace cugym::testing
