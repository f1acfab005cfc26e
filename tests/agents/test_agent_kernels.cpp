// Replay insertion and sampling, exploration and TD targets (agent_kernels.h through AgentOps).
#include "agents/agent_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace cugym::agent {
namespace {

struct HostReplay {
  explicit HostReplay(int64_t capacity, int obs_dim)
      : obs(capacity * obs_dim), next_obs(capacity * obs_dim), actions(capacity), rewards(capacity), dones(capacity),
        arrays{obs.data(), next_obs.data(), actions.data(), rewards.data(), dones.data(), &size, &draws, capacity,
               obs_dim} {}
  std::vector<float> obs, next_obs;
  std::vector<int32_t> actions;
  std::vector<float> rewards, dones;
  int64_t size = 0;
  uint32_t draws = 0;
  ReplayArrays arrays;
};

TEST(AgentKernels, TruncationBootstrapsFromTheFinalObservationTerminationDoesNot) {
  HostReplay replay(4, 1);
  auto ops = MakeCpuAgentOps();
  const float obs[3] = {1, 2, 3}, next_obs[3] = {10, 20, 30}, final_obs[3] = {-1, -2, -3}, rewards[3] = {1, 1, 0};
  const int32_t actions[3] = {0, 1, 2};
  const uint8_t terminated[3] = {0, 1, 0}, truncated[3] = {0, 0, 1};
  ops->AddTransitions(replay.arrays, 3, 3, obs, actions, rewards, next_obs, final_obs, terminated, truncated);
  EXPECT_EQ(replay.size, 3);
  ops->AddTransitions(replay.arrays, 2, 3, obs, actions, rewards, next_obs, final_obs, terminated, truncated);
  EXPECT_EQ(replay.size, 4);  // at most the capacity
  ops->AddTransitions(replay.arrays, 3, 3, obs, actions, rewards, next_obs, final_obs, terminated, truncated);
  // Rows 3, 0, 1 (the ring wraps).
  EXPECT_EQ(replay.obs[3], 1);
  EXPECT_EQ(replay.next_obs[3], 10);  // still running: the next observation
  EXPECT_EQ(replay.dones[3], 0);
  EXPECT_EQ(replay.next_obs[0], -2);  // terminated: the final observation, no bootstrap
  EXPECT_EQ(replay.dones[0], 1);
  EXPECT_EQ(replay.next_obs[1], -3);  // truncated: the final observation, and bootstrap
  EXPECT_EQ(replay.dones[1], 0);
  EXPECT_EQ(replay.actions[1], 2);
}

TEST(AgentKernels, SamplingIsSeededUniformAndCopiesWholeTransitions) {
  const int64_t size = 50;
  HostReplay replay(size, 2);
  replay.size = size;
  for (int64_t r = 0; r < size; ++r) {
    replay.obs[2 * r] = static_cast<float>(r);
    replay.obs[2 * r + 1] = static_cast<float>(-r);
    replay.next_obs[2 * r] = static_cast<float>(r + 1000);
    replay.actions[r] = static_cast<int32_t>(r);
    replay.rewards[r] = static_cast<float>(r) * 0.5f;
  }
  auto ops = MakeCpuAgentOps();
  std::vector<float> obs(2 * 64), next_obs(2 * 64), rewards(64), dones(64);
  std::vector<int32_t> actions(64);
  const Minibatch batch{obs.data(), next_obs.data(), actions.data(), rewards.data(), dones.data()};
  std::vector<int> hits(size, 0);
  std::vector<int32_t> first;
  for (uint32_t draw = 0; draw < 200; ++draw) {
    ASSERT_EQ(replay.draws, draw);  // each minibatch advances the counter
    ops->Sample(replay.arrays, batch, 64, 7);
    if (draw == 0) first = actions;
    for (int j = 0; j < 64; ++j) {
      const int32_t row = actions[j];
      ASSERT_GE(row, 0);
      ASSERT_LT(row, size);
      EXPECT_EQ(obs[2 * j], static_cast<float>(row));
      EXPECT_EQ(obs[2 * j + 1], static_cast<float>(-row));
      EXPECT_EQ(next_obs[2 * j], static_cast<float>(row + 1000));
      EXPECT_EQ(rewards[j], static_cast<float>(row) * 0.5f);
      ++hits[row];
    }
  }
  for (int h : hits) EXPECT_NEAR(h, 200 * 64 / size, 80);
  replay.draws = 0;
  ops->Sample(replay.arrays, batch, 64, 7);
  EXPECT_EQ(actions, first);  // same seed and draw, same minibatch
  replay.draws = 0;
  ops->Sample(replay.arrays, batch, 64, 8);
  EXPECT_NE(actions, first);
}

TEST(AgentKernels, EpsilonGreedyMixesAtTheRequestedRate) {
  auto ops = MakeCpuAgentOps();
  const int64_t n = 20000;
  std::vector<int32_t> actions(n, 1);
  ops->EpsilonGreedy(actions.data(), n, 0.0f, 4, 99, {});
  for (int32_t a : actions) ASSERT_EQ(a, 1);
  ops->EpsilonGreedy(actions.data(), n, 0.3f, 4, 99, {});
  int counts[4] = {};
  for (int32_t a : actions) counts[a]++;
  // 70% keep action 1, the other 30% are uniform over the 4 actions.
  EXPECT_NEAR(counts[0], n * 0.075, 250);
  EXPECT_NEAR(counts[1], n * (0.7 + 0.075), 300);
  EXPECT_NEAR(counts[3], n * 0.075, 250);
}

TEST(AgentKernels, HoldDurationsAreHeavyTailedAndCapped) {
  EXPECT_EQ(HoldDuration(1.0f, 2.0f, 100), 1);
  EXPECT_EQ(HoldDuration(0.25f, 2.0f, 100), 4);    // 0.25^-1
  EXPECT_EQ(HoldDuration(0.25f, 3.0f, 100), 2);    // 0.25^-(1/2)
  EXPECT_EQ(HoldDuration(1e-6f, 2.0f, 100), 100);  // capped
}

TEST(AgentKernels, EzGreedyRepeatsItsRandomActionsForHeavyTailedSpans) {
  // Epsilon 1 with holds: each env's actions form runs of one random action; a run's length n
  // has P(n >= k) = k^(1 - mu) (runs of the same action drawn twice in a row merge, which only
  // lengthens them; with 1000 actions that is rare). The greedy actions (-1) never show.
  auto ops = MakeCpuAgentOps();
  const int64_t n = 64;
  const int steps = 2000, num_actions = 1000;
  std::vector<int32_t> held(n), left(n, 0);
  const ExploreHold hold{held.data(), left.data(), 2.0f, 50};
  std::vector<std::vector<int32_t>> trace(n);
  for (int t = 0; t < steps; ++t) {
    std::vector<int32_t> actions(n, -1);
    ops->EpsilonGreedy(actions.data(), n, 1.0f, num_actions, StepKey(5, RngStream::kExploration, t), hold);
    for (int64_t i = 0; i < n; ++i) trace[i].push_back(actions[i]);
  }
  int64_t runs = 0, at_least_4 = 0, at_least_50 = 0, longer = 0, greedy = 0;
  for (const auto& actions : trace) {
    for (size_t start = 0; start < actions.size();) {
      size_t end = start;
      while (end < actions.size() && actions[end] == actions[start]) ++end;
      if (end < actions.size() && start > 0) {  // whole runs only
        ++runs;
        at_least_4 += end - start >= 4;
        at_least_50 += end - start >= 50;
        longer += end - start > 50;
      }
      greedy += actions[start] < 0;
      start = end;
    }
  }
  ASSERT_GT(runs, 5000);
  EXPECT_NEAR(static_cast<double>(at_least_4) / runs, 0.25, 0.03);
  EXPECT_NEAR(static_cast<double>(at_least_50) / runs, 0.02, 0.01);
  EXPECT_LE(longer, 2);  // only from merged runs
  EXPECT_EQ(greedy, 0);

  // A running hold wins over the greedy action even at epsilon 0; without a hold, epsilon 0
  // leaves the greedy action alone.
  std::vector<int32_t> actions(n, 7);
  for (int64_t i = 0; i < n; ++i) left[i] = 1;
  ops->EpsilonGreedy(actions.data(), n, 0.0f, num_actions, 11, hold);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(actions[i], held[i]);
  std::fill(actions.begin(), actions.end(), 7);
  ops->EpsilonGreedy(actions.data(), n, 0.0f, num_actions, 12, hold);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(actions[i], 7);
}

TEST(AgentKernels, TdTargetsStopAtTermination) {
  auto ops = MakeCpuAgentOps();
  const float rewards[2] = {1.0f, 1.0f}, dones[2] = {0.0f, 1.0f}, next_q[2] = {10.0f, 10.0f};
  float targets[2];
  ops->TdTargets(rewards, dones, next_q, 0.9f, targets, 2);
  EXPECT_FLOAT_EQ(targets[0], 10.0f);
  EXPECT_FLOAT_EQ(targets[1], 1.0f);
}

TEST(AgentKernels, EpisodeRingKeepsTheLastEpisodes) {
  auto ops = MakeCpuAgentOps();
  std::vector<float> returns(4);
  std::vector<int32_t> lengths(4);
  unsigned long long count = 0;
  const EpisodeRing ring{returns.data(), lengths.data(), &count, 4};
  const uint8_t term[3] = {1, 0, 1}, trunc[3] = {0, 0, 0};
  const float ret[3] = {5, 6, 7};
  const int32_t len[3] = {50, 60, 70};
  for (int k = 0; k < 3; ++k) ops->CollectEpisodes(term, trunc, ret, len, 3, ring);
  EXPECT_EQ(count, 6u);
  EXPECT_EQ(returns[(count - 1) % 4], 7);
  EXPECT_EQ(lengths[(count - 2) % 4], 50);
}

}  // namespace
}  // namespace cugym::agent
