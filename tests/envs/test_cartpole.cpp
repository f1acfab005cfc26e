// CartPole-v1 on every back end: Gymnasium's spec and golden step, resets, determinism,
// independence from the batch size, CPU-GPU agreement, termination and truncation.
#include "envs/classic/cartpole.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/envs/env_test_util.h"

namespace cugym {
namespace {

using testing::Builtins;
using testing::Host;
using testing::StepWith;

template <class Tag>
class CartPoleTest : public ::testing::Test {
 protected:
  static constexpr Device kDevice = Tag::kDevice;
  void SetUp() override { CUGYM_SKIP_WITHOUT_GPU(kDevice); }
  std::unique_ptr<VectorEnv> Make(int64_t n) { return MakeVectorEnv(Builtins(), "CartPole-v1", n, kDevice); }
  std::vector<float> Obs(const VectorEnv& env) { return Host(env.obs(), env.num_envs() * 4, kDevice); }
};
TYPED_TEST_SUITE(CartPoleTest, testing::BackendTags, testing::BackendNames);

TEST(CartPoleSpec, MatchesGymnasiumRegistry) {
  const EnvSpec spec = CartPole::Spec();
  EXPECT_EQ(spec.id, "CartPole-v1");
  EXPECT_EQ(spec.max_episode_steps, 500);
  EXPECT_TRUE(spec.has_reward_threshold);
  EXPECT_EQ(spec.reward_threshold, 475.0);
  EXPECT_EQ(spec.render_fps, 50);
  EXPECT_TRUE(spec.action_space.is_discrete());
  EXPECT_EQ(spec.action_space.n, 2);
  ASSERT_EQ(spec.obs_dim(), 4);
  EXPECT_FLOAT_EQ(spec.observation_space.high[0], 4.8f);
  EXPECT_TRUE(std::isinf(spec.observation_space.high[1]));
  EXPECT_FLOAT_EQ(spec.observation_space.high[2], 0.41887903f);
  EXPECT_FLOAT_EQ(spec.observation_space.low[2], -0.41887903f);
}

// Gymnasium's doctest: reset(seed=42) then step(1), and seed 43 then step(0).
TYPED_TEST(CartPoleTest, GoldenStepsFromGymnasiumDoctests) {
  auto env = this->Make(2);
  env->Reset(0);
  env->SetStates(
      0, 2, {0.0273956f, -0.00611216f, 0.03585979f, 0.0197368f, 0.01522993f, -0.04562247f, -0.04799704f, 0.03392126f});
  StepWith(*env, {1, 0});
  const std::vector<float> obs = this->Obs(*env);
  const float expected[8] = {0.02727336f, 0.18847767f,  0.03625453f,  -0.26141977f,
                             0.01431748f, -0.24002443f, -0.04731862f, 0.3110827f};
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(obs[k], expected[k], 1e-6) << k;
  const std::vector<float> rewards = Host(env->rewards(), 2, this->kDevice);
  EXPECT_EQ(rewards[0], 1.0f);
  EXPECT_EQ(Host(env->terminated(), 2, this->kDevice)[0], 0);
}

TYPED_TEST(CartPoleTest, ResetIsUniformInTheSmallBoxAndSeeded) {
  auto env = this->Make(1024);
  env->Reset(123);
  const std::vector<float> a = this->Obs(*env);
  for (float v : a) {
    EXPECT_GE(v, -0.05f);
    EXPECT_LT(v, 0.05f);
  }
  env->Reset(123);
  EXPECT_EQ(this->Obs(*env), a);
  env->Reset(124);
  EXPECT_NE(this->Obs(*env), a);
  // Envs of one batch start differently.
  EXPECT_NE(std::vector<float>(a.begin(), a.begin() + 4), std::vector<float>(a.begin() + 4, a.begin() + 8));
}

// Env i's trajectory depends on (seed, i) only: batch sizes 1, 7 and 1024 agree exactly.
TYPED_TEST(CartPoleTest, TrajectoryOfEnvIDoesNotDependOnBatchSize) {
  std::vector<std::vector<float>> first_rows;
  for (int64_t n : {1, 7, 1024}) {
    auto env = this->Make(n);
    env->Reset(5);
    env->StepRandom(300);  // several episodes: exercises autoreset and the per-env counters
    std::vector<float> obs = this->Obs(*env);
    first_rows.emplace_back(obs.begin(), obs.begin() + 4);
    if (n == 1024) {
      auto seven = this->Make(7);
      seven->Reset(5);
      seven->StepRandom(300);
      std::vector<float> obs7 = this->Obs(*seven);
      EXPECT_EQ(std::vector<float>(obs.begin() + 24, obs.begin() + 28),
                std::vector<float>(obs7.begin() + 24, obs7.end()));
    }
  }
  EXPECT_EQ(first_rows[0], first_rows[1]);
  EXPECT_EQ(first_rows[0], first_rows[2]);
}

TYPED_TEST(CartPoleTest, StepByStepEqualsFusedSteps) {
  auto a = this->Make(64), b = this->Make(64);
  a->Reset(9);
  b->Reset(9);
  for (int t = 0; t < 120; ++t) a->StepRandom(1);
  b->StepRandom(120);
  EXPECT_EQ(this->Obs(*a), this->Obs(*b));
  EXPECT_EQ(Host(a->episode_returns(), 64, this->kDevice), Host(b->episode_returns(), 64, this->kDevice));
}

// Always pushing right tips the pole over within a few dozen steps: the terminal step has
// reward 1, the final observation is past a threshold, and obs is already the next episode's.
TYPED_TEST(CartPoleTest, TerminalStepReportsFinalObsAndResets) {
  auto env = this->Make(7);
  env->Reset(1);
  std::vector<float> returns(7, 0.0f);
  bool ended[7] = {};
  for (int t = 1; t <= 200; ++t) {
    StepWith(*env, std::vector<int32_t>(7, 1));
    const auto term = Host(env->terminated(), 7, this->kDevice);
    const auto trunc = Host(env->truncated(), 7, this->kDevice);
    const auto rewards = Host(env->rewards(), 7, this->kDevice);
    const auto obs = this->Obs(*env);
    const auto final_obs = Host(env->final_obs(), 28, this->kDevice);
    const auto ep_returns = Host(env->episode_returns(), 7, this->kDevice);
    const auto ep_lengths = Host(env->episode_lengths(), 7, this->kDevice);
    for (int i = 0; i < 7; ++i) {
      EXPECT_EQ(rewards[i], 1.0f);
      EXPECT_EQ(trunc[i], 0);
      if (ended[i]) continue;
      returns[i] += rewards[i];
      if (!term[i]) continue;
      ended[i] = true;
      const float* f = &final_obs[i * 4];
      EXPECT_TRUE(std::fabs(f[0]) > 2.4f || std::fabs(f[2]) > 0.20943951f) << "env " << i;
      for (int k = 0; k < 4; ++k) EXPECT_LT(std::fabs(obs[i * 4 + k]), 0.05f);  // fresh episode
      EXPECT_EQ(ep_returns[i], returns[i]);
      EXPECT_EQ(ep_lengths[i], t);
    }
  }
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(ended[i]) << "env " << i;
}

// A simple balancing controller keeps the pole up: the 500th step truncates (not terminates),
// with return and length 500, and the env starts over.
TYPED_TEST(CartPoleTest, FiveHundredthStepTruncates) {
  auto env = this->Make(1);
  env->Reset(3);
  for (int t = 1; t <= 500; ++t) {
    const auto obs = this->Obs(*env);
    const int32_t action = obs[2] + 0.5f * obs[3] > 0 ? 1 : 0;
    StepWith(*env, {action});
    const uint8_t term = Host(env->terminated(), 1, this->kDevice)[0];
    const uint8_t trunc = Host(env->truncated(), 1, this->kDevice)[0];
    ASSERT_EQ(term, 0) << "the controller dropped the pole at step " << t;
    ASSERT_EQ(trunc, t == 500 ? 1 : 0) << "step " << t;
  }
  EXPECT_EQ(Host(env->episode_lengths(), 1, this->kDevice)[0], 500);
  EXPECT_EQ(Host(env->episode_returns(), 1, this->kDevice)[0], 500.0f);
  const auto final_obs = Host(env->final_obs(), 4, this->kDevice);
  const auto obs = this->Obs(*env);
  EXPECT_NE(final_obs, obs);
  for (float v : obs) EXPECT_LT(std::fabs(v), 0.05f);
  StepWith(*env, {0});
  EXPECT_EQ(Host(env->truncated(), 1, this->kDevice)[0], 0);  // the step count restarted
}

}  // namespace
}  // namespace cugym
