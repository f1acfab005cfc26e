// Greedy evaluation: play exactly a number of finished episodes with a policy on a batch of envs
// and summarize the returns. Used by `cugym eval` (a model file) and by the agents' evaluations
// during training and final evaluations (their online networks, on envs of their own).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class EpisodeOps;
class QLearner;

struct EvalResult {
  int64_t episodes = 0;
  double mean_return = 0, std_return = 0, min_return = 0, max_return = 0, mean_length = 0;
  std::string env_id;
};

// The one evaluation, for K >= 1 lanes: `env` holds K lanes of m envs, lane a reset with seeds[a]
// (ResetInLanes: one lane is Reset(seeds[0])), and each lane where evaluate[a] is set plays exactly
// `episodes` finished episodes spread evenly over its m envs (env j runs episodes / m, one more for
// j < episodes % m; episodes an env finishes beyond its share are ignored, so short episodes are
// not over-counted). `act(step)` steps `env` once: it computes the K m actions for the current
// observations (int32 for a Discrete action space, floats for a Box) and calls env.Step with them. The episodes are
// recorded on the device by `ops` (on env's stream) and summed in the order they ended (by step, then env); on CUDA the
// host reads their count every few steps, not the done flags of every step. One result per lane, a default one where
// not evaluated. Model files (EvaluateModel) and learners (EvaluateReplicas) are evaluated through it.
std::vector<EvalResult> EvaluateLanes(VectorEnv& env, EpisodeOps& ops, const std::vector<uint64_t>& seeds,
                                      const std::vector<bool>& evaluate, int64_t episodes,
                                      const std::function<void(uint64_t step)>& act);

// Greedy (or epsilon-greedy) evaluation of a model file over exactly `episodes` finished
// episodes, spread evenly over num_envs envs (env i runs its share): a Q model or a PPO policy
// file (GreedyPolicy: a categorical one on a Discrete env, a gaussian one on a Box env, acting
// deterministically). The env comes from the model's metadata unless `env_id` is given.
// Epsilon-greedy replaces discrete actions only (Q models and categorical policies); epsilon > 0
// on a Box env is refused. Throws std::invalid_argument for a missing or damaged model or one
// whose sizes or action space do not fit the env.
EvalResult EvaluateModel(const Registry& registry, const std::string& model_path, int64_t episodes, int64_t num_envs,
                         uint64_t seed, Device device, double epsilon, const std::string& env_id = "");

// The env seeds of an agent's k-th evaluation during training, one per run seed (the training envs
// use the run's seed itself).
std::vector<uint64_t> TrainingEvalSeeds(const std::vector<uint64_t>& run_seeds, int64_t k);

// EvaluateLanes with replica a of the learner's online network acting greedily on lane a (one
// forward for all lanes per step): lane a's result is EvaluateModel's for a model file of replica
// a with seed seeds[a] and m envs, the same bits on the CPU.
std::vector<EvalResult> EvaluateReplicas(VectorEnv& env, QLearner& learner, Buffer<int32_t>& actions,
                                         const std::vector<uint64_t>& seeds, const std::vector<bool>& evaluate,
                                         int64_t episodes);

}  // namespace cugym::agent
