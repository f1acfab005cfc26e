// The algorithms cugym trains, each registered once with what the rest of cugym needs to know of
// it: its name (config.algo), its metrics columns (metrics.csv, TensorBoard and Python's rows take
// them generically), its agent factory, and its config keys with their checks. Each algorithm
// describes itself in its own files (DqnAlgorithm in dqn.h, ...); the built-in ones are registered by
// one line each in agents/run/algorithms.cpp, the first time any is looked up; a program or a test
// adds its own with RegisterAlgorithm. Agents are built only there (MakeAgent), above them all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/train_config.h"
#include "core/device.h"
#include "core/registry.h"
#include "core/toml.h"

namespace cugym::agent {

// A config key of an algorithm's own, beside TrainConfig's shared ones (TrainConfig::Own reads it):
// its name, its default (whose kind is the key's type: an integer, a number, a bool or a string)
// and its check.
struct AlgorithmKey {
  std::string name;
  TomlValue value;
  std::function<bool(const TomlValue&)> valid;  // null: any value of the kind
  std::string rule;                             // what `valid` asks, for the error ("must be in (0, 1]")
};

struct Algorithm {
  std::string name;  // config.algo
  // Its own metrics.csv columns, in order, between episodic_length and sps, with their TensorBoard
  // tags; Agent::Progress fills them (MetricsRow::Set).
  std::vector<MetricColumn> metrics;
  // An agent of a lane per seed (`seeds` empty: one lane of config.seed).
  std::function<std::unique_ptr<Agent>(const Registry&, const TrainConfig&, Device, std::vector<uint64_t>)> make;
  // Its own config keys; setting one with another algo is refused.
  std::vector<AlgorithmKey> keys;
  // The bytes of one lane's replay memory (ReplayBytes), which many runs at once must fit together;
  // null for an algorithm without one.
  std::function<int64_t(const TrainConfig&, const EnvSpec&)> replay_bytes;
  // The TrainConfig keys it reads among those that only some algorithms read: with another algo,
  // such a key set away from its default is refused, naming the algorithms that read it.
  std::vector<std::string> reads;
  // Its checks of the TrainConfig keys it reads, after TrainConfig::Validate's checks of each key
  // alone: throws std::invalid_argument naming the key. Null: none.
  std::function<void(const TrainConfig&)> check;
  // The gradient steps a whole run plans (TrainConfig::PlannedUpdates: learning-rate annealing,
  // prioritized replay's beta). Null: 0.
  std::function<int64_t(const TrainConfig&)> planned_updates;
  // Why K > 1 seeds of the config cannot be the lanes of one agent ("" where they can), beyond the
  // env's lanes (Unbatchable); throws std::invalid_argument for an env it cannot take. Null: "".
  std::function<std::string(const Registry&, const TrainConfig&)> unbatchable;
};

// Algorithm::make for an agent class A constructed as A(registry, config, device, seeds).
template <class A>
std::unique_ptr<Agent> MakeAgentOf(const Registry& registry, const TrainConfig& config, Device device,
                                   std::vector<uint64_t> seeds) {
  return std::make_unique<A>(registry, config, device, std::move(seeds));
}

// Adds `algorithm` (replacing one of the same name). Throws std::invalid_argument for an empty name
// or no factory.
void RegisterAlgorithm(Algorithm algorithm);
// The algorithm called `name`, or nullptr.
const Algorithm* FindAlgorithm(const std::string& name);
// The algorithm called `name`; throws std::invalid_argument "unknown algo" for none.
const Algorithm& GetAlgorithm(const std::string& name);
// Every registered name, in registration order (the built-in ones first).
std::vector<std::string> AlgorithmNames();
// The algorithm that owns config key `name` (Algorithm::keys) and the key, or {nullptr, nullptr}.
std::pair<const Algorithm*, const AlgorithmKey*> FindAlgorithmKey(const std::string& name);

// The agent config.algo names, with a lane per seed (`seeds` empty: one lane of config.seed).
// Throws std::invalid_argument for an unknown algo or env, actions the agent cannot take (DQN and
// PQN need discrete ones; PPO's policy must fit them), a bad config, a seed listed twice and what
// Unbatchable names.
std::unique_ptr<Agent> MakeAgent(const Registry& registry, const TrainConfig& config, Device device,
                                 std::vector<uint64_t> seeds = {});

}  // namespace cugym::agent
