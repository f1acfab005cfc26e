// Every agent's device work around the env step (device_ops.h): the step counters, the ring of
// finished training episodes, an evaluation's episodes.
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/common/episode_ring.h"
#include "agents/common/exploration_kernels.h"

namespace cugym::agent {

class EpisodeOps {
 public:
  virtual ~EpisodeOps() = default;
  // The counters after a vector step of n envs (AdvanceSteps).
  virtual void AdvanceSteps(StepCounters* counters, int64_t n) = 0;
  // Appends the episodes that ended in this step of `lanes` lanes of n envs to the lanes' rings
  // (rings: a device array), each lane's in env order (StoreEpisode), as a batch of n envs alone
  // appends its own: the same rings on every back end, for any lanes and n.
  virtual void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                               const int32_t* lengths, int64_t lanes, int64_t n, const EpisodeRing* rings) = 0;
  // An evaluation's step `step` of n envs (RecordEvalEpisode): the episodes that ended in it and
  // count, each env up to its quota, recorded, and *recorded (a device value) raised by their number.
  virtual void RecordEvalEpisodes(const EvalRecord& record, const uint8_t* terminated, const uint8_t* truncated,
                                  const float* returns, const int32_t* lengths, int64_t n, int64_t step,
                                  unsigned long long* recorded) = 0;
};

}  // namespace cugym::agent
