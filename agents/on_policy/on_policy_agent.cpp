// The on-policy family (on_policy_agent.h): the graph-or-eager iteration and the minibatch epochs.
#include "agents/on_policy/on_policy_agent.h"

namespace cugym::agent {

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
