// A replay memory of K lanes (ReplayOptions::lanes, DqnBatch's) against K memories of one on every
// back end: each lane stores, samples (with its own seed, by priority), weighs, updates priorities
// and checkpoints as a memory of its own would, bit for bit, and a lane's checkpoint loads into a
// memory of one that then goes on as the lane does. The CUDA case skips without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "agents/agent_ops.h"
#include "agents/replay_memory.h"
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
  for (const NamedTensor& t : out.tensors())
    text += t.name + ":" + std::string(t.data.begin(), t.data.end()) + "\n";
  return text;
}

class ReplayLanesTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { CUGYM_SKIP_WITHOUT_GPU(GetParam()); }
};

TEST_P(ReplayLanesTest, EachLaneIsAMemoryOfItsOwn) {
  const Device device = GetParam();
  const std::shared_ptr<nn::Backend> backend = nn::MakeBackend(device);
  const std::unique_ptr<AgentOps> ops = MakeAgentOps(device, backend->native_stream());
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

TEST(ReplayLanes, RefusesWhatDoesNotFitItsLanes) {
  using cugym::testing::InvalidArgumentMessage;
  ReplayMemory lanes(Device::kCpu, Options(kLanes));
  EXPECT_EQ(InvalidArgumentMessage([&] { lanes.SetLaneSeeds({1, 2}); }), "replay memory: 2 seeds for 3 lanes");
  EXPECT_THROW(ReplayMemory(Device::kCpu, Options(0)), std::invalid_argument);
  const std::shared_ptr<nn::Backend> backend = nn::MakeBackend(Device::kCpu);
  const std::unique_ptr<AgentOps> ops = MakeCpuAgentOps();
  std::vector<float> obs(kEnvs * kObs);
  std::vector<int32_t> actions(kEnvs);
  std::vector<float> rewards(kEnvs);
  std::vector<uint8_t> flags(kEnvs);
  EXPECT_THROW(lanes.InsertLane(*ops, kLanes, kEnvs, obs.data(), actions.data(), rewards.data(), obs.data(),
                                obs.data(), flags.data(), flags.data()),
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
  EXPECT_NE(InvalidArgumentMessage([&] { lanes.Load(CheckpointReader((scratch / "late").string()), 1); })
                .find("replay position or size other than the other lanes'"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Devices, ReplayLanesTest, ::testing::Values(Device::kCpu, Device::kCuda),
                         [](const ::testing::TestParamInfo<Device>& info) { return DeviceName(info.param); });

}  // namespace
}  // namespace cugym::agent
