// The algorithms cugym trains, each registered once with what the rest of cugym needs to know of
// it: its name (config.algo), its metrics columns (metrics.csv, TensorBoard and Python's rows take
// them generically) and its agent factory. The built-in ones (DQN, PQN, PPO, SAC) are registered by
// one line each in algorithms.cpp, the first time any is looked up; a program or a test adds its own
// with RegisterAlgorithm. Agents are built only here (MakeAgent), above them all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/train_config.h"
#include "core/device.h"
#include "core/registry.h"

namespace cugym::agent {

struct Algorithm {
  std::string name;  // config.algo
  // Its own metrics.csv columns, in order, between episodic_length and sps, with their TensorBoard
  // tags; Agent::Progress fills them (MetricsRow::Set).
  std::vector<MetricColumn> metrics;
  // An agent of a lane per seed (`seeds` empty: one lane of config.seed).
  std::function<std::unique_ptr<Agent>(const Registry&, const TrainConfig&, Device, std::vector<uint64_t>)> make;
};

// Adds `algorithm` (replacing one of the same name). Throws std::invalid_argument for an empty name
// or no factory.
void RegisterAlgorithm(Algorithm algorithm);
// The algorithm called `name`, or nullptr.
const Algorithm* FindAlgorithm(const std::string& name);
// Every registered name, in registration order (the built-in ones first).
std::vector<std::string> AlgorithmNames();

// The agent config.algo names, with a lane per seed (`seeds` empty: one lane of config.seed).
// Throws std::invalid_argument for an unknown algo or env, actions the agent cannot take (DQN and
// PQN need discrete ones; PPO's policy must fit them), a bad config, a seed listed twice and what
// Unbatchable names.
std::unique_ptr<Agent> MakeAgent(const Registry& registry, const TrainConfig& config, Device device,
                                 std::vector<uint64_t> seeds = {});

}  // namespace cugym::agent
