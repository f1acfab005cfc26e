// The on-policy family's device work (device_ops.h): storing a rollout step, gathering minibatches
// of every lane's rollout (rollout_kernels.h), PQN's Q(lambda) targets and its staging of next
// observations (pqn_kernels.h), and PPO's GAE (ppo_rollout_kernels.h).
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/on_policy/ppo_rollout_kernels.h"
#include "agents/on_policy/pqn_kernels.h"
#include "agents/on_policy/rollout_kernels.h"

namespace cugym::agent {

class RolloutOps {
 public:
  virtual ~RolloutOps() = default;
  // Rollout step t of the r.envs envs after their step (StoreRolloutStep).
  virtual void StoreRolloutStep(const RolloutArrays& r, int64_t t, const float* obs, const float* final_obs,
                                const float* rewards, const uint8_t* terminated, const uint8_t* truncated) = 0;
  // Every lane's `size` rows of the minibatch at position `first` of epoch `epoch`'s permutation of
  // its own rollout (r's shape: steps, envs, lanes), each of `columns` copied (GatherRow), keyed by
  // EpochKey of its seed (seeds: a device array of r.lanes) and the device's counters.
  virtual void GatherMinibatch(const RolloutArrays& r, const GatherColumns& columns, int64_t first, int64_t size,
                               const StepCounters* counters, const uint64_t* seeds, int64_t epoch) = 0;
  // PQN: the Q(lambda) targets of the whole rollout, one env's column each (QLambdaColumn).
  virtual void QLambdaTargets(const RolloutArrays& r, double gamma, double lambda, double reward_scale) = 0;
  // PQN: rows first.. first + count - 1 of every lane's next observations side by side in `staged`
  // (StageNextObsRow), and back, their values into r.next_values (UnstageValue).
  virtual void StageNextObs(const RolloutArrays& r, int64_t first, int64_t count, float* staged) = 0;
  virtual void UnstageValues(const RolloutArrays& r, int64_t first, int64_t count, const float* values) = 0;
  // PPO: the GAE(lambda) advantages and returns of the whole rollout, one env's column each (GaeColumn).
  virtual void GaeAdvantages(const GaeArrays& r, double gamma, double lambda) = 0;
};

}  // namespace cugym::agent
