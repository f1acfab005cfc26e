// The Q-learners' exploration on the device (device_ops.h, exploration_kernels.h): DQN's and PQN's
// epsilon-greedy and ez-greedy actions, and a Q model's epsilon-greedy evaluation.
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/common/exploration_kernels.h"

namespace cugym::agent {

class ExploreOps {
 public:
  virtual ~ExploreOps() = default;
  // Replaces actions[i] (greedy) by a random action with probability epsilon; `hold` as in
  // exploration_kernels.h ({} for none).
  virtual void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                             const ExploreHold& hold) = 0;
  // EpsilonGreedy for `lanes` lanes of n envs, with epsilon and the step key computed on the device
  // from `counters` (ExploreLane), so a captured iteration explores as the eager one does: lane l's
  // as its agent alone explores, with seeds[l] (a device array). One lane is a solo run.
  virtual void Explore(int32_t* actions, int64_t lanes, int64_t n, const StepCounters* counters,
                       const EpsilonSchedule& schedule, const uint64_t* seeds, int num_actions,
                       const ExploreHold& hold) = 0;
};

}  // namespace cugym::agent
