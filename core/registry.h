// The env registry: maps ids to specs and to factories that build a VectorEnv on a device.
// Built-in envs are registered by one explicit function (RegisterBuiltinEnvs in envs/); plugins
// call the same Register from their entry point. No static self-registration.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <set>
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

// A plugin loaded into a registry: its file, the licence it declares (an SPDX expression, from
// CUGYM_PLUGIN_LICENSE; empty when it declares none) and the ids it registered.
struct PluginRecord {
  std::string path;
  std::string license;
  std::vector<std::string> ids;
};

// An id that now names another env (or variant), kept so that old configs, checkpoints and
// scripts still load: Find and Get follow it, and Get passes `note` to the note handler.
struct EnvAlias {
  std::string old_id, id, note;
};

// The licence of cugym itself and of its built-in envs (LICENSE in the repository root).
inline constexpr const char* kCugymLicense = "MIT";

// Variants: an entry registered as "ID:OPTION" is env ID with the boolean option OPTION on, e.g.
// "MinAtar-Breakout-v1:full_action_space" (all six actions; ALE's keyword). Users name the option as
// a keyword (Python: full_action_space=True) or in the id ("ID:OPTION", the CLI and config files).
// Ids() lists the ids without options; Options(id) the options an id has.
class Registry {
 public:
  // Throws std::invalid_argument for a duplicate id.
  void Register(EnvEntry entry);
  // nullptr when unknown. Follows aliases.
  const EnvEntry* Find(const std::string& id) const;
  // Throws std::invalid_argument naming the known ids, for an id noted as missing the reason, and
  // for "ID:OPTION" of a known ID without that option, the options it has. Follows aliases, and
  // the first time an alias is asked for, passes its note to the note handler.
  const EnvEntry& Get(const std::string& id) const;
  // The ids users name: every registered id but the variants.
  std::vector<std::string> Ids() const;
  // The boolean options of env `id` (the OPTION of each variant "id:OPTION"), in registration order.
  std::vector<std::string> Options(const std::string& id) const;
  const std::vector<EnvEntry>& entries() const { return entries_; }

  // Old ids (see EnvAlias). Throws std::invalid_argument if old_id is registered or id is not.
  void AddAlias(const std::string& old_id, const std::string& id, const std::string& note);
  const std::vector<EnvAlias>& aliases() const { return aliases_; }
  // Where Get sends an alias's note (the CLI prints it on stderr); none by default.
  void set_note_handler(std::function<void(const std::string&)> handler) { note_handler_ = std::move(handler); }

  // The plugins loaded into this registry (LoadPlugin records them), in load order.
  void AddPlugin(PluginRecord plugin) { plugins_.push_back(std::move(plugin)); }
  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  // The licence env `id` is under: its plugin's ("not declared" when the plugin declares none),
  // else kCugymLicense (a built-in env).
  std::string LicenseOf(const std::string& id) const;

  // An env this build leaves out (LunarLander without Box2D): asking for it says `reason`, e.g.
  // "needs Box2D, which this cugym was built without; ...", instead of "unknown env".
  void NoteMissing(const std::string& id, const std::string& reason);
  // The ids noted as missing, with their reasons.
  const std::vector<std::pair<std::string, std::string>>& missing() const { return missing_; }

 private:
  const EnvAlias* FindAlias(const std::string& id) const;

  std::vector<EnvEntry> entries_;
  std::vector<std::pair<std::string, std::string>> missing_;
  std::vector<EnvAlias> aliases_;
  std::vector<PluginRecord> plugins_;
  std::function<void(const std::string&)> note_handler_;
  // The aliases whose note has been given, under a lock: Get may run on many threads (cpp-api.md).
  mutable std::set<std::string> noted_;
  std::shared_ptr<std::mutex> noted_mutex_ = std::make_shared<std::mutex>();
};

// Largest batch MakeVectorEnv accepts, whatever the memory (indices stay 32-bit on the device).
constexpr int64_t kMaxNumEnvs = int64_t{1} << 31;

// Checks num_envs (> 0, <= kMaxNumEnvs, fits in the device's free memory) and builds the env.
// Throws std::invalid_argument with a one-line reason.
std::unique_ptr<VectorEnv> MakeVectorEnv(const Registry& registry, const std::string& id, int64_t num_envs,
                                         Device device);

}  // namespace cugym
