// Where a training run's config comes from: its run folder, a file, keys given in code, or the
// tuned config shipped for its env (configs/, compiled in), with overrides on top.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "agents/common/train_config.h"
#include "core/registry.h"
#include "core/toml.h"

namespace cugym::agent {

// A tuned config shipped in configs/ and compiled in (agents/CMakeLists.txt lists them).
struct ShippedConfig {
  const char* path;  // e.g. "configs/acrobot.toml", relative to the source tree
  const char* toml;  // the file's text
};
extern const ShippedConfig kShippedConfigs[];
extern const int kNumShippedConfigs;

// The shipped config of `algo` whose env_id is `env_id`, or nullptr when none is; `algo` empty:
// the env's default, the first listed for it (agents/CMakeLists.txt orders them: DQN's where one
// ships, and for the Box envs whichever of SAC's and PPO's is better there, docs/sac.md).
const ShippedConfig* FindShippedConfig(const std::string& env_id, const std::string& algo = "dqn");

// Where a run's config comes from, applied in this order.
struct TrainConfigSource {
  std::string resume_dir;          // non-empty: the run's own config.toml (config_path must be empty)
  std::string config_path;         // else a TOML file
  std::optional<TomlTable> table;  // else these keys over the defaults (a config given in code);
                                   // else the config shipped for `env_id` (configs/), or the
                                   // defaults when none ships
  std::string env_id;              // overrides the file's env_id when non-empty
  TomlTable overrides;             // keys applied last (--set, --seed, ...)
};

// Builds and validates the config; says on `notes` which shipped config it used, if any.
// Throws std::invalid_argument naming the bad key, file or env.
TrainConfig ResolveTrainConfig(const Registry& registry, const TrainConfigSource& source, std::ostream& notes);

}  // namespace cugym::agent
