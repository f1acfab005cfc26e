// The on-policy family (Stable-Baselines3's OnPolicyAlgorithm): PQN and PPO. Each iteration
// collects a rollout of num_envs x num_steps transitions per lane, then takes num_epochs passes of
// num_minibatches shuffled minibatches of every lane (each lane's drawn from its own rollout by its
// own permutation) and discards the rollout. On CUDA with cuda_graph and an env stepped on the
// device every iteration queues the same work (every value that changes lives on the device: the
// step counters, hence the draws and the shuffles; the optimizer's step count, hence the learning
// rate): the first runs eagerly, the second is captured, and the rest replay it, one launch each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/lane_agent.h"
#include "agents/on_policy/rollout_ops.h"

namespace cugym::agent {

class OnPolicyAgent : public LaneAgent {
 public:
  // The family's part of an algorithm's description (algorithm.h): the rollout's checks
  // (num_minibatches divides it) and the gradient steps of a run (rollouts until total_steps, each
  // num_epochs x num_minibatches).
  static void CheckRollout(const TrainConfig& config);
  static int64_t PlannedUpdates(const TrainConfig& config);

  // One rollout (num_envs * num_steps env steps per lane) and its updates.
  void Iterate() final;

 protected:
  using LaneAgent::LaneAgent;

  // num_epochs passes over num_minibatches minibatches of every lane: GatherMinibatch, then
  // TrainMinibatch; StopEpochs after each epoch may end them early.
  void Epochs();

  // The iteration's work on the back end's stream; `captured`: it goes into the graph (eager
  // iterations may skip work whose result is replaced anyway).
  virtual void IterationKernels(bool captured) = 0;
  // Whether every iteration may replay one graph (no host decision inside it).
  virtual bool EveryIterationAlike() const { return true; }
  // Rows [first, first + rows) of each lane's shuffled rollout (its permutation for `epoch`) into
  // the minibatch, then one gradient step on it.
  virtual void GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) = 0;
  virtual void TrainMinibatch() = 0;
  virtual bool StopEpochs() { return false; }

  std::unique_ptr<RolloutOps> rollout_ops_ = MakeOps<RolloutOps>(device_, stream());
};

}  // namespace cugym::agent
