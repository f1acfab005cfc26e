// The env registry: maps ids to specs and to factories that build a VectorEnv on a device.
// Built-in envs are registered by one explicit function (RegisterBuiltinEnvs in envs/); plugins
// call the same Register from their entry point. No static self-registration.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/canvas.h"
#include "core/spec.h"
#include "core/vector_env.h"

namespace cugym {

using VectorEnvFactory = std::function<std::unique_ptr<VectorEnv>(int64_t num_envs, Device device)>;

struct EnvEntry {
  EnvSpec spec;
  // Bytes one env takes on the device: lets MakeVectorEnv refuse a batch before allocating.
  int64_t bytes_per_env = 0;
  // Bytes one env step reads and writes in device memory when nothing stays cached (state,
  // counters, outputs): the traffic model benchmarks compare with memory bandwidth.
  int64_t bytes_per_step = 0;
  VectorEnvFactory make_cpu;
  VectorEnvFactory make_cuda;  // empty when the env has no CUDA instantiation
  // The env steps on host threads whatever the device (it needs a physics engine: Box2D); on
  // cuda its outputs are copied to the device after each step (envs/host_batched_env.h).
  bool host_stepped = false;
  // Draws one env from its flat state (VectorEnv::GetStates) on a canvas of the spec's
  // render size; empty when the env does not draw.
  std::function<void(const float* flat_state, Canvas& canvas)> draw;
};

class Registry {
 public:
  // Throws std::invalid_argument for a duplicate id.
  void Register(EnvEntry entry);
  // nullptr when unknown.
  const EnvEntry* Find(const std::string& id) const;
  // Throws std::invalid_argument naming the known ids, or for an id noted as missing, the reason.
  const EnvEntry& Get(const std::string& id) const;
  std::vector<std::string> Ids() const;
  const std::vector<EnvEntry>& entries() const { return entries_; }

  // An env this build leaves out (LunarLander without Box2D): asking for it says `reason`, e.g.
  // "needs Box2D, which this cugym was built without; ...", instead of "unknown env".
  void NoteMissing(const std::string& id, const std::string& reason);
  // The ids noted as missing, with their reasons.
  const std::vector<std::pair<std::string, std::string>>& missing() const { return missing_; }

 private:
  std::vector<EnvEntry> entries_;
  std::vector<std::pair<std::string, std::string>> missing_;
};

// Largest batch MakeVectorEnv accepts, whatever the memory (indices stay 32-bit on the device).
constexpr int64_t kMaxNumEnvs = int64_t{1} << 31;

// Checks num_envs (> 0, <= kMaxNumEnvs, fits in the device's free memory) and builds the env.
// Throws std::invalid_argument with a one-line reason.
std::unique_ptr<VectorEnv> MakeVectorEnv(const Registry& registry, const std::string& id, int64_t num_envs,
                                         Device device);

}  // namespace cugym
