// Helpers for env tests: back-end tags for typed tests and host copies of VectorEnv outputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/plugin.h"
#include "core/registry.h"
#include "core/vector_env.h"
#include "envs/builtin.h"
#include "tests/gpu_skip.h"

namespace cugym::testing {

struct CpuBackendTag {
  static constexpr Device kDevice = Device::kCpu;
};
struct CudaBackendTag {
  static constexpr Device kDevice = Device::kCuda;
};
using BackendTags = ::testing::Types<CpuBackendTag, CudaBackendTag>;

class BackendNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return DeviceName(T::kDevice);
  }
};

// The built-in envs plus the plugins named in CUGYM_TEST_PLUGINS (paths separated by ':'), so
// the shared conformance suite runs on a plugin's envs too (tests/plugin/test_plugin.sh).
inline const Registry& Builtins() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    RegisterBuiltinEnvs(*r);
    if (const char* plugins = std::getenv("CUGYM_TEST_PLUGINS")) {
      std::string list = plugins;
      for (std::size_t start = 0; start < list.size();) {
        std::size_t end = list.find(':', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) LoadPlugin(*r, list.substr(start, end - start));
        start = end + 1;
      }
    }
    return r;
  }();
  return *registry;
}

// Every registered id, variants ("ID:OPTION", core/registry.h) included: what the suites cover.
inline std::vector<std::string> AllIds(const Registry& registry) {
  std::vector<std::string> ids;
  for (const EnvEntry& entry : registry.entries()) ids.push_back(entry.spec.id);
  return ids;
}

template <class T>
std::vector<T> Host(const T* ptr, int64_t count, Device device) {
  std::vector<T> out(count);
  CopyBytes(out.data(), Device::kCpu, ptr, device, count * sizeof(T));
  return out;
}

// Steps `env` once with host-side int32 actions, and waits for the step: the device copy of the
// actions is freed on return, and the step may still be running on the GPU.
inline void StepWith(VectorEnv& env, const std::vector<int32_t>& actions) {
  Buffer<int32_t> buffer(env.device(), actions.size());
  buffer.FromHost(actions.data(), actions.size());
  env.Step(buffer.data());
  Synchronize(env.device());
}

}  // namespace cugym::testing
