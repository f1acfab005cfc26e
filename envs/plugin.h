// Writing an env plugin: define the env struct (envs/env.h), then in one .cpp
//
//   #include <cugym/envs/plugin.h>   // or "envs/plugin.h" inside the cugym tree
//   #include "my_env.h"
//   CUGYM_PLUGIN_ENVS(MyEnv, MyOtherEnv)
//
//   CUGYM_PLUGIN_LICENSE("MIT")   // the licence the plugin is under (an SPDX expression)
//
// (CUGYM_PLUGIN_HOST_ENVS for host envs that bring their own physics engine, host_batched_env.h)
// and build it with cugym_add_env_plugin(NAME my_envs SOURCES my_plugin.cpp) from the installed
// CMake package. That function compiles the file twice: with the host compiler (the CPU back
// end and the plugin's entry point) and, when CUDA is available, with nvcc (the CUDA back end).
// See docs/custom-envs.md.
#pragma once

#include <array>
#include <cstdio>
#include <exception>
#include <memory>

#include "core/plugin.h"
#include "envs/batched_env.h"

#if defined(__CUDACC__)
#include "envs/backend_cuda.cuh"
#else
#include "envs/backend_cpu.h"
#include "envs/host_batched_env.h"
#endif

namespace cugym {

template <class... Envs>
struct EnvList {};

namespace detail {

#if defined(__CUDACC__)
// Taking each factory's address instantiates the CUDA back end of every env in this unit.
template <class... Envs>
std::array<std::unique_ptr<VectorEnv> (*)(int64_t), sizeof...(Envs)> CudaFactories(EnvList<Envs...>) {
  return {&MakeCudaVectorEnv<Envs>...};
}
#else
// `host`: the envs are host envs (envs/host_batched_env.h), else CUGYM_HD env structs (env.h).
template <bool kHost, class... Envs>
int PluginEntry(EnvList<Envs...>, uint32_t host_abi, void* registry, char* error, std::size_t error_size) {
  if (host_abi != kPluginAbi) {
    std::snprintf(error, error_size, "plugin ABI %u", static_cast<unsigned>(kPluginAbi));
    return kPluginAbiMismatch;
  }
  try {
    if constexpr (kHost) {
      (static_cast<Registry*>(registry)->Register(MakeHostEnvEntry<Envs>()), ...);
    } else {
      (static_cast<Registry*>(registry)->Register(MakeEnvEntry<Envs>()), ...);
    }
    return kPluginOk;
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
  } catch (...) {
    std::snprintf(error, error_size, "unknown error while registering envs");
  }
  return kPluginRegisterFailed;
}
#endif

}  // namespace detail
}  // namespace cugym

#if defined(__CUDACC__)
#define CUGYM_PLUGIN_ENVS(...)                                         \
  namespace {                                                          \
  [[maybe_unused]] const auto cugym_plugin_cuda_factories =            \
      ::cugym::detail::CudaFactories(::cugym::EnvList<__VA_ARGS__>{}); \
  }
#else
#define CUGYM_PLUGIN_ENVS(...)                                                                                    \
  extern "C" __attribute__((visibility("default"))) int cugym_plugin_entry(uint32_t host_abi, void* registry,     \
                                                                           char* error, std::size_t error_size) { \
    return ::cugym::detail::PluginEntry<false>(::cugym::EnvList<__VA_ARGS__>{}, host_abi, registry, error,        \
                                               error_size);                                                       \
  }
#endif

// Host envs (their own physics engine, stepped on host threads: envs/host_batched_env.h). They have
// no CUDA instantiation, so nvcc's pass (if any) adds nothing; build such plugins with NO_CUDA.
// One plugin source uses either this macro or CUGYM_PLUGIN_ENVS, not both.
#if defined(__CUDACC__)
#define CUGYM_PLUGIN_HOST_ENVS(...)
#else
#define CUGYM_PLUGIN_HOST_ENVS(...)                                                                                    \
  extern "C" __attribute__((visibility("default"))) int cugym_plugin_entry(uint32_t host_abi, void* registry,          \
                                                                           char* error, std::size_t error_size) {      \
    return ::cugym::detail::PluginEntry<true>(::cugym::EnvList<__VA_ARGS__>{}, host_abi, registry, error, error_size); \
  }
#endif

// The licence the plugin is under, an SPDX expression ("MIT", "GPL-3.0-only", "Apache-2.0"):
// `cugym list` and `cugym --version` show it beside the plugin's envs. Optional (a plugin without it
// loads, shown as "not declared"); at most once per plugin, in the file with CUGYM_PLUGIN_ENVS.
#if defined(__CUDACC__)
#define CUGYM_PLUGIN_LICENSE(spdx)
#else
#define CUGYM_PLUGIN_LICENSE(spdx) \
  extern "C" __attribute__((visibility("default"))) const char* cugym_plugin_license() { return spdx; }
#endif
