// Where a training run's config comes from (config_source.h).
#include "agents/run/config_source.h"

#include <filesystem>
#include <stdexcept>

namespace cugym::agent {
namespace fs = std::filesystem;

const ShippedConfig* FindShippedConfig(const std::string& env_id, const std::string& algo) {
  for (int i = 0; i < kNumShippedConfigs; ++i) {
    TrainConfig config;
    config.Apply(ParseToml(kShippedConfigs[i].toml, kShippedConfigs[i].path));
    if (config.env_id == env_id && (algo.empty() || config.algo == algo)) return &kShippedConfigs[i];
  }
  return nullptr;
}

TrainConfig ResolveTrainConfig(const Registry& registry, const TrainConfigSource& source, std::ostream& notes) {
  TrainConfig config;
  if (!source.resume_dir.empty()) {
    const fs::path run_dir = source.resume_dir;
    if (!fs::is_regular_file(run_dir / "config.toml"))
      throw std::invalid_argument("resume " + run_dir.string() + ": no config.toml there (not a cugym run folder)");
    if (!source.config_path.empty() || !source.env_id.empty())
      throw std::invalid_argument("a resumed run takes its own config; change keys with overrides instead");
    config.Apply(ReadTomlFile((run_dir / "config.toml").string()));
  } else if (!source.config_path.empty()) {
    config.Apply(ReadTomlFile(source.config_path));
  } else if (source.table) {
    config.Apply(*source.table);
  } else {
    // No config file: the tuned one shipped for the env when there is one, else the defaults.
    const std::string env = !source.env_id.empty() ? source.env_id : config.env_id;
    registry.Get(env);  // an unknown id is the only thing said
    // An algorithm asked for among the overrides picks its own tuned config (--set algo=pqn);
    // otherwise the env's default (FindShippedConfig): the first listed for it.
    auto algo = source.overrides.find("algo");
    const std::string wanted =
        algo != source.overrides.end() && algo->second.kind == TomlValue::Kind::kString ? algo->second.text : "";
    if (const ShippedConfig* shipped = FindShippedConfig(env, wanted)) {
      config.Apply(ParseToml(shipped->toml, shipped->path));
      notes << "cugym train: " << env << " with the hyperparameters of " << shipped->path
            << " (built in; pass a config file for others)\n";
    } else {
      const bool dqn = wanted.empty() || wanted == "dqn";
      notes << "cugym train: no tuned config ships for " << env << (dqn ? "" : " with algo = " + wanted)
            << "; using the defaults (configs/cartpole.toml's values, docs/dqn.md"
            << (dqn ? "" : ", docs/" + wanted + ".md") << ")\n";
    }
  }
  if (!source.env_id.empty()) config.env_id = source.env_id;
  for (const auto& [key, value] : source.overrides) config.Apply({{key, value}});
  config.Validate();
  registry.Get(config.env_id);
  return config;
}

}  // namespace cugym::agent
