// Where a training run's config comes from, for `cugym train` and cugym.train(): its run folder's
// own config.toml (a resume), a TOML file, keys given in code, or the tuned config shipped for the
// env, then overrides; the result validated.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "agents/dqn_config.h"
#include "core/registry.h"
#include "core/toml.h"

namespace cugym::agent {

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
DqnConfig ResolveTrainConfig(const Registry& registry, const TrainConfigSource& source, std::ostream& notes);

}  // namespace cugym::agent
