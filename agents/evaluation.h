// Greedy evaluation: play exactly a number of finished episodes with a policy on a batch of envs
// and summarize the returns. Used by `cugym eval` (a model file) and by the DQN agent's
// evaluations during training (its online network, on envs of their own).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class QLearner;

struct EvalResult {
  int64_t episodes = 0;
  double mean_return = 0, std_return = 0, min_return = 0, max_return = 0, mean_length = 0;
  std::string env_id;
};

// Steps `env` (already reset) until env i has finished quota[i] episodes; episodes an env
// finishes beyond its quota are ignored, so short episodes are not over-counted. `act(step,
// actions)` writes the num_envs actions (device memory) for the current observations. Each step
// reads the done flags on the host (num_envs bytes).
EvalResult PlayEpisodes(VectorEnv& env, const std::vector<int64_t>& quota,
                        const std::function<void(uint64_t step, int32_t* actions)>& act, Buffer<int32_t>& actions);

// Greedy (or epsilon-greedy) evaluation of a model file over exactly `episodes` finished
// episodes, spread evenly over num_envs envs (env i runs its share). The env comes from the
// model's metadata unless `env_id` is given. Throws std::invalid_argument for a missing or
// damaged model or one whose sizes do not fit the env.
EvalResult EvaluateModel(const Registry& registry, const std::string& model_path, int64_t episodes, int64_t num_envs,
                         uint64_t seed, Device device, double epsilon, const std::string& env_id = "");

// An agent's k-th evaluation during training: one greedy episode of the learner's online network
// on each of `env`'s envs, reset from a seed of their own (derived from the run's seed and k; the
// training envs use the run's seed itself). `actions` holds num_envs actions.
EvalResult EvaluateLearner(VectorEnv& env, QLearner& learner, Buffer<int32_t>& actions, uint64_t run_seed, int64_t k);

}  // namespace cugym::agent
