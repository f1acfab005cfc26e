// Env plugins: shared libraries that register envs in the same Registry the built-ins use.
//
// A plugin exports one C function (envs/plugin.h's CUGYM_PLUGIN_ENVS writes it):
//   extern "C" int cugym_plugin_entry(uint32_t host_abi, void* registry, char* error, size_t size);
// The host passes its kPluginAbi; the plugin refuses (returns kPluginAbiMismatch and names its
// own ABI in `error`) unless it was built against the same one, before touching the registry.
// A plugin may also export the licence it is under (envs/plugin.h's CUGYM_PLUGIN_LICENSE):
//   extern "C" const char* cugym_plugin_license();   // an SPDX expression, e.g. "MIT"
// Optional, so plugins built before it still load; `cugym list` and `--version` show "not declared".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/registry.h"

namespace cugym {

// Bumped whenever a header a plugin compiles against changes layout or meaning
// (Registry, EnvEntry, EnvSpec, VectorEnv, Canvas, the env contract).
// 4: lanes (VectorEnv::ResetLanes, BatchArrays::lane_size); 3: per-env seeds (VectorEnv::ResetSeeds,
// BatchArrays::seeds); 2: VectorEnv gained set_stream, snapshots, ResetMasked, SetOutputs; host envs
// Not bumped for CUGYM_PLUGIN_LICENSE, Registry's aliases and plugin records: a plugin calls only
// Registry::Register (out of line) and EnvEntry is unchanged, and the licence symbol is optional, so
// plugins built before load here and plugins built here load in a cugym of the same ABI before.
constexpr uint32_t kPluginAbi = 4;
constexpr const char* kPluginEntryName = "cugym_plugin_entry";
constexpr const char* kPluginLicenseName = "cugym_plugin_license";

enum PluginStatus : int { kPluginOk = 0, kPluginAbiMismatch = 1, kPluginRegisterFailed = 2 };

using PluginEntryFn = int (*)(uint32_t host_abi, void* registry, char* error, std::size_t error_size);

// Loads the plugin at `path` and lets it register its envs. Throws std::invalid_argument with a
// one-line reason: no such file, not a loadable shared library, no entry point (not a cugym
// plugin), built against another cugym ABI, or a registration error such as a duplicate env id.
// The library stays loaded for the life of the process.
// Loading the same file (the same canonical path) again is a no-op, so a plugin that was loaded by
// default (below) may also be named with --plugin.
void LoadPlugin(Registry& registry, const std::string& path);

// Loads the plugins every cugym front end (the CLI, the Python package) loads without being asked,
// in this order: each entry of the CUGYM_PLUGIN_PATH environment variable (':'-separated; a file, or
// a folder whose *.so files load in name order), then the *.so files of `shipped_dir` (the plugins
// built and installed with cugym, such as MinAtar; skipped when the folder does not exist). A plugin
// named by CUGYM_PLUGIN_PATH that fails to load throws (the user asked for it); a shipped one that
// fails is skipped, and its reason is returned as one line per plugin for the caller to show.
std::vector<std::string> LoadDefaultPlugins(Registry& registry, const std::string& shipped_dir);

// The folder of the shipped plugins for the program at `executable`: `relative` (a path relative to
// the program's folder, CUGYM_PLUGIN_DIR_FROM_BIN of the build) resolved there. Empty if the
// program's path cannot be resolved.
std::string ShippedPluginDirFor(const std::string& executable, const std::string& relative);

// After LoadDefaultPlugins (and any other plugin): for the plugins shipped with cugym (today
// MinAtar), adds the old ids that still load (MinAtar-<Game>-v0, all six actions, now
// MinAtar-<Game>-v1 with full_action_space) as aliases with a note, and notes the ids that are not
// registered (Registry::NoteMissing) with how to get them: not found in `shipped_dir` where this
// cugym built them (GetBuildInfo()), else configured without them.
void NoteShippedEnvs(Registry& registry, const std::string& shipped_dir);

}  // namespace cugym
