// Replay insertion and sampling, exploration, TD targets and episode bookkeeping (agent_kernels.h
// through the agents' device ops, device_ops.h) on every back end, and CUDA against the CPU bit for bit (the CUDA cases
// skip without a GPU).
#include "agents/common/episode_ops.h"
#include "agents/common/explore_ops.h"
#include "agents/off_policy/replay_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "core/memory.h"
#include "nn/backend.h"
#include "tests/gpu_skip.h"

namespace cugym::agent {
namespace {

template <class T>
Buffer<T> OnDevice(Device device, const std::vector<T>& values) {
  Buffer<T> buffer(device, values.size());
  if (!values.empty()) buffer.FromHost(values.data(), values.size());
  return buffer;
}

// The ops of one device, on the stream of an nn back end as in the DQN loop.
struct Ops {
  explicit Ops(Device device)
      : backend(nn::MakeBackend(device)),
        episodes(MakeOps<EpisodeOps>(device, backend->native_stream())),
        replay(MakeOps<ReplayOps>(device, backend->native_stream())),
        explore(MakeOps<ExploreOps>(device, backend->native_stream())) {}
  std::shared_ptr<nn::Backend> backend;
  std::unique_ptr<EpisodeOps> episodes;
  std::unique_ptr<ReplayOps> replay;
  std::unique_ptr<ExploreOps> explore;
};

// A replay memory on one device, with host views for the checks.
struct Replay {
  Replay(Device device, int64_t capacity, int obs_dim, int64_t stride = 1)
      : obs(device, capacity * obs_dim),
        next_obs(device, capacity * obs_dim),
        actions(device, capacity),
        rewards(device, capacity),
        terminals(device, capacity),
        ends(device, capacity),
        size(device, 1),
        head(device, 1),
        draws(device, 1) {
    for (Buffer<float>* b : {&obs, &next_obs, &rewards, &terminals}) b->Zero();
    actions.Zero();
    ends.Zero();
    size.Zero();
    head.Zero();
    draws.Zero();
    arrays = ReplayArrays{obs.data(),  next_obs.data(), actions.data(), rewards.data(), terminals.data(), ends.data(),
                          size.data(), head.data(),     draws.data(),   capacity,       obs_dim,          stride};
  }
  Buffer<float> obs, next_obs;
  Buffer<int32_t> actions;
  Buffer<float> rewards, terminals;
  Buffer<uint8_t> ends;
  Buffer<int64_t> size, head;
  Buffer<uint32_t> draws;
  ReplayArrays arrays;
};

// Host copies of a replay memory's arrays, and ReplayArrays over them (for NStepTransition).
struct HostReplay {
  explicit HostReplay(const Replay& r)
      : obs(r.obs.ToHost()),
        next_obs(r.next_obs.ToHost()),
        rewards(r.rewards.ToHost()),
        terminals(r.terminals.ToHost()),
        actions(r.actions.ToHost()),
        ends(r.ends.ToHost()),
        size(r.size.ToHost()),
        head(r.head.ToHost()),
        draws(r.draws.ToHost()),
        arrays{obs.data(),  next_obs.data(), actions.data(), rewards.data(),    terminals.data(), ends.data(),
               size.data(), head.data(),     draws.data(),   r.arrays.capacity, r.arrays.obs_dim, r.arrays.stride} {}
  std::vector<float> obs, next_obs, rewards, terminals;
  std::vector<int32_t> actions;
  std::vector<uint8_t> ends;
  std::vector<int64_t> size, head;
  std::vector<uint32_t> draws;
  ReplayArrays arrays;
};

struct Batch {
  Batch(Device device, int64_t b, int obs_dim)
      : obs(device, b * obs_dim),
        next_obs(device, b * obs_dim),
        actions(device, b),
        rewards(device, b),
        bootstrap(device, b),
        rows(device, b),
        weights(device, b),
        view{obs.data(),       next_obs.data(), actions.data(), rewards.data(),
             bootstrap.data(), rows.data(),     weights.data()} {}
  Buffer<float> obs, next_obs;
  Buffer<int32_t> actions;
  Buffer<float> rewards, bootstrap;
  Buffer<int64_t> rows;
  Buffer<float> weights;
  Minibatch view;
};

// A priority tree for a replay of `capacity` rows on one device, every leaf 0 and the largest
// priority 1, as DqnAgent starts it.
struct Tree {
  Tree(Device device, int64_t capacity, float alpha, float beta0, int64_t beta_updates) {
    SizePriorityTree(view, capacity);
    nodes = Buffer<float>(device, 2 * view.leaves);
    nodes.Zero();
    const float one = 1.0f;
    max_leaf = OnDevice(device, std::vector<float>{one});
    min_prob = Buffer<float>(device, 1);
    view.nodes = nodes.data();
    view.max_leaf = max_leaf.data();
    view.min_prob = min_prob.data();
    view.alpha = alpha;
    view.eps = 1e-6f;
    view.beta0 = beta0;
    view.beta_updates = beta_updates;
  }
  std::vector<float> Leaves(int64_t capacity) const {
    const std::vector<float> all = nodes.ToHost();
    return std::vector<float>(all.begin() + view.leaves, all.begin() + view.leaves + capacity);
  }
  // Every inner node is the float sum of its children.
  void ExpectSumsOfChildren() const {
    const std::vector<float> all = nodes.ToHost();
    for (int64_t node = 1; node < view.leaves; ++node)
      ASSERT_EQ(all[node], all[2 * node] + all[2 * node + 1]) << "node " << node;
  }
  Buffer<float> nodes, max_leaf, min_prob;
  PriorityTree view{nullptr, nullptr, nullptr, 1, 0};
};

struct Ring {
  Ring(Device device, int64_t capacity) : returns(device, capacity), lengths(device, capacity), count(device, 1) {
    returns.Zero();
    lengths.Zero();
    count.Zero();
    view = EpisodeRing{returns.data(), lengths.data(), count.data(), capacity};
    on_device.FromHost(&view, 1);
  }
  Buffer<float> returns;
  Buffer<int32_t> lengths;
  Buffer<unsigned long long> count;
  EpisodeRing view;
  Buffer<EpisodeRing> on_device{returns.device(), 1};  // [1] the view, as CollectEpisodes reads rings
};

// One vector step's outputs on a device, as AddTransitions and CollectEpisodes read them.
struct StepData {
  StepData(Device device, const std::vector<float>& o, const std::vector<int32_t>& a, const std::vector<float>& r,
           const std::vector<float>& next, const std::vector<float>& final_o, const std::vector<uint8_t>& term,
           const std::vector<uint8_t>& trunc)
      : obs(OnDevice(device, o)),
        actions(OnDevice(device, a)),
        rewards(OnDevice(device, r)),
        next_obs(OnDevice(device, next)),
        final_obs(OnDevice(device, final_o)),
        terminated(OnDevice(device, term)),
        truncated(OnDevice(device, trunc)) {}
  // At the replay's head, which then moves on.
  void AddTo(ReplayOps& ops, const Replay& replay) const {
    ops.AddTransitions(replay.arrays, static_cast<int64_t>(actions.size()), obs.data(), actions.data(), rewards.data(),
                       next_obs.data(), final_obs.data(), terminated.data(), truncated.data());
  }
  void CollectInto(EpisodeOps& ops, const Ring& ring) const {
    // The episode statistics are the rewards here: any float per env will do.
    ops.CollectEpisodes(terminated.data(), truncated.data(), rewards.data(), actions.data(), 1,
                        static_cast<int64_t>(actions.size()), ring.on_device.data());
  }
  Buffer<float> obs;
  Buffer<int32_t> actions;
  Buffer<float> rewards, next_obs, final_obs;
  Buffer<uint8_t> terminated, truncated;
};

class AgentOpsTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { CUGYM_SKIP_WITHOUT_GPU(GetParam()); }
  Device device() const { return GetParam(); }
};

TEST_P(AgentOpsTest, TruncationBootstrapsFromTheFinalObservationTerminationDoesNot) {
  Ops ops(device());
  Replay replay(device(), 4, 1);
  const StepData step(device(), {1, 2, 3}, {0, 1, 2}, {1, 1, 0}, {10, 20, 30}, {-1, -2, -3}, {0, 1, 0}, {0, 0, 1});
  const int64_t three = 3;
  replay.head.FromHost(&three, 1);  // the insertion writes where the device's head is
  step.AddTo(*ops.replay, replay);  // rows 3, 0, 1 (the ring wraps)
  EXPECT_EQ(replay.size.ToHost()[0], 3);
  EXPECT_EQ(replay.head.ToHost()[0], 2);
  EXPECT_EQ(replay.obs.ToHost(), (std::vector<float>{2, 3, 0, 1}));
  step.AddTo(*ops.replay, replay);        // rows 2, 3, 0
  EXPECT_EQ(replay.size.ToHost()[0], 4);  // at most the capacity
  EXPECT_EQ(replay.head.ToHost()[0], 1);
  step.AddTo(*ops.replay, replay);  // rows 1, 2, 3
  EXPECT_EQ(replay.head.ToHost()[0], 0);
  const std::vector<float> obs = replay.obs.ToHost(), next = replay.next_obs.ToHost(),
                           terminals = replay.terminals.ToHost();
  EXPECT_EQ(obs[1], 1);
  EXPECT_EQ(next[1], 10);  // still running: the next observation
  EXPECT_EQ(terminals[1], 0);
  EXPECT_EQ(next[2], -2);  // terminated: the final observation, no bootstrap
  EXPECT_EQ(terminals[2], 1);
  EXPECT_EQ(next[3], -3);  // truncated: the final observation, and bootstrap
  EXPECT_EQ(terminals[3], 0);
  EXPECT_EQ(replay.actions.ToHost()[3], 2);
}

TEST_P(AgentOpsTest, RefusesMoreTransitionsThanTheReplayHolds) {
  // Two envs of one step would share a row (and race for it on the GPU).
  Ops ops(device());
  Replay replay(device(), 2, 1);
  const StepData step(device(), {1, 2, 3}, {0, 1, 2}, {1, 1, 0}, {10, 20, 30}, {-1, -2, -3}, {0, 1, 0}, {0, 0, 1});
  try {
    step.AddTo(*ops.replay, replay);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "AddTransitions: 3 transitions in one step exceed the replay capacity 2");
  }
}

TEST_P(AgentOpsTest, SamplingIsSeededUniformAndCopiesWholeTransitions) {
  const int64_t size = 50;
  Replay replay(device(), size, 2);
  std::vector<float> obs(2 * size), next_obs(2 * size, 0), rewards(size);
  std::vector<int32_t> actions(size);
  for (int64_t r = 0; r < size; ++r) {
    obs[2 * r] = static_cast<float>(r);
    obs[2 * r + 1] = static_cast<float>(-r);
    next_obs[2 * r] = static_cast<float>(r + 1000);
    actions[r] = static_cast<int32_t>(r);
    rewards[r] = static_cast<float>(r) * 0.5f;
  }
  replay.obs.FromHost(obs.data(), obs.size());
  replay.next_obs.FromHost(next_obs.data(), next_obs.size());
  replay.actions.FromHost(actions.data(), size);
  replay.rewards.FromHost(rewards.data(), size);
  replay.size.FromHost(&size, 1);
  Ops ops(device());
  EXPECT_EQ(HostReplay(replay).head[0], 0);  // a full ring written up to its end: every row is stored
  Batch batch(device(), 64, 2);
  std::vector<int> hits(size, 0);
  std::vector<int32_t> first;
  for (uint32_t draw = 0; draw < 200; ++draw) {
    ASSERT_EQ(replay.draws.ToHost()[0], draw);  // each minibatch advances the counter
    ops.replay->Sample(replay.arrays, batch.view, 64, 7, 1, 0.9f, {});
    const std::vector<int32_t> rows = batch.actions.ToHost();
    const std::vector<float> b_obs = batch.obs.ToHost(), b_next = batch.next_obs.ToHost(),
                             b_rewards = batch.rewards.ToHost();
    if (draw == 0) first = rows;
    for (int j = 0; j < 64; ++j) {
      const int32_t row = rows[j];
      ASSERT_GE(row, 0);
      ASSERT_LT(row, size);
      EXPECT_EQ(b_obs[2 * j], static_cast<float>(row));
      EXPECT_EQ(b_obs[2 * j + 1], static_cast<float>(-row));
      EXPECT_EQ(b_next[2 * j], static_cast<float>(row + 1000));
      EXPECT_EQ(b_rewards[j], static_cast<float>(row) * 0.5f);
      ++hits[row];
    }
  }
  for (int h : hits) EXPECT_NEAR(h, 200 * 64 / size, 80);
  const uint32_t zero = 0;
  replay.draws.FromHost(&zero, 1);
  ops.replay->Sample(replay.arrays, batch.view, 64, 7, 1, 0.9f, {});
  EXPECT_EQ(batch.actions.ToHost(), first);  // same seed and draw, same minibatch
  replay.draws.FromHost(&zero, 1);
  ops.replay->Sample(replay.arrays, batch.view, 64, 8, 1, 0.9f, {});
  EXPECT_NE(batch.actions.ToHost(), first);
}

TEST_P(AgentOpsTest, EpsilonGreedyMixesAtTheRequestedRate) {
  Ops ops(device());
  const int64_t n = 20000;
  Buffer<int32_t> actions = OnDevice(device(), std::vector<int32_t>(n, 1));
  ops.explore->EpsilonGreedy(actions.data(), n, 0.0f, 4, 99, {});
  for (int32_t a : actions.ToHost()) ASSERT_EQ(a, 1);
  ops.explore->EpsilonGreedy(actions.data(), n, 0.3f, 4, 99, {});
  int counts[4] = {};
  for (int32_t a : actions.ToHost()) counts[a]++;
  // 70% keep action 1, the other 30% are uniform over the 4 actions.
  EXPECT_NEAR(counts[0], n * 0.075, 250);
  EXPECT_NEAR(counts[1], n * (0.7 + 0.075), 300);
  EXPECT_NEAR(counts[3], n * 0.075, 250);
}

// The schedule DqnAgent::Epsilon computed on the host before epsilon moved to the device.
double HostEpsilon(double start, double end, double fraction, int64_t total_steps, int64_t step) {
  const double duration = fraction * static_cast<double>(total_steps);
  const double slope = (end - start) / duration;
  return std::max(slope * static_cast<double>(step) + start, std::min(start, end));
}

TEST(AgentKernels, ScheduledEpsilonIsTheHostFormulaBitForBit) {
  struct Case {
    double start, end, fraction;
    int64_t total;
  };
  for (const Case& c : {Case{1.0, 0.05, 0.16, 60000}, Case{1.0, 0.1, 0.12, 100000}, Case{1.0, 0.07, 0.2, 300000},
                        Case{0.3, 0.9, 0.5, 1001}, Case{1.0, 1.0, 0.5, 296}, Case{0.5, 0.01, 0.33, 7}}) {
    const EpsilonSchedule schedule{c.start, c.end, c.fraction * static_cast<double>(c.total)};
    for (int64_t step = 0; step <= c.total + 3; ++step) {
      const double host = HostEpsilon(c.start, c.end, c.fraction, c.total, step);
      ASSERT_EQ(ScheduledEpsilon(schedule, step), host) << step;
      ASSERT_EQ(static_cast<float>(ScheduledEpsilon(schedule, step)), static_cast<float>(host)) << step;
    }
  }
}

TEST_P(AgentOpsTest, ExploreTakesEpsilonAndTheStepKeyFromTheDeviceCounters) {
  // A run of 8 envs with holds: Explore reading the counters that AdvanceSteps keeps gives the
  // actions and holds of EpsilonGreedy with the host's epsilon and step key, step by step.
  Ops ops(device());
  const int64_t n = 8, steps = 400, total = n * steps;
  const int num_actions = 3;
  const uint64_t seed = 12345;
  const Buffer<uint64_t> seed_on_device = OnDevice(device(), std::vector<uint64_t>{seed});
  const EpsilonSchedule schedule{1.0, 0.05, 0.5 * static_cast<double>(total)};
  Buffer<StepCounters> counters(device(), 1);
  const StepCounters start{0, 0};
  counters.FromHost(&start, 1);
  Buffer<int32_t> held_a(device(), n), left_a = OnDevice(device(), std::vector<int32_t>(n, 0));
  Buffer<int32_t> held_b(device(), n), left_b = OnDevice(device(), std::vector<int32_t>(n, 0));
  const ExploreHold hold_a{held_a.data(), left_a.data(), 2.0f, 10}, hold_b{held_b.data(), left_b.data(), 2.0f, 10};
  int64_t explored = 0;
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<int32_t> greedy(n);
    for (int64_t i = 0; i < n; ++i) greedy[i] = static_cast<int32_t>((t + i) % num_actions);
    Buffer<int32_t> a = OnDevice(device(), greedy), b = OnDevice(device(), greedy);
    ops.explore->Explore(a.data(), 1, n, counters.data(), schedule, seed_on_device.data(), num_actions, hold_a);
    ops.episodes->AdvanceSteps(counters.data(), n);
    const double epsilon = HostEpsilon(1.0, 0.05, 0.5, total, t * n);
    ops.explore->EpsilonGreedy(b.data(), n, static_cast<float>(epsilon), num_actions,
                               StepKey(seed, RngStream::kExploration, static_cast<uint64_t>(t)), hold_b);
    ASSERT_EQ(a.ToHost(), b.ToHost()) << "vector step " << t;
    ASSERT_EQ(left_a.ToHost(), left_b.ToHost()) << "vector step " << t;
    const std::vector<int32_t> acted = a.ToHost();
    for (int64_t i = 0; i < n; ++i) explored += acted[i] != greedy[i];
    const StepCounters c = counters.ToHost()[0];
    ASSERT_EQ(c.vector_steps, t + 1);
    ASSERT_EQ(c.global_step, (t + 1) * n);
  }
  EXPECT_GT(explored, steps * n / 5);  // epsilon fell from 1 to 0.05: many, not all, explored
  EXPECT_LT(explored, steps * n * 3 / 4);
}

TEST(AgentKernels, HoldDurationsAreHeavyTailedAndCapped) {
  EXPECT_EQ(HoldDuration(1.0f, 2.0f, 100), 1);
  EXPECT_EQ(HoldDuration(0.25f, 2.0f, 100), 4);                   // 0.25^-1
  EXPECT_EQ(HoldDuration(0.25f, 3.0f, 100), 2);                   // 0.25^-(1/2)
  EXPECT_EQ(HoldDuration(1e-6f, 2.0f, 100), 100);                 // capped
  EXPECT_EQ(HoldDuration(std::ldexp(1.0f, -24), 1.0001f, 7), 7);  // a huge exponent: capped, no overflow
  // Away from integer boundaries, the floor of libm's pow.
  int compared = 0;
  for (int i = 1; i <= 20000; ++i) {
    const float u = static_cast<float>(i) / 20000.0f;
    for (float mu : {1.5f, 2.0f, 2.5f, 4.0f}) {
      const double exact = std::pow(static_cast<double>(u), -1.0 / (static_cast<double>(mu) - 1.0));
      if (std::fabs(exact - std::round(exact)) < 1e-12 * exact) continue;  // within rounding of an integer
      ++compared;
      ASSERT_EQ(HoldDuration(u, mu, 1 << 30), static_cast<int32_t>(exact)) << u << " " << mu;
    }
  }
  EXPECT_GT(compared, 79000);
}

TEST_P(AgentOpsTest, EzGreedyRepeatsItsRandomActionsForHeavyTailedSpans) {
  // Epsilon 1 with holds: each env's actions form runs of one random action; a run's length n
  // has P(n >= k) = k^(1 - mu) (runs of the same action drawn twice in a row merge, which only
  // lengthens them; with 1000 actions that is rare). The greedy actions (-1) never show.
  Ops ops(device());
  const int64_t n = 64;
  const int steps = 2000, num_actions = 1000;
  Buffer<int32_t> held(device(), n), left = OnDevice(device(), std::vector<int32_t>(n, 0));
  const ExploreHold hold{held.data(), left.data(), 2.0f, 50};
  std::vector<std::vector<int32_t>> trace(n);
  Buffer<int32_t> actions(device(), n);
  for (int t = 0; t < steps; ++t) {
    actions.FromHost(std::vector<int32_t>(n, -1).data(), n);
    ops.explore->EpsilonGreedy(actions.data(), n, 1.0f, num_actions, StepKey(5, RngStream::kExploration, t), hold);
    const std::vector<int32_t> step = actions.ToHost();
    for (int64_t i = 0; i < n; ++i) trace[i].push_back(step[i]);
  }
  int64_t runs = 0, at_least_4 = 0, at_least_50 = 0, longer = 0, greedy = 0;
  for (const auto& env_actions : trace) {
    for (size_t start = 0; start < env_actions.size();) {
      size_t end = start;
      while (end < env_actions.size() && env_actions[end] == env_actions[start]) ++end;
      if (end < env_actions.size() && start > 0) {  // whole runs only
        ++runs;
        at_least_4 += end - start >= 4;
        at_least_50 += end - start >= 50;
        longer += end - start > 50;
      }
      greedy += env_actions[start] < 0;
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
  actions.FromHost(std::vector<int32_t>(n, 7).data(), n);
  left.FromHost(std::vector<int32_t>(n, 1).data(), n);
  ops.explore->EpsilonGreedy(actions.data(), n, 0.0f, num_actions, 11, hold);
  EXPECT_EQ(actions.ToHost(), held.ToHost());
  actions.FromHost(std::vector<int32_t>(n, 7).data(), n);
  ops.explore->EpsilonGreedy(actions.data(), n, 0.0f, num_actions, 12, hold);
  EXPECT_EQ(actions.ToHost(), std::vector<int32_t>(n, 7));
}

TEST_P(AgentOpsTest, TdTargetsStopAtTermination) {
  Ops ops(device());
  Buffer<float> rewards = OnDevice(device(), std::vector<float>{1, 1}),
                bootstrap = OnDevice(device(), std::vector<float>{0.9f, 0}),
                next_q = OnDevice(device(), std::vector<float>{10, 10}), targets(device(), 2);
  ops.replay->TdTargets(rewards.data(), bootstrap.data(), next_q.data(), targets.data(), 2);
  const std::vector<float> t = targets.ToHost();
  EXPECT_FLOAT_EQ(t[0], 10.0f);
  EXPECT_FLOAT_EQ(t[1], 1.0f);
}

// Two envs for five vector steps with gamma 0.5: env 0 terminates at step 2, env 1 is truncated
// at step 1. Rewards 1 + t (env 0) and 10 + t (env 1); observations 100 i + t, next observations
// + 0.5, final observations -(100 i + t).
Replay FiveSteps(Device device, ReplayOps& ops) {
  Replay replay(device, 12, 1, 2);
  for (int t = 0; t < 5; ++t) {
    const StepData step(device, {static_cast<float>(t), static_cast<float>(100 + t)}, {t, t},
                        {static_cast<float>(1 + t), static_cast<float>(10 + t)}, {t + 0.5f, 100 + t + 0.5f},
                        {-static_cast<float>(t), -static_cast<float>(100 + t)}, {static_cast<uint8_t>(t == 2), 0},
                        {0, static_cast<uint8_t>(t == 1)});
    step.AddTo(ops, replay);  // rows 2t, 2t + 1
  }
  return replay;
}

TEST_P(AgentOpsTest, NStepReturnsStopAtEpisodeEndsAndAtTheNewestTransition) {
  Ops ops(device());
  const Replay replay = FiveSteps(device(), *ops.replay);
  const HostReplay host(replay);
  EXPECT_EQ(host.head[0], 10);
  EXPECT_EQ(host.size[0], 10);
  struct Case {
    int env, t, n_step;
    float ret, bootstrap, next_obs;
  };
  for (const Case& c : {
           Case{0, 0, 3, 1 + 0.5f * 2 + 0.25f * 3, 0.0f, -2.0f},  // to the termination at step 2: no bootstrap
           Case{0, 1, 3, 2 + 0.5f * 3, 0.0f, -2.0f},
           Case{0, 3, 3, 4 + 0.5f * 5, 0.25f, 4.5f},       // a new episode, up to the newest transition
           Case{1, 0, 3, 10 + 0.5f * 11, 0.25f, -101.0f},  // to the truncation: bootstrap from its final obs
           Case{1, 2, 3, 12 + 0.5f * 13 + 0.25f * 14, 0.125f, 104.5f},
           Case{1, 4, 3, 14, 0.5f, 104.5f},  // the newest: one step
           Case{0, 0, 1, 1, 0.5f, 0.5f},     // one step: r + gamma max Q(s')
           Case{0, 2, 1, 3, 0.0f, -2.0f},
       }) {
    SCOPED_TRACE("env " + std::to_string(c.env) + " step " + std::to_string(c.t) + " n " + std::to_string(c.n_step));
    float ret = 0, bootstrap = 0;
    int64_t last = -1;
    NStepTransition(host.arrays, 2 * c.t + c.env, c.n_step, 0.5f, &ret, &last, &bootstrap);
    EXPECT_FLOAT_EQ(ret, c.ret);
    EXPECT_FLOAT_EQ(bootstrap, c.bootstrap);
    EXPECT_FLOAT_EQ(host.next_obs[last], c.next_obs);
  }
}

TEST_P(AgentOpsTest, SampledMinibatchesHoldTheNStepTransitionOfEachRow) {
  Ops ops(device());
  Replay replay = FiveSteps(device(), *ops.replay);
  const HostReplay host(replay);
  Batch batch(device(), 256, 1);
  ops.replay->Sample(replay.arrays, batch.view, 256, 4, 3, 0.5f, {});
  const std::vector<float> obs = batch.obs.ToHost(), next = batch.next_obs.ToHost(), ret = batch.rewards.ToHost(),
                           boot = batch.bootstrap.ToHost();
  for (int j = 0; j < 256; ++j) {
    const int env = obs[j] >= 100 ? 1 : 0, t = static_cast<int>(obs[j]) - 100 * env;
    float want_ret = 0, want_boot = 0;
    int64_t last = -1;
    NStepTransition(host.arrays, 2 * t + env, 3, 0.5f, &want_ret, &last, &want_boot);
    EXPECT_EQ(ret[j], want_ret) << j;
    EXPECT_EQ(boot[j], want_boot) << j;
    EXPECT_EQ(next[j], host.next_obs[last]) << j;
  }
}

TEST_P(AgentOpsTest, EpisodeRingKeepsTheLastEpisodesInEnvOrder) {
  Ops ops(device());
  Ring ring(device(), 4);
  const StepData step(device(), {0, 0, 0}, {50, 60, 70}, {5, 6, 7}, {0, 0, 0}, {0, 0, 0}, {1, 0, 1}, {0, 0, 0});
  for (int k = 0; k < 3; ++k) step.CollectInto(*ops.episodes, ring);
  const unsigned long long count = ring.count.ToHost()[0];
  EXPECT_EQ(count, 6u);
  // Episodes 2..5 in slots 2, 3, 0, 1: (5, 50), (7, 70), (5, 50), (7, 70).
  EXPECT_EQ(ring.returns.ToHost(), (std::vector<float>{5, 7, 5, 7}));
  EXPECT_EQ(ring.lengths.ToHost(), (std::vector<int32_t>{50, 70, 50, 70}));

  // More envs end in one step than the ring holds: the last ones (in env order) are kept,
  // exactly as a sequential append would leave them.
  const int64_t n = 11;
  std::vector<float> returns(n);
  for (int64_t i = 0; i < n; ++i) returns[i] = static_cast<float>(100 + i);
  const StepData burst(device(), std::vector<float>(n), std::vector<int32_t>(n, 1), returns, std::vector<float>(n),
                       std::vector<float>(n), std::vector<uint8_t>(n, 1), std::vector<uint8_t>(n, 0));
  burst.CollectInto(*ops.episodes, ring);
  EXPECT_EQ(ring.count.ToHost()[0], 17u);
  // Episodes 6..16 map to slots 2, 3, 0, 1, 2, ...; the last four (returns 107..110, episodes
  // 13..16) remain, in slots 1, 2, 3, 0.
  EXPECT_EQ(ring.returns.ToHost(), (std::vector<float>{110, 107, 108, 109}));
}

// An evaluation's episodes: each env keeps its first quota[i] episodes (terminated or truncated)
// with the step each ended in, and the count of those recorded rises by them alone.
TEST_P(AgentOpsTest, EvalEpisodesKeepEachEnvsFirstEpisodesAndTheirSteps) {
  Ops ops(device());
  const Buffer<int64_t> first = OnDevice(device(), std::vector<int64_t>{0, 2, 2});
  const Buffer<int64_t> quota = OnDevice(device(), std::vector<int64_t>{2, 0, 1});
  Buffer<int64_t> done = OnDevice(device(), std::vector<int64_t>{0, 0, 0});
  Buffer<int64_t> steps = OnDevice(device(), std::vector<int64_t>{-1, -1, -1});
  Buffer<float> returns = OnDevice(device(), std::vector<float>{0, 0, 0});
  Buffer<int32_t> lengths = OnDevice(device(), std::vector<int32_t>{0, 0, 0});
  Buffer<unsigned long long> recorded = OnDevice(device(), std::vector<unsigned long long>{0});
  const EvalRecord record{first.data(), quota.data(), done.data(), returns.data(), lengths.data(), steps.data()};
  // Steps 0, 1, 2 of three envs: which ended (terminated or truncated), their returns and lengths.
  const std::vector<std::vector<uint8_t>> terminated = {{1, 1, 0}, {0, 0, 0}, {1, 1, 1}};
  const std::vector<std::vector<uint8_t>> truncated = {{0, 0, 0}, {1, 0, 1}, {0, 0, 0}};
  for (int64_t t = 0; t < 3; ++t) {
    const float base = 10.0f * static_cast<float>(t + 1);
    const Buffer<uint8_t> term = OnDevice(device(), terminated[t]), trunc = OnDevice(device(), truncated[t]);
    const Buffer<float> ret = OnDevice(device(), std::vector<float>{base, base + 1, base + 2});
    const Buffer<int32_t> len = OnDevice(device(), std::vector<int32_t>{static_cast<int32_t>(t), 7, 9});
    ops.episodes->RecordEvalEpisodes(record, term.data(), trunc.data(), ret.data(), len.data(), 3, t, recorded.data());
  }
  // Env 0: steps 0 and 1 (its quota of two; step 2's is ignored); env 1 plays none; env 2: step 1.
  EXPECT_EQ(returns.ToHost(), (std::vector<float>{10, 20, 22}));
  EXPECT_EQ(lengths.ToHost(), (std::vector<int32_t>{0, 1, 9}));
  EXPECT_EQ(steps.ToHost(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(done.ToHost(), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(recorded.ToHost()[0], 3u);
}

// A replay of `size` rows with obs = row, written as one vector step, each row given a priority
// by UpdatePriorities from errors[row].
Replay PrioritizedReplay(Device device, ReplayOps& ops, const Tree& tree, const std::vector<float>& errors) {
  const int64_t size = static_cast<int64_t>(errors.size());
  Replay replay(device, size, 1, size);
  std::vector<float> obs(size);
  for (int64_t r = 0; r < size; ++r) obs[r] = static_cast<float>(r);
  const StepData step(device, obs, std::vector<int32_t>(size, 0), obs, obs, obs, std::vector<uint8_t>(size, 0),
                      std::vector<uint8_t>(size, 0));
  step.AddTo(ops, replay);
  ops.PrioritizeNewRows(replay.arrays, tree.view, size);
  std::vector<int64_t> rows(size);
  for (int64_t r = 0; r < size; ++r) rows[r] = r;
  const Buffer<int64_t> rows_dev = OnDevice(device, rows);
  const Buffer<float> errors_dev = OnDevice(device, errors);
  ops.UpdatePriorities(tree.view, rows_dev.data(), errors_dev.data(), size);
  return replay;
}

TEST_P(AgentOpsTest, PrioritizedSamplingFollowsThePrioritiesWithImportanceWeights) {
  Ops ops(device());
  // alpha 0.5: priorities sqrt(|e| + 1e-6); errors 1, 4, 9, ... give 1, 2, 3, ... (within eps).
  const int64_t size = 6, b = 32;
  Tree tree(device(), size, 0.5f, 0.4f, 100);
  const Replay replay = PrioritizedReplay(device(), *ops.replay, tree, {1, 4, 9, 16, 25, 36});
  tree.ExpectSumsOfChildren();
  const std::vector<float> leaves = tree.Leaves(size);
  for (int r = 0; r < size; ++r) EXPECT_NEAR(leaves[r], r + 1, 1e-5) << r;
  EXPECT_EQ(leaves[2], LeafPriority(9, 0.5f, 1e-6f));
  EXPECT_EQ(tree.max_leaf.ToHost()[0], leaves[5]);

  Batch batch(device(), b, 1);
  std::vector<int> hits(size, 0);
  const int draws = 600;
  for (int draw = 0; draw < draws; ++draw) {
    ops.replay->Sample(replay.arrays, batch.view, b, 11, 1, 0.9f, tree.view);
    const std::vector<float> obs = batch.obs.ToHost(), w = batch.weights.ToHost();
    const std::vector<int64_t> rows = batch.rows.ToHost();
    float least = 1e30f;
    for (int j = 0; j < b; ++j) least = std::min(least, leaves[rows[j]] / (21.0f));
    const double beta = 0.4 + 0.6 * std::min(1.0, draw / 100.0);
    for (int j = 0; j < b; ++j) {
      ASSERT_EQ(obs[j], static_cast<float>(rows[j]));  // the sample is the recorded row
      ++hits[rows[j]];
      // (min_k P_k / P_j)^beta: the largest weight in the minibatch is 1.
      const double want = std::pow(static_cast<double>(least) / (leaves[rows[j]] / 21.0), beta);
      EXPECT_NEAR(w[j], want, 1e-5) << "draw " << draw << " sample " << j;
    }
  }
  // Row r is drawn with probability (r + 1) / 21: a chi-square over the 6 rows (5 degrees of
  // freedom; 20.5 is its 0.999 quantile).
  double chi2 = 0;
  for (int r = 0; r < size; ++r) {
    const double expected = draws * b * (r + 1) / 21.0;
    chi2 += (hits[r] - expected) * (hits[r] - expected) / expected;
  }
  EXPECT_LT(chi2, 20.5) << hits[0] << " " << hits[5];
  EXPECT_GT(hits[5], 4 * hits[0]);  // uniform sampling would fail this
}

TEST_P(AgentOpsTest, NewRowsGetTheLargestPriorityAndDuplicatesKeepTheLastError) {
  Ops ops(device());
  const int64_t capacity = 10;
  Tree tree(device(), capacity, 1.0f, 0.4f, 10);
  Replay replay(device(), capacity, 1, 4);
  // Three vector steps of 4 envs into a ring of 10: the third wraps (rows 8, 9, 0, 1).
  for (int step = 0; step < 3; ++step) {
    const StepData data(device(), {1, 2, 3, 4}, {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 2, 3, 4}, {1, 2, 3, 4}, {0, 0, 0, 0},
                        {0, 0, 0, 0});
    data.AddTo(*ops.replay, replay);
    ops.replay->PrioritizeNewRows(replay.arrays, tree.view, 4);
    if (step == 1) {
      // Rows 2 and 5 learn errors 7 and 0.5 (alpha 1: priorities 7 and 0.5): the largest is now 7.
      const Buffer<int64_t> rows = OnDevice(device(), std::vector<int64_t>{2, 5, 2});
      const Buffer<float> errors = OnDevice(device(), std::vector<float>{3, -0.5f, -7});
      ops.replay->UpdatePriorities(tree.view, rows.data(), errors.data(), 3);
      EXPECT_EQ(tree.max_leaf.ToHost()[0], LeafPriority(7, 1.0f, 1e-6f));
    }
  }
  tree.ExpectSumsOfChildren();
  const float seven = LeafPriority(7, 1.0f, 1e-6f), half = LeafPriority(0.5f, 1.0f, 1e-6f);
  // Rows 0, 1, 8, 9 came after the update: priority 7; 2 (its last error), 5 as learned; 3, 4,
  // 6, 7 the 1 they were written with.
  EXPECT_EQ(tree.Leaves(capacity), (std::vector<float>{seven, seven, seven, 1, 1, half, 1, 1, seven, seven}));
}

INSTANTIATE_TEST_SUITE_P(Devices, AgentOpsTest, ::testing::Values(Device::kCpu, Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); });

// The CPU is the oracle: on random data every op gives the CPU's bits on CUDA (pure copies,
// integer hashing, the hold lengths through core's Log2/Exp2, 3-step returns and TD targets with
// contraction off on both), including the episode ring when thousands of envs end in one step.
TEST(AgentOpsAgreement, CudaGivesTheCpuBits) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const int64_t n = 10000, capacity = 25000, batch = 256;
  const int obs_dim = 3, num_actions = 5;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  auto floats = [&](int64_t count) {
    std::vector<float> v(count);
    for (float& x : v) x = real(gen);
    return v;
  };
  auto flags = [&](int64_t count, double p) {
    std::vector<uint8_t> v(count);
    for (uint8_t& x : v) x = std::bernoulli_distribution(p)(gen) ? 1 : 0;
    return v;
  };
  std::vector<int32_t> greedy(n);
  for (int32_t& a : greedy) a = static_cast<int32_t>(gen() % num_actions);

  struct Side {
    explicit Side(Device d, int64_t n, int64_t capacity, int64_t batch, int obs_dim)
        : device(d),
          ops(d),
          replay(d, capacity, obs_dim, n),
          batch(d, batch, obs_dim),
          ring(d, 4096),
          held(d, n),
          left(d, n),
          actions(d, n),
          targets(d, batch),
          tree(d, capacity, 0.6f, 0.4f, 4),
          counters(d, 1),
          seed(OnDevice(d, std::vector<uint64_t>{9})) {
      left.Zero();
      const StepCounters zero{0, 0};
      counters.FromHost(&zero, 1);
    }
    Device device;
    Ops ops;
    Replay replay;
    Batch batch;
    Ring ring;
    Buffer<int32_t> held, left, actions;
    Buffer<float> targets;
    Tree tree;
    Buffer<StepCounters> counters;
    Buffer<uint64_t> seed;  // [1] the run's seed, as Explore reads the lanes' seeds
  };
  // Epsilon 0.9, 0.7, ..., 0.1, 0.1 over the six vector steps, from the device's counters.
  const EpsilonSchedule schedule{0.9, 0.1, 4.0 * n};
  Side cpu(Device::kCpu, n, capacity, batch, obs_dim), gpu(Device::kCuda, n, capacity, batch, obs_dim);
  for (int t = 0; t < 6; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    // Ends: a few per step, and on step 4 every env at once (more than the ring holds).
    const std::vector<uint8_t> term = t == 4 ? std::vector<uint8_t>(n, 1) : flags(n, 0.02), trunc = flags(n, 0.01);
    const std::vector<float> obs = floats(n * obs_dim), next = floats(n * obs_dim), final_obs = floats(n * obs_dim),
                             rewards = floats(n);
    for (Side* s : {&cpu, &gpu}) {
      s->actions.FromHost(greedy.data(), n);
      const ExploreHold hold{s->held.data(), s->left.data(), 2.0f, 100};
      s->ops.explore->Explore(s->actions.data(), 1, n, s->counters.data(), schedule, s->seed.data(), num_actions, hold);
      s->ops.episodes->AdvanceSteps(s->counters.data(), n);
      const StepData step(s->device, obs, s->actions.ToHost(), rewards, next, final_obs, term, trunc);
      step.AddTo(*s->ops.replay, s->replay);
      step.CollectInto(*s->ops.episodes, s->ring);
      s->ops.replay->PrioritizeNewRows(s->replay.arrays, s->tree.view, n);
      // Uniform on even steps, by priority on odd ones (each with its own draw counter value).
      s->ops.replay->Sample(s->replay.arrays, s->batch.view, batch, 3, 3, 0.99f, t % 2 ? s->tree.view : PriorityTree{});
      s->ops.replay->TdTargets(s->batch.rewards.data(), s->batch.bootstrap.data(), s->batch.obs.data(),
                               s->targets.data(), batch);
      if (t % 2) s->ops.replay->UpdatePriorities(s->tree.view, s->batch.rows.data(), s->targets.data(), batch);
    }
    if (t % 2) {
      EXPECT_EQ(cpu.batch.rows.ToHost(), gpu.batch.rows.ToHost());
      EXPECT_EQ(cpu.batch.weights.ToHost(), gpu.batch.weights.ToHost());
    }
    EXPECT_EQ(cpu.tree.nodes.ToHost(), gpu.tree.nodes.ToHost());
    EXPECT_EQ(cpu.tree.max_leaf.ToHost(), gpu.tree.max_leaf.ToHost());
    EXPECT_EQ(cpu.actions.ToHost(), gpu.actions.ToHost());
    EXPECT_EQ(cpu.left.ToHost(), gpu.left.ToHost());
    EXPECT_EQ(cpu.replay.obs.ToHost(), gpu.replay.obs.ToHost());
    EXPECT_EQ(cpu.replay.next_obs.ToHost(), gpu.replay.next_obs.ToHost());
    EXPECT_EQ(cpu.replay.terminals.ToHost(), gpu.replay.terminals.ToHost());
    EXPECT_EQ(cpu.replay.size.ToHost(), gpu.replay.size.ToHost());
    EXPECT_EQ(cpu.batch.obs.ToHost(), gpu.batch.obs.ToHost());
    EXPECT_EQ(cpu.batch.actions.ToHost(), gpu.batch.actions.ToHost());
    EXPECT_EQ(cpu.batch.rewards.ToHost(), gpu.batch.rewards.ToHost());
    EXPECT_EQ(cpu.batch.bootstrap.ToHost(), gpu.batch.bootstrap.ToHost());
    EXPECT_EQ(cpu.targets.ToHost(), gpu.targets.ToHost());
    EXPECT_EQ(cpu.ring.count.ToHost(), gpu.ring.count.ToHost());
    EXPECT_EQ(cpu.ring.returns.ToHost(), gpu.ring.returns.ToHost());
    EXPECT_EQ(cpu.ring.lengths.ToHost(), gpu.ring.lengths.ToHost());
  }
  EXPECT_EQ(cpu.replay.draws.ToHost(), gpu.replay.draws.ToHost());
  EXPECT_EQ(gpu.counters.ToHost()[0].global_step, 6 * n);
}

}  // namespace
}  // namespace cugym::agent
