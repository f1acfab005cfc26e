// Env plugins: shared libraries that register envs in the same Registry the built-ins use.
//
// A plugin exports one C function (envs/plugin.h's CUGYM_PLUGIN_ENVS writes it):
//   extern "C" int cugym_plugin_entry(uint32_t host_abi, void* registry, char* error, size_t size);
// The host passes its kPluginAbi; the plugin refuses (returns kPluginAbiMismatch and names its
// own ABI in `error`) unless it was built against the same one, before touching the registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/registry.h"

namespace cugym {

// Bumped whenever a header a plugin compiles against changes layout or meaning
// (Registry, EnvEntry, EnvSpec, VectorEnv, Canvas, the env contract).
constexpr uint32_t kPluginAbi = 3;  // 3: per-env seeds (VectorEnv::ResetSeeds, BatchArrays::seeds); 2: VectorEnv gained
                                    // set_stream, snapshots, ResetMasked, SetOutputs; host envs
constexpr const char* kPluginEntryName = "cugym_plugin_entry";

enum PluginStatus : int { kPluginOk = 0, kPluginAbiMismatch = 1, kPluginRegisterFailed = 2 };

using PluginEntryFn = int (*)(uint32_t host_abi, void* registry, char* error, std::size_t error_size);

// Loads the plugin at `path` and lets it register its envs. Throws std::invalid_argument with a
// one-line reason: no such file, not a loadable shared library, no entry point (not a cugym
// plugin), built against another cugym ABI, or a registration error such as a duplicate env id.
// The library stays loaded for the life of the process.
void LoadPlugin(Registry& registry, const std::string& path);

}  // namespace cugym
