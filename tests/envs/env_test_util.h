// Helpers for env tests: back-end tags for typed tests and host copies of VectorEnv outputs.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/memory.h"
#include "core/registry.h"
#include "core/vector_env.h"
#include "envs/builtin.h"

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

// Skips the current test when `device` cannot run here (CUDA without a GPU or CUDA build).
#define CUGYM_SKIP_IF_UNAVAILABLE(device)                                               \
  do {                                                                                  \
    if ((device) == ::cugym::Device::kCuda && !::cugym::CudaAvailable())                \
      GTEST_SKIP() << "CUDA back end not runnable here: " << ::cugym::CudaUnavailableReason(); \
  } while (0)

inline const Registry& Builtins() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    RegisterBuiltinEnvs(*r);
    return r;
  }();
  return *registry;
}

template <class T>
std::vector<T> Host(const T* ptr, int64_t count, Device device) {
  std::vector<T> out(count);
  CopyBytes(out.data(), Device::kCpu, ptr, device, count * sizeof(T));
  return out;
}

// Steps `env` once with host-side int32 actions.
inline void StepWith(VectorEnv& env, const std::vector<int32_t>& actions) {
  Buffer<int32_t> buffer(env.device(), actions.size());
  buffer.FromHost(actions.data(), actions.size());
  env.Step(buffer.data());
}

}  // namespace cugym::testing
