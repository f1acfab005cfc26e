// Shared by the agent suites: the built-in envs' registry, a scratch folder per test, an agent of
// one lane driven as a solo run.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/algorithm.h"
#include "agents/common/train_config.h"
#include "agents/run/train_schedule.h"
#include "core/registry.h"
#include "core/toml.h"
#include "envs/builtin.h"
#include "tests/sanitizer.h"

namespace cugym::testing {

// Whether `got` holds `want`'s bits element by element (-0 against 0 and NaN against NaN exactly).
// A failure names `op`, the first element that differs with both values, and how many differ: what
// the GPU check's log has to say about a CUDA op that leaves the CPU's bits.
template <class T>
::testing::AssertionResult SameBits(const std::string& op, const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << op << ": " << got.size() << " elements against " << want.size();
  std::size_t first = got.size(), differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
    if (differ++ == 0) first = i;
  }
  if (differ == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << op << ": element " << first << " of " << got.size() << " differs ("
                                       << +got[first] << " against " << +want[first] << "), " << differ << " in all";
}

inline const Registry& Builtins() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    RegisterBuiltinEnvs(*r);
    return r;
  }();
  return *registry;
}

// The one line a config in TOML is refused with, or "" when it is valid.
inline std::string ConfigError(const std::string& toml) {
  try {
    agent::TrainConfig config;
    config.Apply(ParseToml(toml, "c.toml"));
    config.Validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// The one line MakeAgent refuses a config with on the CPU, or "" when it makes the agent.
inline std::string MakeError(const agent::TrainConfig& config) {
  try {
    agent::MakeAgent(Builtins(), config, Device::kCpu);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A fresh folder under the temp directory, removed again when the test ends (also on failure).
// The process id keeps two test runs at once (two build trees) out of each other's way.
struct ScratchDir {
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::filesystem::path operator/(const std::string& file) const { return path / file; }
  std::filesystem::path path;
};

// An agent of one lane driven as a solo run is (the driver's loop, trainer.h, without its run
// folder): its schedule of metrics rows, evaluations and checkpoints, and the loop's values, which
// its checkpoints keep. `agent` is a DqnAgent or a PqnAgent.
template <class A>
struct SoloRun {
  template <class... Args>
  explicit SoloRun(Args&&... args) : agent(std::forward<Args>(args)...) {}

  // Trains until total_steps or until `stop()` returns true (polled before every iteration).
  void Train(const std::function<void(const agent::MetricsRow&)>& on_log, const std::function<bool()>& stop,
             const std::function<void()>& on_checkpoint,
             const std::function<bool(const agent::TrainEvaluation&)>& on_eval = {}) {
    int64_t step = agent.global_step();
    agent::TrainSchedule schedule(
        agent.config(), step, loop,
        [this](double seconds, int64_t steps) { return agent.Progress(0, seconds, steps, loop); },
        [this](int64_t k) { return agent.Evaluate(0, k); }, on_log, on_checkpoint, on_eval);
    while (schedule.going() && !stop()) {
      agent.Iterate();
      step = agent.global_step();
      schedule.Iterated();
    }
    schedule.End();
  }
  // Trains to total_steps with no logging, no stop and no checkpoints.
  void TrainQuietly() {
    Train([](const agent::MetricsRow&) {}, [] { return false; }, [] {});
  }
  void SaveCheckpoint(const std::string& path) const { agent.SaveCheckpoint(0, path, loop); }
  void LoadCheckpoint(const std::string& path) { loop = agent.LoadCheckpoints({path}).front(); }
  void SaveModel(const std::string& path) const { agent.SaveModel(0, path); }
  agent::EvalResult Evaluate(int64_t k) { return agent.Evaluate(0, k); }
  int64_t global_step() const { return agent.global_step(); }
  A* operator->() { return &agent; }

  A agent;
  agent::LoopState loop;
};

}  // namespace cugym::testing
