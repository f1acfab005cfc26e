// The batched runner's semantics, pinned with a counter env whose every value is predictable
// (the same idea as Gymnasium's tests/vector/test_autoreset_mode.py): same-step autoreset,
// final_obs, separate terminated/truncated flags (both on a terminal last step), episode
// statistics, and autoreset turned off. Runs on the CPU back end, which is the oracle.
#include <gtest/gtest.h>

#include "envs/backend_cpu.h"
#include "tests/envs/env_test_util.h"

namespace cugym {

// obs = count; each step adds 1 to count and gives reward = action; terminates when count
// reaches the env's limit (the second state value); truncates after 5 steps.
struct CounterEnv {
  struct Params {};
  struct State {
    float count, limit;
  };
  using Action = int32_t;
  static constexpr int kNumActions = 4;
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = 1;
  static constexpr int kStateDim = 2;
  static EnvSpec Spec() {
    EnvSpec spec;
    spec.id = "Counter-v0";
    spec.observation_space = Space::Box({0.0f}, {100.0f});
    spec.action_space = Space::Discrete(kNumActions);
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 5;
    return spec;
  }
  static State Reset(const Params&, Rng& rng) { return State{0.0f, 2.0f + static_cast<float>(rng.UniformInt(3))}; }
  static StepResult Step(const Params&, State& s, const Action* action, Rng&) {
    s.count += 1.0f;
    return StepResult{static_cast<float>(*action), s.count >= s.limit};
  }
  static void Observe(const Params&, const State& s, float* obs) { obs[0] = s.count; }
  static void ToFlat(const State& s, float* flat) {
    flat[0] = s.count;
    flat[1] = s.limit;
  }
  static State FromFlat(const float* flat) { return State{flat[0], flat[1]}; }
};

namespace {

using testing::Host;
using testing::StepWith;

struct Snapshot {
  std::vector<float> obs, final_obs, rewards, returns;
  std::vector<uint8_t> term, trunc;
  std::vector<int32_t> lengths;
};

Snapshot Take(const VectorEnv& env) {
  const int64_t n = env.num_envs();
  const Device d = env.device();
  return {Host(env.obs(), n, d),
          Host(env.final_obs(), n, d),
          Host(env.rewards(), n, d),
          Host(env.episode_returns(), n, d),
          Host(env.terminated(), n, d),
          Host(env.truncated(), n, d),
          Host(env.episode_lengths(), n, d)};
}

std::unique_ptr<VectorEnv> MakeCounters(std::vector<float> limits) {
  auto env = MakeCpuVectorEnv<CounterEnv>(static_cast<int64_t>(limits.size()));
  env->Reset(0);
  std::vector<float> states;
  for (float limit : limits) {
    states.push_back(0.0f);
    states.push_back(limit);
  }
  env->SetStates(0, static_cast<int64_t>(limits.size()), states);
  return env;
}

TEST(VectorEnvSemantics, SameStepAutoresetKeepsTheFinalObservation) {
  auto env = MakeCounters({2, 3, 3});
  StepWith(*env, {1, 2, 3});
  Snapshot s = Take(*env);
  EXPECT_EQ(s.obs, (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(s.term, (std::vector<uint8_t>{0, 0, 0}));
  StepWith(*env, {1, 2, 3});
  s = Take(*env);
  EXPECT_EQ(s.obs, (std::vector<float>{0, 2, 2}));  // env 0 ended and was reset in this step
  EXPECT_EQ(s.term, (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(s.trunc, (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(s.rewards, (std::vector<float>{1, 2, 3}));  // the terminal step's reward counts
  EXPECT_EQ(s.final_obs[0], 2.0f);
  EXPECT_EQ(s.returns[0], 2.0f);
  EXPECT_EQ(s.lengths[0], 2);
  StepWith(*env, {1, 2, 3});
  s = Take(*env);
  EXPECT_EQ(s.obs, (std::vector<float>{1, 0, 0}));
  EXPECT_EQ(s.term, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(s.final_obs[1], 3.0f);
  EXPECT_EQ(s.returns[1], 6.0f);
  EXPECT_EQ(s.returns[2], 9.0f);
  EXPECT_EQ(s.lengths[2], 3);
  // The reset limits come from the env's own stream: in [2, 4].
  for (float v : env->GetStates(0, 3)) EXPECT_LE(v, 4.0f);
}

TEST(VectorEnvSemantics, TruncationIsSeparateFromTerminationAndBothCanHold) {
  auto env = MakeCounters({100, 5});
  for (int t = 1; t <= 4; ++t) StepWith(*env, {1, 1});
  Snapshot s = Take(*env);
  EXPECT_EQ(s.trunc, (std::vector<uint8_t>{0, 0}));
  StepWith(*env, {1, 1});
  s = Take(*env);
  EXPECT_EQ(s.trunc, (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(s.term, (std::vector<uint8_t>{0, 1}));  // env 1 terminated on its last allowed step
  EXPECT_EQ(s.final_obs, (std::vector<float>{5, 5}));
  EXPECT_EQ(s.lengths, (std::vector<int32_t>{5, 5}));
  EXPECT_EQ(s.obs, (std::vector<float>{0, 0}));
}

TEST(VectorEnvSemantics, AutoresetOffKeepsStepping) {
  auto env = MakeCounters({2});
  env->set_autoreset(false);
  EXPECT_FALSE(env->autoreset());
  StepWith(*env, {3});
  StepWith(*env, {3});
  Snapshot s = Take(*env);
  EXPECT_EQ(s.term[0], 1);
  EXPECT_EQ(s.obs[0], 2.0f);
  EXPECT_EQ(s.final_obs[0], 2.0f);
  EXPECT_EQ(s.returns[0], 6.0f);
  StepWith(*env, {3});
  EXPECT_EQ(Take(*env).obs[0], 3.0f);
}

TEST(VectorEnvSemantics, ResetMaskedResetsOnlyTheMaskedEnvs) {
  auto env = MakeCounters({100, 100, 100});
  env->set_autoreset(false);
  StepWith(*env, {1, 2, 3});
  StepWith(*env, {1, 2, 3});
  const std::vector<uint8_t> mask = {0, 1, 0};
  env->ResetMasked(mask.data());
  Snapshot s = Take(*env);
  EXPECT_EQ(s.obs, (std::vector<float>{2, 0, 2}));
  EXPECT_EQ(s.rewards, (std::vector<float>{1, 0, 3}));
  StepWith(*env, {1, 1, 1});
  EXPECT_EQ(Take(*env).obs, (std::vector<float>{3, 1, 3}));
  EXPECT_THROW(env->ResetMasked(nullptr), std::invalid_argument);
}

TEST(VectorEnvSemantics, SetOutputsWritesIntoTheCallersArrays) {
  auto env = MakeCounters({2, 100});
  std::vector<float> obs(2, -1), rewards(2, -1);
  std::vector<uint8_t> term(2, 7), trunc(2, 7);
  env->SetOutputs({obs.data(), rewards.data(), term.data(), trunc.data()});
  StepWith(*env, {3, 1});
  EXPECT_EQ(env->obs(), obs.data());
  EXPECT_EQ(obs, (std::vector<float>{1, 1}));
  EXPECT_EQ(rewards, (std::vector<float>{3, 1}));
  EXPECT_EQ(term, (std::vector<uint8_t>{0, 0}));
  EXPECT_EQ(trunc, (std::vector<uint8_t>{0, 0}));
  // A second set of arrays for the next step: the first keeps its values.
  std::vector<float> obs2(2, -1), rewards2(2, -1);
  std::vector<uint8_t> term2(2, 7), trunc2(2, 7);
  env->SetOutputs({obs2.data(), rewards2.data(), term2.data(), trunc2.data()});
  StepWith(*env, {2, 2});
  EXPECT_EQ(obs, (std::vector<float>{1, 1}));
  EXPECT_EQ(obs2, (std::vector<float>{0, 2}));  // env 0 ended (count 2) and was reset
  EXPECT_EQ(term2, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(Host(env->final_obs(), 2, Device::kCpu)[0], 2.0f);
  env->SetOutputs({});
  EXPECT_NE(env->obs(), obs2.data());
}

TEST(VectorEnvSemantics, MisuseIsAnError) {
  auto env = MakeCpuVectorEnv<CounterEnv>(2);
  EXPECT_THROW(env->StepRandom(1), std::logic_error);  // no Reset yet
  env->Reset(0);
  EXPECT_THROW(env->Step(static_cast<const float*>(nullptr)), std::invalid_argument);
  EXPECT_THROW(env->StepRandom(-1), std::invalid_argument);
}

TEST(VectorEnvSemantics, RandomActionsCoverTheActionSpace) {
  auto env = MakeCounters(std::vector<float>(4096, 1000));
  env->StepRandom(1);
  int counts[4] = {};
  for (float r : Host(env->rewards(), 4096, Device::kCpu)) counts[static_cast<int>(r)]++;
  for (int c : counts) EXPECT_NEAR(c, 1024, 130);
}

}  // namespace

template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<CounterEnv>(int64_t);

}  // namespace cugym
