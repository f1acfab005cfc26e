// The PPO agent (agents/ppo.h): its config keys and refusals.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "agents/train_config.h"
#include "core/toml.h"

namespace cugym::agent {
namespace {

std::string ConfigError(const std::string& toml) {
  try {
    TrainConfig config;
    config.Apply(ParseToml(toml, "c.toml"));
    config.Validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(PpoConfig, ItsKeysReadAndRangesAreChecked) {
  const std::string ppo = "algo = \"ppo\"\nnum_envs = 4\nnum_steps = 128\nnum_minibatches = 4\n";
  EXPECT_EQ(ConfigError(ppo + "gae_lambda = 0.9\nclip_coef = 0.1\nclip_vloss = false\nent_coef = 0.0\nvf_coef = 1.0\n"
                              "norm_adv = false\npolicy = \"gaussian\"\nsquash = true\ninit_log_std = -0.5\n"
                              "normalize_obs = true\nnormalize_reward = true\n"),
            "");
  EXPECT_EQ(ConfigError(ppo + "gae_lambda = 1.5"), "gae_lambda must be in [0, 1], got 1.5");
  EXPECT_EQ(ConfigError(ppo + "clip_coef = 0"), "clip_coef must be in (0, 10], got 0");
  EXPECT_EQ(ConfigError(ppo + "ent_coef = -1"), "ent_coef must be in [0, 10], got -1");
  EXPECT_EQ(ConfigError(ppo + "policy = \"beta\""),
            "policy must be \"auto\", \"categorical\" or \"gaussian\", got \"beta\"");
  EXPECT_EQ(ConfigError("algo = \"ppo\"\nnum_envs = 4\nnum_steps = 128\nnum_minibatches = 3"),
            "num_minibatches must divide num_envs * num_steps (512), got 3");
}

TEST(PpoConfig, EachAgentRefusesTheOthersKeys) {
  EXPECT_EQ(ConfigError("clip_coef = 0.1"), "clip_coef is a PPO key (algo = \"ppo\") (algo is \"dqn\"), got 0.1");
  EXPECT_EQ(ConfigError("algo = \"pqn\"\nnum_envs = 8\nnum_steps = 16\nnum_minibatches = 4\nnormalize_obs = true"),
            "normalize_obs is a PPO key (algo = \"ppo\") (algo is \"pqn\"), got true");
  const std::string ppo = "algo = \"ppo\"\nnum_envs = 4\nnum_steps = 128\nnum_minibatches = 4\n";
  EXPECT_EQ(ConfigError(ppo + "buffer_size = 1000"),
            "buffer_size is a DQN or PQN key, which PPO does not read (algo is \"ppo\"), got 1000");
  EXPECT_EQ(ConfigError(ppo + "q_lambda = 0.5"),
            "q_lambda is a DQN or PQN key, which PPO does not read (algo is \"ppo\"), got 0.5");
  // At their defaults (a config.toml written back lists every key) they are no one's business.
  TrainConfig config;
  config.Apply(ParseToml(ppo, "c.toml"));
  TrainConfig again;
  again.Apply(ParseToml(config.ToToml(), "config.toml"));
  EXPECT_NO_THROW(again.Validate());
}

TEST(PpoConfig, AnEnvWithoutADqnConfigGetsItsPpoOne) {
  EXPECT_EQ(FindShippedConfig("CartPole-v1", ""), FindShippedConfig("CartPole-v1", "dqn"));
  EXPECT_EQ(FindShippedConfig("NoSuchEnv-v0", ""), nullptr);
}

}  // namespace
}  // namespace cugym::agent
