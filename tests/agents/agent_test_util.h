// Shared by the agent suites: the built-in envs' registry, a scratch folder per test, a quiet
// training run.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "agents/agent.h"
#include "core/registry.h"
#include "envs/builtin.h"
#include "tests/sanitizer.h"

namespace cugym::testing {

inline const Registry& Builtins() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    RegisterBuiltinEnvs(*r);
    return r;
  }();
  return *registry;
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

// Trains to total_steps with no logging, no stop and no checkpoints.
inline void TrainQuietly(agent::Agent& agent) {
  agent.Train([](const agent::DqnProgress&) {}, [] { return false; }, [] {});
}

}  // namespace cugym::testing
