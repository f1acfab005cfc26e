// The shared conformance suite: every registered env on every back end, batch sizes 1, 7 and
// 1024 (64 for host-stepped envs, see AllCases). Observations stay in the declared space, rewards are finite, runs are
// deterministic, episodes end with a final observation and sane statistics, states round-trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tests/envs/env_test_util.h"

#ifdef CUGYM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cugym {
namespace {

using testing::AllIds;
using testing::Builtins;
using testing::Host;

using Case = std::tuple<std::string, Device, int64_t>;

class Conformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    CUGYM_SKIP_WITHOUT_GPU(device());
    spec_ = Builtins().Get(id()).spec;
  }
  const std::string& id() const { return std::get<0>(GetParam()); }
  Device device() const { return std::get<1>(GetParam()); }
  int64_t n() const { return std::get<2>(GetParam()); }
  std::unique_ptr<VectorEnv> Make() const { return MakeVectorEnv(Builtins(), id(), n(), device()); }
  std::vector<float> Obs(const float* ptr) const { return Host(ptr, n() * spec_.obs_dim(), device()); }
  // ResetLanes(seeds, n()): every lane steps as a batch of n() envs reset with its seed, before
  // and after a snapshot round trip.
  void ExpectLanesAsBatches(const std::vector<uint64_t>& seeds);
  EnvSpec spec_;
};

TEST_P(Conformance, ObservationsStayInTheDeclaredSpace) {
  auto env = Make();
  env->Reset(11);
  const Space& space = spec_.observation_space;
  const int64_t dim = spec_.obs_dim();
  for (int t = 0; t < 300; ++t) {
    env->StepRandom(1);
    const auto obs = Obs(env->obs());
    const auto final_obs = Obs(env->final_obs());
    const auto rewards = Host(env->rewards(), n(), device());
    const auto term = Host(env->terminated(), n(), device());
    const auto trunc = Host(env->truncated(), n(), device());
    for (int64_t i = 0; i < n(); ++i) {
      ASSERT_TRUE(std::isfinite(rewards[i])) << "env " << i << " step " << t;
      for (int64_t k = 0; k < dim; ++k) {
        ASSERT_GE(obs[i * dim + k], space.low[k]) << "env " << i << " dim " << k << " step " << t;
        ASSERT_LE(obs[i * dim + k], space.high[k]) << "env " << i << " dim " << k << " step " << t;
        if (term[i] | trunc[i]) {
          ASSERT_GE(final_obs[i * dim + k], space.low[k]);
          ASSERT_LE(final_obs[i * dim + k], space.high[k]);
        }
      }
    }
  }
}

TEST_P(Conformance, SameSeedSameRunDifferentSeedDifferentRun) {
  auto a = Make(), b = Make(), c = Make();
  a->Reset(21);
  b->Reset(21);
  c->Reset(22);
  a->StepRandom(150);
  b->StepRandom(150);
  c->StepRandom(150);
  EXPECT_EQ(Obs(a->obs()), Obs(b->obs()));
  EXPECT_EQ(Host(a->rewards(), n(), device()), Host(b->rewards(), n(), device()));
  EXPECT_EQ(Host(a->terminated(), n(), device()), Host(b->terminated(), n(), device()));
  EXPECT_EQ(a->GetStates(0, n()), b->GetStates(0, n()));
  EXPECT_NE(a->GetStates(0, n()), c->GetStates(0, n()));
}

TEST_P(Conformance, FinishedEpisodesHaveStatisticsAndRestart) {
  auto env = Make();
  env->Reset(31);
  int64_t finished = 0;
  std::vector<int32_t> length(n(), 0);
  std::vector<double> ret(n(), 0.0);
  const int steps = spec_.max_episode_steps > 0 ? spec_.max_episode_steps + 20 : 300;
  for (int t = 0; t < steps; ++t) {
    env->StepRandom(1);
    const auto rewards = Host(env->rewards(), n(), device());
    const auto term = Host(env->terminated(), n(), device());
    const auto trunc = Host(env->truncated(), n(), device());
    const auto lengths = Host(env->episode_lengths(), n(), device());
    const auto returns = Host(env->episode_returns(), n(), device());
    for (int64_t i = 0; i < n(); ++i) {
      length[i] += 1;
      ret[i] += rewards[i];
      if (!(term[i] | trunc[i])) continue;
      ++finished;
      ASSERT_EQ(lengths[i], length[i]) << "env " << i;
      ASSERT_NEAR(returns[i], ret[i], 1e-3 * std::max(1.0, std::fabs(ret[i])));
      ASSERT_EQ(trunc[i] != 0, spec_.max_episode_steps > 0 && length[i] >= spec_.max_episode_steps);
      length[i] = 0;
      ret[i] = 0;
    }
  }
  EXPECT_GT(finished, 0);
}

TEST_P(Conformance, StatesRoundTrip) {
  auto env = Make();
  env->Reset(41);
  env->StepRandom(17);
  const auto states = env->GetStates(0, n());
  const auto obs = Obs(env->obs());
  env->SetStates(0, n(), states);
  EXPECT_EQ(env->GetStates(0, n()), states);
  EXPECT_EQ(Obs(env->obs()), obs);
  EXPECT_THROW(env->SetStates(0, n(), std::vector<float>(n() * spec_.state_dim + 1)), std::invalid_argument);
  EXPECT_THROW(env->GetStates(n(), 1), std::out_of_range);
}

TEST_P(Conformance, ASnapshotContinuesExactly) {
  // Step, snapshot, step on (random actions keyed by the step count, episodes ending and
  // restarting), then restore the snapshot into a fresh batch and step as far: the same bits.
  auto env = Make();
  env->Reset(21);
  env->StepRandom(150);
  VectorEnvSnapshot snapshot;
  // Every built-in env keeps one, host-stepped ones (a Box2D world per env) included: theirs holds
  // each episode's start and actions, which LoadSnapshot replays (docs/vector-env.md).
  ASSERT_TRUE(env->SaveSnapshot(&snapshot)) << id() << " keeps no snapshot";
  auto run_on = [&](VectorEnv& e) {
    std::vector<float> trace;
    for (int t = 0; t < 250; ++t) {
      e.StepRandom(1);
      for (float v : Obs(e.obs())) trace.push_back(v);
      for (float v : Host(e.rewards(), n(), device())) trace.push_back(v);
      const auto term = Host(e.terminated(), n(), device()), trunc = Host(e.truncated(), n(), device());
      const auto lengths = Host(e.episode_lengths(), n(), device());
      const auto returns = Host(e.episode_returns(), n(), device());
      for (int64_t i = 0; i < n(); ++i) {  // the statistics are meaningful where an episode ended
        trace.push_back(static_cast<float>(term[i] + 2 * trunc[i]));
        if (term[i] | trunc[i]) trace.insert(trace.end(), {static_cast<float>(lengths[i]), returns[i]});
      }
    }
    return trace;
  };
  const std::vector<float> expected = run_on(*env);
  auto restored = Make();
  restored->LoadSnapshot(snapshot);
  EXPECT_EQ(Obs(restored->obs()).size(), static_cast<std::size_t>(n() * spec_.obs_dim()));
  EXPECT_EQ(run_on(*restored), expected);
  // Another batch size is refused.
  auto other = MakeVectorEnv(Builtins(), id(), n() + 1, device());
  EXPECT_THROW(other->LoadSnapshot(snapshot), std::invalid_argument);
}

#ifdef CUGYM_HAVE_CUDA
// A stream of the test's own (once Create is called), destroyed after its work at the end of the test.
struct TestStream {
  void Create(unsigned int flags) { EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess); }
  ~TestStream() {
    if (s == nullptr) return;
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  cudaStream_t s = nullptr;
};
#endif

// set_stream takes blocking streams only (VectorEnv::set_stream: the env's synchronous copies are
// ordered with its stream through the legacy default stream): one made with cudaStreamNonBlocking
// is refused, naming the flag, and the env steps on where it was; a blocking stream, the default
// streams and nullptr are taken, and on a blocking stream of its own the env gives the default
// stream's bits. On the CPU the handle is never used, so any value is ignored.
TEST_P(Conformance, SetStreamTakesBlockingStreamsOnly) {
  auto env = Make();
  auto reference = Make();
  if (device() == Device::kCpu) {
    EXPECT_NO_THROW(env->set_stream(reinterpret_cast<void*>(uintptr_t{0x1234})));
  }
#ifdef CUGYM_HAVE_CUDA
  TestStream non_blocking, blocking;
  if (device() == Device::kCuda) {
    non_blocking.Create(cudaStreamNonBlocking);
    blocking.Create(cudaStreamDefault);
    try {
      env->set_stream(non_blocking.s);
      ADD_FAILURE() << "set_stream took a cudaStreamNonBlocking stream";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("cudaStreamNonBlocking"), std::string::npos) << e.what();
    }
    for (cudaStream_t s : {cudaStream_t{nullptr}, cudaStreamLegacy, cudaStreamPerThread, blocking.s})
      EXPECT_NO_THROW(env->set_stream(s));
  }
#endif
  env->Reset(5);
  reference->Reset(5);
  env->StepRandom(40);
  reference->StepRandom(40);
  EXPECT_EQ(Obs(env->obs()), Obs(reference->obs()));
  EXPECT_EQ(Host(env->rewards(), n(), device()), Host(reference->rewards(), n(), device()));
  env.reset();  // before its stream goes
}

TEST_P(Conformance, PerEnvSeedsKeyEachEnvAlone) {
  // Env i's trajectory depends on its own seed (and index) only: one Reset seed for all is the
  // same as that seed in every entry, and changing the other envs' seeds changes nothing for it.
  auto trace_of = [&](VectorEnv& e, int64_t env) {
    std::vector<float> trace;
    const int64_t dim = spec_.obs_dim();
    for (int t = 0; t < 120; ++t) {
      const std::vector<float> obs = Obs(e.obs());
      trace.insert(trace.end(), obs.begin() + env * dim, obs.begin() + (env + 1) * dim);
      e.StepRandom(1);  // random actions are keyed by the first env's seed: kept the same below
    }
    return trace;
  };
  const int64_t last = n() - 1;
  auto uniform = Make();
  uniform->Reset(5);
  auto listed = Make();
  listed->ResetSeeds(std::vector<uint64_t>(n(), 5));
  EXPECT_EQ(trace_of(*listed, last), trace_of(*uniform, last));
  std::vector<uint64_t> seeds(n());
  for (int64_t i = 0; i < n(); ++i) seeds[i] = 1000 + 7 * i;
  seeds[0] = 5;
  auto a = Make();
  a->ResetSeeds(seeds);
  const std::vector<float> expected = trace_of(*a, last);
  for (int64_t i = 1; i < last; ++i) seeds[i] += 1;  // every env but the first and the last
  auto b = Make();
  b->ResetSeeds(seeds);
  EXPECT_EQ(trace_of(*b, last), expected);
  if (n() > 1) {
    seeds[last] += 1;
    auto c = Make();
    c->ResetSeeds(seeds);
    EXPECT_NE(trace_of(*c, last), expected);
  }
  EXPECT_THROW(a->ResetSeeds(std::vector<uint64_t>(n() + 1, 1)), std::invalid_argument);
  // A snapshot keeps the seeds.
  a->ResetSeeds(seeds);
  a->StepRandom(30);
  VectorEnvSnapshot snapshot;
  ASSERT_TRUE(a->SaveSnapshot(&snapshot));
  auto restored = Make();
  restored->LoadSnapshot(snapshot);
  EXPECT_EQ(trace_of(*restored, last), trace_of(*a, last));
}

// Lanes (ResetLanes: an agent's K lanes of envs in one batch, agents/off_policy/dqn.h): lane l of a batch of 3 x n
// steps as a batch of n of its own reset with lane l's seed, given the same actions, bit for bit;
// a snapshot keeps the lanes, and some of them go on alone (LanesOf).
// Lanes of equal seeds too (each lane still draws as a batch of its own), and one lane alone.
TEST_P(Conformance, LanesStepAsBatchesOfTheirOwn) {
  for (const std::vector<uint64_t>& seeds : {std::vector<uint64_t>{5, 91, 17}, {5, 5}, {42}}) {
    SCOPED_TRACE("seeds " + std::to_string(seeds[0]) + " x " + std::to_string(seeds.size()));
    ExpectLanesAsBatches(seeds);
  }
}

void Conformance::ExpectLanesAsBatches(const std::vector<uint64_t>& seeds) {
  auto lanes = static_cast<int64_t>(seeds.size());  // the lanes stepped (fewer once some are kept)
  const int64_t dim = spec_.obs_dim();
  auto all = MakeVectorEnv(Builtins(), id(), lanes * n(), device());
  ASSERT_TRUE(all->supports_lanes());
  all->ResetLanes(seeds, n());
  std::vector<std::unique_ptr<VectorEnv>> alone;
  for (uint64_t seed : seeds) {
    alone.push_back(Make());
    alone.back()->Reset(seed);
  }
  const auto lane_of = [&](const auto& v, int64_t l, int64_t width) {
    return std::decay_t<decltype(v)>(v.begin() + l * n() * width, v.begin() + (l + 1) * n() * width);
  };
  // Actions from a fixed generator, the same for env j of lane l on both sides.
  const int64_t action_dim = spec_.action_space.is_discrete() ? 1 : spec_.action_space.flat_size();
  std::mt19937 rng(3);
  const auto step = [&](VectorEnv* lanes_env, std::vector<std::unique_ptr<VectorEnv>>* alone_envs) {
    std::vector<int32_t> discrete(lanes * n());
    std::vector<float> box(lanes * n() * action_dim);
    for (int32_t& a : discrete) a = static_cast<int32_t>(rng() % std::max<int64_t>(spec_.action_space.n, 1));
    for (int64_t i = 0; i < lanes * n(); ++i)
      for (int64_t d = 0; d < action_dim; ++d) {
        const float u = static_cast<float>(rng() % 1000) / 999.0f;
        box[i * action_dim + d] =
            spec_.action_space.is_discrete()
                ? 0.0f
                : spec_.action_space.low[d] + u * (spec_.action_space.high[d] - spec_.action_space.low[d]);
      }
    const auto run = [&](VectorEnv& env, int64_t first, int64_t count) {
      if (spec_.action_space.is_discrete()) {
        testing::StepWith(env, std::vector<int32_t>(discrete.begin() + first, discrete.begin() + first + count));
      } else {
        Buffer<float> buffer(env.device(), count * action_dim);
        buffer.FromHost(box.data() + first * action_dim, count * action_dim);
        env.Step(buffer.data());
        Synchronize(env.device());
      }
    };
    run(*lanes_env, 0, lanes * n());
    for (int64_t l = 0; l < lanes; ++l) run(*(*alone_envs)[l], l * n(), n());
  };
  const auto expect_same = [&](VectorEnv& lanes_env, const std::string& when) {
    const int64_t total = lanes * n();
    const auto obs = Host(lanes_env.obs(), total * dim, device());
    const auto final_obs = Host(lanes_env.final_obs(), total * dim, device());
    const auto rewards = Host(lanes_env.rewards(), total, device());
    const auto term = Host(lanes_env.terminated(), total, device());
    const auto trunc = Host(lanes_env.truncated(), total, device());
    for (int64_t l = 0; l < lanes; ++l) {
      SCOPED_TRACE(when + ", lane " + std::to_string(l));
      VectorEnv& one = *alone[l];
      ASSERT_EQ(lane_of(obs, l, dim), Host(one.obs(), n() * dim, device()));
      ASSERT_EQ(lane_of(rewards, l, 1), Host(one.rewards(), n(), device()));
      ASSERT_EQ(lane_of(term, l, 1), Host(one.terminated(), n(), device()));
      ASSERT_EQ(lane_of(trunc, l, 1), Host(one.truncated(), n(), device()));
      const auto one_final = Host(one.final_obs(), n() * dim, device());
      for (int64_t j = 0; j < n(); ++j) {
        if (!(term[l * n() + j] | trunc[l * n() + j])) continue;
        for (int64_t k = 0; k < dim; ++k) ASSERT_EQ(final_obs[(l * n() + j) * dim + k], one_final[j * dim + k]);
      }
    }
  };
  expect_same(*all, "reset");
  for (int t = 0; t < 80; ++t) {
    step(all.get(), &alone);
    expect_same(*all, "step " + std::to_string(t));
  }
  EXPECT_THROW(all->ResetLanes(seeds, n() + 1), std::invalid_argument);
  VectorEnvSnapshot snapshot;
  ASSERT_TRUE(all->SaveSnapshot(&snapshot));
  EXPECT_EQ(snapshot.lane_size, n());
  auto restored = MakeVectorEnv(Builtins(), id(), lanes * n(), device());
  restored->LoadSnapshot(snapshot);  // flags and rewards start clean, the states as saved
  for (int t = 0; t < 30; ++t) {
    step(restored.get(), &alone);
    expect_same(*restored, "restored, step " + std::to_string(t));
  }
  // Some lanes in another order (LanesOf, as a shrinking agent keeps its lanes still training)
  // go on in a batch of their own as they did among the others.
  if (lanes < 2) return;
  VectorEnvSnapshot now;
  ASSERT_TRUE(restored->SaveSnapshot(&now));
  const std::vector<int64_t> keep = {lanes - 1, 0};
  EXPECT_THROW(LanesOf(now, {lanes}, spec_.state_dim), std::out_of_range);
  std::vector<std::unique_ptr<VectorEnv>> kept_alone;
  for (int64_t l : keep) kept_alone.push_back(std::move(alone[l]));
  alone = std::move(kept_alone);
  lanes = static_cast<int64_t>(keep.size());
  auto kept = MakeVectorEnv(Builtins(), id(), lanes * n(), device());
  kept->LoadSnapshot(LanesOf(now, keep, spec_.state_dim));
  for (int t = 0; t < 30; ++t) {
    step(kept.get(), &alone);
    expect_same(*kept, "kept lanes, step " + std::to_string(t));
  }
}

// The CPU back end is the oracle: for every env the GPU gives the same bits (no FMA contraction,
// no libm in env code), through the fused random rollout and through one Step call per step.
TEST(CudaAgreement, EveryEnvGivesTheCpuBits) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const int64_t n = 1000;  // not a multiple of a warp or a CPU chunk
  for (const std::string& id : AllIds(Builtins())) {
    SCOPED_TRACE(id);
    const EnvSpec& spec = Builtins().Get(id).spec;
    auto cpu = MakeVectorEnv(Builtins(), id, n, Device::kCpu);
    auto gpu = MakeVectorEnv(Builtins(), id, n, Device::kCuda);
    cpu->Reset(77);
    gpu->Reset(77);
    auto expect_same = [&](const std::string& when) {
      SCOPED_TRACE(when);
      EXPECT_EQ(cpu->GetStates(0, n), gpu->GetStates(0, n));
      EXPECT_EQ(Host(cpu->obs(), n * spec.obs_dim(), Device::kCpu),
                Host(gpu->obs(), n * spec.obs_dim(), Device::kCuda));
      EXPECT_EQ(Host(cpu->rewards(), n, Device::kCpu), Host(gpu->rewards(), n, Device::kCuda));
      EXPECT_EQ(Host(cpu->terminated(), n, Device::kCpu), Host(gpu->terminated(), n, Device::kCuda));
      EXPECT_EQ(Host(cpu->truncated(), n, Device::kCpu), Host(gpu->truncated(), n, Device::kCuda));
    };
    for (int round = 0; round < 3; ++round) {
      cpu->StepRandom(100);
      gpu->StepRandom(100);
      expect_same("fused round " + std::to_string(round));
    }
    for (int t = 0; t < 300; ++t) {
      cpu->StepRandom(1);
      gpu->StepRandom(1);
    }
    expect_same("300 single steps");
    // Every env that ended in the last step: the same final observation and statistics.
    const std::vector<uint8_t> term = Host(cpu->terminated(), n, Device::kCpu),
                               trunc = Host(cpu->truncated(), n, Device::kCpu);
    const auto final_cpu = Host(cpu->final_obs(), n * spec.obs_dim(), Device::kCpu),
               final_gpu = Host(gpu->final_obs(), n * spec.obs_dim(), Device::kCuda);
    const auto ret_cpu = Host(cpu->episode_returns(), n, Device::kCpu),
               ret_gpu = Host(gpu->episode_returns(), n, Device::kCuda);
    const auto len_cpu = Host(cpu->episode_lengths(), n, Device::kCpu),
               len_gpu = Host(gpu->episode_lengths(), n, Device::kCuda);
    for (int64_t i = 0; i < n; ++i) {
      if (!(term[i] | trunc[i])) continue;
      for (int64_t k = 0; k < spec.obs_dim(); ++k)
        EXPECT_EQ(final_cpu[i * spec.obs_dim() + k], final_gpu[i * spec.obs_dim() + k]) << "env " << i;
      EXPECT_EQ(ret_cpu[i], ret_gpu[i]) << "env " << i;
      EXPECT_EQ(len_cpu[i], len_gpu[i]) << "env " << i;
    }
  }
}

// Host-stepped envs (LunarLander) run at most 64: each world steps alone, and the thread pool
// hands 64 envs out in pieces taken by whichever thread is free as it does 1024, while 1024 Box2D
// worlds through 1020 steps took four minutes of CI's two cores and check nothing more.
std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const std::string& id : AllIds(Builtins())) {
    const int64_t large = Builtins().Get(id).host_stepped ? 64 : 1024;
    for (Device device : {Device::kCpu, Device::kCuda}) {
      for (int64_t n : {int64_t{1}, int64_t{7}, large}) cases.emplace_back(id, device, n);
    }
  }
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::get<0>(info.param) + "_" + DeviceName(std::get<1>(info.param)) + "_" +
                     std::to_string(std::get<2>(info.param));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllEnvs, Conformance, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace cugym
