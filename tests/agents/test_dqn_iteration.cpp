// The DQN iteration: its changing values (step counters, epsilon, the exploration key, the replay
// head) kept on the device, so the same work runs eagerly and as one captured graph: the
// whole-iteration graph path against the eager loop (on the CPU, where nn's Graph calls the
// recorded work again, and on CUDA), and the graph helper's policy (agents/common/cuda_graph.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "agents/common/cuda_graph.h"
#include "agents/off_policy/dqn.h"
#include "agents/run/config_source.h"
#include "core/safetensors.h"
#include "nn/backend.h"
#include "tests/agents/agent_test_util.h"
#include "tests/gpu_skip.h"

namespace cugym::agent {
namespace {

namespace fs = std::filesystem;

using testing::Builtins;
using testing::ScratchDir;
using testing::SoloRun;

// FNV-1a over a checkpoint's tensors (both networks, Adam, the envs' state, the exploration holds,
// and the stored rows of the replay memory and the episode ring: the rest was never written) and
// the counters in its metadata.
uint64_t CheckpointHash(const fs::path& path) {
  const SafetensorsFile file = ReadSafetensors(path.string());
  const int64_t replay_rows = std::stoll(file.metadata.at("cugym.replay.size"));
  const int64_t ring_slots = std::min<int64_t>(std::stoll(file.metadata.at("cugym.episodes")), 4096);
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&h](const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  };
  for (const NamedTensor& t : file.tensors) {
    std::size_t bytes = t.data.size();
    const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
    if (t.name.rfind("replay.", 0) == 0) bytes = bytes / rows * replay_rows;
    if (t.name == "episodes.returns" || t.name == "episodes.lengths") bytes = bytes / rows * ring_slots;
    add(t.name.data(), t.name.size());
    add(t.data.data(), bytes);
  }
  for (const char* key :
       {"cugym.global_step", "cugym.vector_steps", "cugym.draws", "cugym.next_target_step", "cugym.update_debt",
        "cugym.learning_resumes_at", "cugym.episodes", "cugym.replay.position", "cugym.replay.size"}) {
    const std::string& value = file.metadata.at(key);
    add(value.data(), value.size());
  }
  return h;
}

// A shipped config cut to 3000 env steps (2000 in sanitizer builds) with learning from step 1000
// and no evaluations: a few hundred gradient steps of each, in about a second.
TrainConfig ShortShipped(const char* env_id) {
  const ShippedConfig* shipped = FindShippedConfig(env_id);
  TrainConfig config;
  config.Apply(ParseToml(shipped->toml, shipped->path));
  config.total_steps = testing::kSanitizerBuild ? 2000 : 3000;  // the same paths, fewer updates
  config.learning_starts = 1000;
  config.eval_episodes = 0;
  config.stop_at_threshold = false;
  return config;
}

// The cases below: the shipped configs (integral gradient steps per vector step; MountainCar's
// target update every env step, the others' every 10 or 250) and one that is neither (3 envs,
// 0.9 gradient steps per vector step, 3-step Double DQN, targets every 7 env steps). Sanitizer
// builds leave LunarLander out (its 256-wide network dominates there; the Release build runs it).
std::map<std::string, TrainConfig> Cases() {
  std::map<std::string, TrainConfig> cases;
  for (const char* id : {"CartPole-v1", "Acrobot-v1", "MountainCar-v0", "LunarLander-v3"}) {
    if (testing::kSanitizerBuild && std::string(id) == "LunarLander-v3") continue;
    if (Builtins().Find(id) != nullptr) cases[id] = ShortShipped(id);
  }
  TrainConfig odd = ShortShipped("CartPole-v1");
  odd.num_envs = 3;
  odd.replay_ratio = 0.3;
  odd.n_step = 3;
  odd.double_dqn = true;
  odd.target_update_interval = 7;
  cases["odd"] = odd;
  return cases;
}

uint64_t RunHash(SoloRun<DqnAgent>& agent, const fs::path& checkpoint) {
  agent.TrainQuietly();
  agent.SaveCheckpoint(checkpoint.string());
  return CheckpointHash(checkpoint);
}

// The whole-iteration graph path on the CPU (nn's CPU Graph calls the recorded work again):
// which iterations it replays, which it runs eagerly, and the target updates inside and outside
// it give the eager loop's run bit for bit, also across a checkpoint and resume, and with prioritized
// replay (priorities of new rows and of sampled ones inside the graph).
TEST(DqnIteration, TheIterationGraphPathGivesTheEagerRunOnTheCpu) {
  const ScratchDir dir("cugym_dqn_graph_cpu");
  std::map<std::string, TrainConfig> cases = Cases();
  cases["per"] = ShortShipped("CartPole-v1");
  cases["per"].prioritized_replay = true;
  for (const auto& [name, config] : cases) {
    SCOPED_TRACE(name);
    SoloRun<DqnAgent> eager(Builtins(), config, Device::kCpu);
    const uint64_t expected = RunHash(eager, dir / "eager.safetensors");
    EXPECT_FALSE(eager->replays_iteration_graph());
    SoloRun<DqnAgent> graph(Builtins(), config, Device::kCpu);
    graph->set_iteration_graph_on_cpu(true);
    EXPECT_EQ(RunHash(graph, dir / "graph.safetensors"), expected);
    // The shipped configs but LunarLander (stepped on the host) fit one graph per iteration;
    // 0.9 gradient steps per vector step do not.
    EXPECT_EQ(graph->replays_iteration_graph(), name != "LunarLander-v3" && name != "odd");

    // Stopped after 1504 env steps (learning runs), checkpointed and resumed in a new agent:
    // its first iteration runs eagerly again, then the graph takes over. (LunarLander's Box2D
    // worlds are not in checkpoints: its resumed episodes restart, another run.)
    if (name == "LunarLander-v3") continue;
    const std::string checkpoint = (dir / "ckpt.safetensors").string();
    {
      SoloRun<DqnAgent> first(Builtins(), config, Device::kCpu);
      first->set_iteration_graph_on_cpu(true);
      first.Train([](const MetricsRow&) {}, [&] { return first.global_step() >= 1504; }, [] {});
      first.SaveCheckpoint(checkpoint);
    }
    SoloRun<DqnAgent> resumed(Builtins(), config, Device::kCpu);
    resumed->set_iteration_graph_on_cpu(true);
    resumed.LoadCheckpoint(checkpoint);
    EXPECT_EQ(RunHash(resumed, dir / "resumed.safetensors"), expected);
  }
}

// A run's checkpoint loaded into an agent that has captured its graph and into a fresh agent, then
// trained on: the same bits. The checkpoint is of another seed's run, so its envs' seed (a value
// the captured env step holds) is not the agent's own.
uint64_t ReloadedAfterCapture(const TrainConfig& config, Device device, const std::string& checkpoint,
                              const fs::path& out, bool graph_on_cpu) {
  SoloRun<DqnAgent> agent(Builtins(), config, device);
  agent->set_iteration_graph_on_cpu(graph_on_cpu);
  agent.TrainQuietly();
  EXPECT_TRUE(agent->replays_iteration_graph() || agent->replays_update_graph());
  agent.LoadCheckpoint(checkpoint);
  // The graphs and their warm-ups are gone: the first iteration after the load runs eagerly, the
  // next captures again.
  EXPECT_FALSE(agent->replays_iteration_graph());
  EXPECT_FALSE(agent->replays_update_graph());
  const int64_t loaded_at = agent.global_step(), n = config.num_envs;
  agent.Train([](const MetricsRow&) {}, [&] { return agent.global_step() >= loaded_at + n; }, [] {});
  EXPECT_FALSE(agent->replays_iteration_graph());
  agent.Train([](const MetricsRow&) {}, [&] { return agent.global_step() >= loaded_at + 2 * n; }, [] {});
  if (config.replay_ratio * static_cast<double>(n) == 4.0) {  // a whole-iteration graph config
    EXPECT_TRUE(agent->replays_iteration_graph());
  }
  return RunHash(agent, out);
}

// Another seed's run of `config` checkpointed at 1504 env steps, loaded into a fresh agent and
// into one that has captured its graphs (ReloadedAfterCapture): both train on to the same bits.
void ExpectReloadAfterCaptureIsAFreshLoad(const TrainConfig& config, Device device, const fs::path& dir) {
  TrainConfig other = config;
  other.seed = config.seed + 1;
  const std::string checkpoint = (dir / "other.safetensors").string();
  {
    SoloRun<DqnAgent> agent(Builtins(), other, device);
    agent.Train([](const MetricsRow&) {}, [&] { return agent.global_step() >= 1504; }, [] {});
    agent.SaveCheckpoint(checkpoint);
  }
  const bool graph_on_cpu = device == Device::kCpu;
  SoloRun<DqnAgent> fresh(Builtins(), config, device);
  fresh->set_iteration_graph_on_cpu(graph_on_cpu);
  fresh.LoadCheckpoint(checkpoint);
  const uint64_t expected = RunHash(fresh, dir / "fresh.safetensors");
  // The CPU runs only the whole-iteration graph; CUDA also the per-update one.
  EXPECT_TRUE(fresh->replays_iteration_graph() || (!graph_on_cpu && fresh->replays_update_graph()));
  EXPECT_EQ(ReloadedAfterCapture(config, device, checkpoint, dir / "reloaded.safetensors", graph_on_cpu), expected);
}

// LoadCheckpoint drops the captured graphs (DqnAgent::DropGraphs): on the CPU the iteration graph
// path shows it (a graph that stayed would be replayed right after the load, and its warm-up would
// not run again), and the reloaded agent trains on as a fresh agent that loads the checkpoint.
TEST(DqnIteration, LoadCheckpointDropsTheCapturedGraph) {
  const ScratchDir dir("cugym_dqn_graph_reload_cpu");
  // 8 envs, 4 gradient steps per vector step: the whole-iteration graph.
  ExpectReloadAfterCaptureIsAFreshLoad(ShortShipped("CartPole-v1"), Device::kCpu, dir.path);
}

// The same on CUDA, where a graph that stayed would replay the env step with the agent's own env
// seed instead of the checkpoint's: the whole-iteration graph (CartPole) and the per-update graph
// (0.3 gradient steps per vector step).
TEST(DqnIterationCuda, LoadCheckpointDropsTheCapturedGraphs) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_dqn_graph_reload_cuda");
  TrainConfig odd = ShortShipped("CartPole-v1");
  odd.num_envs = 3;
  odd.replay_ratio = 0.3;
  for (const TrainConfig& config : {ShortShipped("CartPole-v1"), odd}) {
    SCOPED_TRACE(config.replay_ratio);
    ExpectReloadAfterCaptureIsAFreshLoad(config, Device::kCuda, dir.path);
  }
}

// On CUDA: cartpole.toml and acrobot.toml (4 and 2 gradient steps per vector step, Polyak every
// 10 and hard copies every 250 env steps, outside the graph), MountainCar (8 Polyak updates and
// exploration holds inside it), CartPole with 3-step Double DQN, clipping and holds, and with
// prioritized replay, 250 learning iterations each: the iteration graph gives the eager loop's state bit for bit, and
// it is the graph that ran.
TEST(DqnIterationCuda, GraphReplayGivesTheEagerRun) {
  CUGYM_SKIP_WITHOUT_GPU(Device::kCuda);
  const ScratchDir dir("cugym_dqn_graph_cuda");
  TrainConfig variant = ShortShipped("CartPole-v1");
  variant.double_dqn = true;
  variant.n_step = 3;
  variant.max_grad_norm = 10.0;
  variant.exploration_hold_mu = 2.0;
  TrainConfig per = ShortShipped("CartPole-v1");
  per.prioritized_replay = true;
  const std::map<std::string, TrainConfig> cases = {{"CartPole-v1", ShortShipped("CartPole-v1")},
                                                    {"Acrobot-v1", ShortShipped("Acrobot-v1")},
                                                    {"MountainCar-v0", ShortShipped("MountainCar-v0")},
                                                    {"CartPole-v1 variant", variant},
                                                    {"CartPole-v1 prioritized", per}};
  for (auto [name, config] : cases) {
    SCOPED_TRACE(name);
    config.cuda_graph = false;
    SoloRun<DqnAgent> eager(Builtins(), config, Device::kCuda);
    const uint64_t expected = RunHash(eager, dir / "eager.safetensors");
    EXPECT_FALSE(eager->replays_iteration_graph());
    config.cuda_graph = true;
    SoloRun<DqnAgent> graph(Builtins(), config, Device::kCuda);
    EXPECT_EQ(RunHash(graph, dir / "graph.safetensors"), expected);
    EXPECT_TRUE(graph->replays_iteration_graph());
    EXPECT_FALSE(graph->replays_update_graph());
  }
}

// The graph helper's policy on the CPU back end, whose graph calls the recorded work again: the
// first Run is eager, the second captures and replays, later ones replay the captured work (not
// the one they are given), and Drop starts over with an eager warm-up.
TEST(AgentCudaGraph, WarmsUpCapturesReplaysAndStartsOverAfterDrop) {
  const std::shared_ptr<nn::Backend> backend = nn::MakeBackend(Device::kCpu);
  agent::CudaGraph graph;
  int calls = 0;
  graph.Run(*backend, [&] { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(graph.replaying());
  graph.Run(*backend, [&] { ++calls; });
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(graph.replaying());
  graph.Run(*backend, [&] { calls += 100; });
  EXPECT_EQ(calls, 3);
  graph.Drop();
  EXPECT_FALSE(graph.replaying());
  graph.Run(*backend, [&] { calls += 10; });
  EXPECT_EQ(calls, 13);
  EXPECT_FALSE(graph.replaying());
  graph.Run(*backend, [&] { calls += 10; });
  EXPECT_EQ(calls, 23);
  EXPECT_TRUE(graph.replaying());
  EXPECT_FALSE(graph.failed());
}

}  // namespace
}  // namespace cugym::agent
