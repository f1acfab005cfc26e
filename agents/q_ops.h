// The Q-learners' device work (device_ops.h): exploration (exploration_kernels.h) and DQN's TD
// targets (dqn_kernels.h); PQN's Q(lambda) targets and its staging of next observations
// (pqn_kernels.h).
#pragma once

#include <cstdint>

#include "agents/device_ops.h"
#include "agents/dqn_kernels.h"
#include "agents/pqn_kernels.h"

namespace cugym::agent {

class QOps {
 public:
  virtual ~QOps() = default;
  // Replaces actions[i] (greedy) by a random action with probability epsilon; `hold` as in
  // exploration_kernels.h ({} for none).
  virtual void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                             const ExploreHold& hold) = 0;
  // EpsilonGreedy for `lanes` lanes of n envs, with epsilon and the step key computed on the device
  // from `counters` (ExploreLane in exploration_kernels.h), so a captured iteration explores as the eager
  // one does: lane l's as its agent alone explores, with seeds[l] (a device array). One lane is a
  // solo run.
  virtual void Explore(int32_t* actions, int64_t lanes, int64_t n, const StepCounters* counters,
                       const EpsilonSchedule& schedule, const uint64_t* seeds, int num_actions,
                       const ExploreHold& hold) = 0;
  // targets = rewards + bootstrap * next_q (TdTarget).
  virtual void TdTargets(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                         int64_t n) = 0;
  // PQN: the Q(lambda) targets of the whole rollout, one env's column each (QLambdaColumn).
  virtual void QLambdaTargets(const RolloutArrays& r, double gamma, double lambda, double reward_scale) = 0;
  // PQN: rows first.. first + count - 1 of every lane's next observations side by side in `staged`
  // (StageNextObsRow), and back, their values into r.next_values (UnstageValue).
  virtual void StageNextObs(const RolloutArrays& r, int64_t first, int64_t count, float* staged) = 0;
  virtual void UnstageValues(const RolloutArrays& r, int64_t first, int64_t count, const float* values) = 0;
};

}  // namespace cugym::agent
