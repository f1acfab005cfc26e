// Lanes, an agent's K lanes as one on every back end (the CUDA cases skip without a GPU): a replay
// memory of K lanes (ReplayOptions::lanes) against K memories of one (each lane stores, samples
// with its own seed and by priority, weighs, updates priorities and checkpoints as a memory of its
// own would, bit for bit, and a lane's checkpoint loads into a memory of one that then goes on as
// the lane does), and exploration and episode collection in lanes against K agents' own.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "agents/common/episode_ops.h"
#include "agents/common/explore_ops.h"
#include "agents/off_policy/replay_memory.h"
#include "agents/off_policy/replay_ops.h"
#include "core/memory.h"
#include "nn/backend.h"
#include "tests/agents/agent_test_util.h"
#include "tests/core/test_util.h"
#include "tests/gpu_skip.h"

namespace cugym::agent {
namespace {

constexpr int64_t kLanes = 3, kEnvs = 4, kCapacity = 14, kBatch = 6;
constexpr int kObs = 3, kNStep = 3;
constexpr float kGamma = 0.9f;
const std::vector<uint64_t> kSeeds = {11, 5, 23};

ReplayOptions Options(int64_t lanes) {
  ReplayOptions options{kCapacity, kObs, kEnvs, kBatch, true, {0.6, 1e-6, 0.4, 50}};
  options.lanes = lanes;
  return options;
}

// One vector step of every lane's envs, made up: [lanes x envs] rows of each array.
struct Step {
  std::vector<float> obs, next_obs, final_obs, rewards;
  std::vector<int32_t> actions;
  std::vector<uint8_t> terminated, truncated;
};
Step MakeStep(std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> coin(0, 5);
  Step s;
  const int64_t rows = kLanes * kEnvs;
  for (int64_t i = 0; i < rows * kObs; ++i) {
    s.obs.push_back(value(rng));
    s.next_obs.push_back(value(rng));
    s.final_obs.push_back(value(rng));
  }
  for (int64_t i = 0; i < rows; ++i) {
    s.rewards.push_back(value(rng));
    s.actions.push_back(coin(rng) % 2);
    const int end = coin(rng);
    s.terminated.push_back(end == 0);
    s.truncated.push_back(end == 1);
  }
  return s;
}

template <class T>
Buffer<T> OnDevice(Device device, const T* values, int64_t count) {
  Buffer<T> buffer(device, count);
  buffer.FromHost(values, count);
  return buffer;
}

// Step s's rows [first, first + count) on `device`.
struct DeviceStep {
  DeviceStep(Device device, const Step& s, int64_t first, int64_t count)
      : obs(OnDevice(device, s.obs.data() + first * kObs, count * kObs)),
        next_obs(OnDevice(device, s.next_obs.data() + first * kObs, count * kObs)),
        final_obs(OnDevice(device, s.final_obs.data() + first * kObs, count * kObs)),
        rewards(OnDevice(device, s.rewards.data() + first, count)),
        actions(OnDevice(device, s.actions.data() + first, count)),
        terminated(OnDevice(device, s.terminated.data() + first, count)),
        truncated(OnDevice(device, s.truncated.data() + first, count)) {}
  Buffer<float> obs, next_obs, final_obs, rewards;
  Buffer<int32_t> actions;
  Buffer<uint8_t> terminated, truncated;
};

// A memory's last minibatch of lane l (of `lanes`), every array's bytes.
std::string Minibatch(const ReplayMemory& m, int64_t lane, Device device) {
  const int64_t first = lane * kBatch;
  std::string bytes;
  const auto add = [&](const auto* data, int64_t offset, int64_t count) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(data)>>;
    std::vector<T> host(count);
    CopyBytes(host.data(), Device::kCpu, data + offset, device, count * sizeof(T));
    bytes.append(reinterpret_cast<const char*>(host.data()), count * sizeof(T));
  };
  add(m.batch_obs(), first * kObs, kBatch * kObs);
  add(m.batch_next_obs(), first * kObs, kBatch * kObs);
  add(m.batch_actions(), first, kBatch);
  add(m.batch_rewards(), first, kBatch);
  add(m.batch_bootstrap(), first, kBatch);
  add(m.batch_weights(), first, kBatch);
  return bytes;
}

// A checkpoint part's metadata and tensors, as one string.
std::string Saved(const ReplayMemory& m, int64_t lane) {
  CheckpointWriter out;
  m.Save(out, lane);
  std::string text;
  for (const auto& [key, value] : out.metadata()) text += key + "=" + value + "\n";
  for (const NamedTensor& t : out.tensors()) text += t.name + ":" + std::string(t.data.begin(), t.data.end()) + "\n";
  return text;
}

class LanesTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { CUGYM_SKIP_WITHOUT_GPU(GetParam()); }
};

TEST_P(LanesTest, EachLaneIsAMemoryOfItsOwn) {
  const Device device = GetParam();
  const std::shared_ptr<nn::Backend> backend = nn::MakeBackend(device);
  const std::unique_ptr<ReplayOps> ops = MakeOps<ReplayOps>(device, backend->native_stream());
  ReplayMemory lanes(device, Options(kLanes));
  lanes.SetLaneSeeds(kSeeds);
  std::vector<std::unique_ptr<ReplayMemory>> alone;
  for (int64_t l = 0; l < kLanes; ++l) alone.push_back(std::make_unique<ReplayMemory>(device, Options(1)));
  EXPECT_EQ(ReplayBytes(Options(kLanes)), kLanes * ReplayBytes(Options(1)));

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> error(-2.0f, 2.0f);
  for (int step = 0; step < 9; ++step) {  // the ring wraps (36 rows in 14)
    const Step s = MakeStep(rng);
    if (step % 2 == 0) {  // the lanes' transitions in one set of arrays
      const DeviceStep all(device, s, 0, kLanes * kEnvs);
      lanes.Insert(*ops, kEnvs, all.obs.data(), all.actions.data(), all.rewards.data(), all.next_obs.data(),
                   all.final_obs.data(), all.terminated.data(), all.truncated.data());
    } else {  // or in separate ones, lane by lane
      for (int64_t l = 0; l < kLanes; ++l) {
        const DeviceStep part(device, s, l * kEnvs, kEnvs);
        lanes.InsertLane(*ops, l, kEnvs, part.obs.data(), part.actions.data(), part.rewards.data(),
                         part.next_obs.data(), part.final_obs.data(), part.terminated.data(), part.truncated.data());
      }
      lanes.Inserted(*ops, kEnvs);
    }
    lanes.Stored(kEnvs);
    for (int64_t l = 0; l < kLanes; ++l) {
      const DeviceStep part(device, s, l * kEnvs, kEnvs);
      alone[l]->Insert(*ops, kEnvs, part.obs.data(), part.actions.data(), part.rewards.data(), part.next_obs.data(),
                       part.final_obs.data(), part.terminated.data(), part.truncated.data());
      alone[l]->Stored(kEnvs);
    }
    lanes.Sample(*ops, 0, kNStep, kGamma);
    for (int64_t l = 0; l < kLanes; ++l) alone[l]->Sample(*ops, kSeeds[l], kNStep, kGamma);
    for (int64_t l = 0; l < kLanes; ++l)
      ASSERT_EQ(Minibatch(lanes, l, device), Minibatch(*alone[l], 0, device)) << "step " << step << ", lane " << l;
    // The same TD errors into both, then the priorities they give.
    std::vector<float> errors(kLanes * kBatch);
    for (float& e : errors) e = error(rng);
    CopyBytes(lanes.td_errors(), device, errors.data(), Device::kCpu, errors.size() * sizeof(float));
    for (int64_t l = 0; l < kLanes; ++l)
      CopyBytes(alone[l]->td_errors(), device, errors.data() + l * kBatch, Device::kCpu, kBatch * sizeof(float));
    lanes.UpdatePriorities(*ops);
    for (int64_t l = 0; l < kLanes; ++l) alone[l]->UpdatePriorities(*ops);
  }
  EXPECT_EQ(lanes.draws(), 9u);
  for (int64_t l = 0; l < kLanes; ++l) EXPECT_EQ(Saved(lanes, l), Saved(*alone[l], 0)) << "lane " << l;
  EXPECT_NE(Saved(lanes, 0), Saved(lanes, 1));

  // Lane 1's checkpoint part in a memory of one, and every lane's back into a memory of lanes:
  // both go on as lane 1 does.
  const testing::ScratchDir scratch("cugym_replay_lanes");
  std::vector<std::string> paths;
  for (int64_t l = 0; l < kLanes; ++l) {
    CheckpointWriter out;
    lanes.Save(out, l);
    paths.push_back((scratch / ("lane_" + std::to_string(l) + ".safetensors")).string());
    WriteSafetensors(paths.back(), out.tensors(), out.metadata());
  }
  ReplayMemory one(device, Options(1)), again(device, Options(kLanes));
  one.Load(CheckpointReader(paths[1]));
  one.set_draws(lanes.draws());
  again.SetLaneSeeds(kSeeds);
  for (int64_t l = 0; l < kLanes; ++l) again.Load(CheckpointReader(paths[l]), l);
  again.set_draws(lanes.draws());
  lanes.Sample(*ops, 0, kNStep, kGamma);
  one.Sample(*ops, kSeeds[1], kNStep, kGamma);
  again.Sample(*ops, 0, kNStep, kGamma);
  EXPECT_EQ(Minibatch(one, 0, device), Minibatch(lanes, 1, device));
  for (int64_t l = 0; l < kLanes; ++l) EXPECT_EQ(Minibatch(again, l, device), Minibatch(lanes, l, device)) << l;
}

// Explore and CollectEpisodes on K lanes against the same calls on each lane alone (one lane: a
// solo run), with ez-greedy holds, over steps where the counters move on; the rings also against
// the host's reference, env by env in order.
TEST_P(LanesTest, ExplorationAndEpisodesInLanesAreEachAgentsOwn) {
  const Device device = GetParam();
  const std::shared_ptr<nn::Backend> backend = nn::MakeBackend(device);
  const std::unique_ptr<ExploreOps> explore_ops = MakeOps<ExploreOps>(device, backend->native_stream());
  const std::unique_ptr<EpisodeOps> episode_ops = MakeOps<EpisodeOps>(device, backend->native_stream());
  const int64_t n = 5, total = kLanes * n;
  const EpsilonSchedule schedule{1.0, 0.05, 400.0};
  std::vector<int32_t> zeros(total, 0);
  Buffer<int32_t> lane_actions = OnDevice(device, zeros.data(), total),
                  own_actions = OnDevice(device, zeros.data(), total);
  Buffer<int32_t> lane_held = OnDevice(device, zeros.data(), total), lane_left = OnDevice(device, zeros.data(), total);
  Buffer<int32_t> own_held = OnDevice(device, zeros.data(), total), own_left = OnDevice(device, zeros.data(), total);
  Buffer<uint64_t> seeds = OnDevice(device, kSeeds.data(), kLanes);
  StepCounters start{0, 0};
  Buffer<StepCounters> counters = OnDevice(device, &start, 1);
  // Episode rings: one per lane for the lanes, one per lane for the agents alone.
  const int64_t capacity = 6;  // small: the rings wrap
  struct Ring {
    Ring(Device device, int64_t capacity) : returns(device, capacity), lengths(device, capacity), count(device, 1) {
      returns.Zero();
      lengths.Zero();
      count.Zero();
    }
    EpisodeRing view() {
      return EpisodeRing{returns.data(), lengths.data(), count.data(), static_cast<int64_t>(returns.size())};
    }
    std::string bytes() const {
      const auto r = returns.ToHost();
      const auto l = lengths.ToHost();
      return std::string(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(float)) +
             std::string(reinterpret_cast<const char*>(l.data()), l.size() * sizeof(int32_t)) + "/" +
             std::to_string(count.ToHost()[0]);
    }
    Buffer<float> returns;
    Buffer<int32_t> lengths;
    Buffer<unsigned long long> count;
  };
  std::vector<std::unique_ptr<Ring>> lane_rings, own_rings;
  std::vector<EpisodeRing> views, own_views;
  for (int64_t l = 0; l < kLanes; ++l) {
    lane_rings.push_back(std::make_unique<Ring>(device, capacity));
    own_rings.push_back(std::make_unique<Ring>(device, capacity));
    views.push_back(lane_rings.back()->view());
    own_views.push_back(own_rings.back()->view());
  }
  Buffer<EpisodeRing> rings = OnDevice(device, views.data(), kLanes);
  Buffer<EpisodeRing> own = OnDevice(device, own_views.data(), kLanes);
  // The host's rings, kept by the definition: each lane's ended envs in env order, the last
  // `capacity` of a step when more end at once.
  std::vector<std::vector<float>> host_returns(kLanes, std::vector<float>(capacity, 0.0f));
  std::vector<std::vector<int32_t>> host_lengths(kLanes, std::vector<int32_t>(capacity, 0));
  std::vector<unsigned long long> host_count(kLanes, 0);
  std::mt19937 rng(9);
  int explored = 0;  // steps where exploration replaced a greedy action
  for (int step = 0; step < 40; ++step) {
    std::vector<int32_t> greedy(total);
    for (int32_t& a : greedy) a = static_cast<int32_t>(rng() % 3);
    lane_actions.FromHost(greedy.data(), total);
    own_actions.FromHost(greedy.data(), total);
    explore_ops->Explore(lane_actions.data(), kLanes, n, counters.data(), schedule, seeds.data(), 3,
                         ExploreHold{lane_held.data(), lane_left.data(), 2.0f, 6});
    for (int64_t l = 0; l < kLanes; ++l)
      explore_ops->Explore(own_actions.data() + l * n, 1, n, counters.data(), schedule, seeds.data() + l, 3,
                           ExploreHold{own_held.data() + l * n, own_left.data() + l * n, 2.0f, 6});
    ASSERT_EQ(lane_actions.ToHost(), own_actions.ToHost()) << "step " << step;
    explored += lane_actions.ToHost() != greedy;
    ASSERT_EQ(lane_left.ToHost(), own_left.ToHost()) << "step " << step;
    std::vector<uint8_t> terminated(total), truncated(total);
    std::vector<float> returns(total);
    std::vector<int32_t> lengths(total);
    for (int64_t i = 0; i < total; ++i) {
      terminated[i] = rng() % 4 == 0;
      truncated[i] = rng() % 7 == 0;
      returns[i] = static_cast<float>(rng() % 1000) / 7.0f;
      lengths[i] = static_cast<int32_t>(rng() % 500);
    }
    Buffer<uint8_t> term = OnDevice(device, terminated.data(), total),
                    trunc = OnDevice(device, truncated.data(), total);
    Buffer<float> ret = OnDevice(device, returns.data(), total);
    Buffer<int32_t> len = OnDevice(device, lengths.data(), total);
    episode_ops->CollectEpisodes(term.data(), trunc.data(), ret.data(), len.data(), kLanes, n, rings.data());
    for (int64_t l = 0; l < kLanes; ++l)
      episode_ops->CollectEpisodes(term.data() + l * n, trunc.data() + l * n, ret.data() + l * n, len.data() + l * n, 1,
                                   n, own.data() + l);
    for (int64_t l = 0; l < kLanes; ++l) {
      std::vector<int64_t> ended;
      for (int64_t i = l * n; i < (l + 1) * n; ++i)
        if (terminated[i] | truncated[i]) ended.push_back(i);
      const int64_t first = std::max<int64_t>(0, static_cast<int64_t>(ended.size()) - capacity);
      for (int64_t k = first; k < static_cast<int64_t>(ended.size()); ++k) {
        const int64_t slot = static_cast<int64_t>((host_count[l] + k) % capacity);
        host_returns[l][slot] = returns[ended[k]];
        host_lengths[l][slot] = lengths[ended[k]];
      }
      host_count[l] += ended.size();
      ASSERT_EQ(lane_rings[l]->bytes(), own_rings[l]->bytes()) << "step " << step << ", lane " << l;
      ASSERT_EQ(lane_rings[l]->returns.ToHost(), host_returns[l]) << "step " << step << ", lane " << l;
      ASSERT_EQ(lane_rings[l]->lengths.ToHost(), host_lengths[l]) << "step " << step << ", lane " << l;
      ASSERT_EQ(lane_rings[l]->count.ToHost()[0], host_count[l]) << "step " << step << ", lane " << l;
    }
    episode_ops->AdvanceSteps(counters.data(), n);
  }
  EXPECT_GT(explored, 10);
  EXPECT_GT(lane_rings[0]->count.ToHost()[0], static_cast<unsigned long long>(capacity));  // the rings wrapped
}

TEST(Lanes, RefusesWhatDoesNotFitItsLanes) {
  using cugym::testing::InvalidArgumentMessage;
  ReplayMemory lanes(Device::kCpu, Options(kLanes));
  EXPECT_EQ(InvalidArgumentMessage([&] { lanes.SetLaneSeeds({1, 2}); }), "replay memory: 2 seeds for 3 lanes");
  EXPECT_THROW(ReplayMemory(Device::kCpu, Options(0)), std::invalid_argument);
  const std::shared_ptr<nn::Backend> backend = nn::MakeBackend(Device::kCpu);
  const std::unique_ptr<ReplayOps> ops = MakeOps<ReplayOps>(Device::kCpu, nullptr);
  std::vector<float> obs(kEnvs * kObs);
  std::vector<int32_t> actions(kEnvs);
  std::vector<float> rewards(kEnvs);
  std::vector<uint8_t> flags(kEnvs);
  EXPECT_THROW(lanes.InsertLane(*ops, kLanes, kEnvs, obs.data(), actions.data(), rewards.data(), obs.data(), obs.data(),
                                flags.data(), flags.data()),
               std::out_of_range);
  // Lanes share their head: a lane saved at another step is refused.
  const testing::ScratchDir scratch("cugym_replay_lanes_refused");
  ReplayMemory early(Device::kCpu, Options(1)), late(Device::kCpu, Options(1));
  late.Insert(*ops, kEnvs, obs.data(), actions.data(), rewards.data(), obs.data(), obs.data(), flags.data(),
              flags.data());
  late.Stored(kEnvs);
  for (auto [memory, name] : {std::pair<ReplayMemory*, const char*>{&early, "early"}, {&late, "late"}}) {
    CheckpointWriter out;
    memory->Save(out);
    WriteSafetensors((scratch / name).string(), out.tensors(), out.metadata());
  }
  lanes.Load(CheckpointReader((scratch / "early").string()), 0);
  EXPECT_NE(InvalidArgumentMessage([&] {
              lanes.Load(CheckpointReader((scratch / "late").string()), 1);
            }).find("replay position or size other than the other lanes'"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Devices, LanesTest, ::testing::Values(Device::kCpu, Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); });

}  // namespace
}  // namespace cugym::agent
