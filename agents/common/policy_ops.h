// A policy's device work (device_ops.h): drawing from the categorical and Gaussian heads and their
// deterministic actions (policy_math.h: PPO's acting, PPO's and SAC's evaluations, policy model
// files), and the observation and reward normalizers (normalizer_kernels.h).
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/common/normalizer_kernels.h"
#include "agents/common/policy_math.h"

namespace cugym::agent {

class PolicyOps {
 public:
  virtual ~PolicyOps() = default;
  // The actions of `lanes` lanes of n rows from the actor's outputs [lanes n][head.out] and their
  // log-probabilities (SamplePolicyRow), each lane's drawn as its solo run draws them, with seeds[l]
  // (a device array) at the vector step the device's counters hold; deterministic: the argmax or the
  // mean (evaluation; counters and seeds may be null).
  virtual void SamplePolicy(const PolicyHead& head, const float* outputs, int64_t lanes, int64_t n,
                            const StepCounters* counters, const uint64_t* seeds, bool deterministic,
                            const PolicySample& out) = 0;
  // Observations [lanes n][m.dim] normalized with their lane's running statistics into `out`
  // (NormalizeObservation; in place is fine), the statistics first updated with them
  // (UpdateMomentsFeature, AdvanceCount) unless frozen: frozen for evaluation, and for a step's
  // final observations, which are normalized with the statistics of the step's new ones.
  virtual void NormalizeObservations(const RunningMoments& m, const float* obs, float* out, int64_t n, bool frozen,
                                     double clip) = 0;
  // The rewards of `s.moments.lanes` lanes of n envs scaled (AccumulateLaneReturns unless frozen
  // also updates the statistics, then ScaleReward; in place is fine).
  virtual void ScaleRewards(const RewardScaler& s, const float* rewards, const uint8_t* terminated,
                            const uint8_t* truncated, float* scaled, int64_t n, bool frozen, double clip) = 0;
};

}  // namespace cugym::agent
