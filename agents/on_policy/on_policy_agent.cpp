// The on-policy family (on_policy_agent.h): the graph-or-eager iteration and the minibatch epochs.
#include "agents/on_policy/on_policy_agent.h"

namespace cugym::agent {

void OnPolicyAgent::CheckRollout(const TrainConfig& c) {
  RequireKey(c.rollout_size() <= (int64_t{1} << 30), "num_steps",
             "times num_envs (" + ShowNumber(c.num_envs) + ") must be at most 2^30 transitions per rollout",
             c.num_steps);
  RequireKey(c.rollout_size() % c.num_minibatches == 0 && c.num_minibatches <= c.rollout_size(), "num_minibatches",
             "must divide num_envs * num_steps (" + ShowNumber(c.rollout_size()) + ")", c.num_minibatches);
}

int64_t OnPolicyAgent::PlannedUpdates(const TrainConfig& c) {
  const int64_t rollouts = (c.total_steps + c.rollout_size() - 1) / c.rollout_size();
  return rollouts * c.num_epochs * c.num_minibatches;
}

void OnPolicyAgent::Iterate() {
  if (GraphAllowed() && EveryIterationAlike()) {
    iteration_graph_.Run(*backend_, [this] { IterationKernels(true); });
  } else {
    IterationKernels(false);
  }
  vector_steps_ += config_.num_steps;
  global_step_ += config_.num_steps * config_.num_envs;
}

void OnPolicyAgent::Epochs() {
  const int64_t b = config_.minibatch_size();
  for (int64_t epoch = 0; epoch < config_.num_epochs; ++epoch) {
    for (int64_t m = 0; m < config_.num_minibatches; ++m) {
      GatherMinibatch(m * b, b, epoch);
      TrainMinibatch();
    }
    if (StopEpochs()) break;
  }
}

}  // namespace cugym::agent
