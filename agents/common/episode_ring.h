// Finished episodes recorded on the device, so the host need not read every step's done flags:
// the ring of training episodes (return, length), to which each vector step appends the episodes
// that ended in it, in env order, and which the host reads every log_interval env steps
// (agents/common/episode_stats.h); and an evaluation's episodes (EvalRecord), read once at its end.
// Written once as CUGYM_HD functions; EpisodeOps runs them on each back end.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace cugym::agent {

// Finished episodes, appended on the device: slot (count + k) % capacity of the ring holds the
// k-th episode that ended in a step; the host reads the ring and the count every few thousand
// steps.
struct EpisodeRing {
  float* returns;
  int32_t* lengths;
  unsigned long long* count;  // episodes appended so far (one value)
  int64_t capacity;
};

// The k-th of `total` episodes that ended in one step (k counts the ended envs in env order),
// stored at slot (count + k) % capacity, `count` as before the step. When more than `capacity`
// end at once only the last `capacity` are stored, so no two writers share a slot and the ring
// is the same whatever order the writers run in.
CUGYM_HD inline void StoreEpisode(const EpisodeRing& ring, unsigned long long count, int64_t k, int64_t total,
                                  float episode_return, int32_t episode_length) {
  if (k < total - ring.capacity) return;
  const int64_t slot = static_cast<int64_t>((count + static_cast<unsigned long long>(k)) %
                                            static_cast<unsigned long long>(ring.capacity));
  ring.returns[slot] = episode_return;
  ring.lengths[slot] = episode_length;
}

// Lane l's finished episodes of one step (one thread per lane): the ended envs among [l n, (l + 1)
// n) appended to rings[l] in env order, as a batch of n envs appends its own (CollectEpisodes).
CUGYM_HD inline void CollectLaneEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                                         const int32_t* lengths, int64_t n, const EpisodeRing* rings, int64_t lane) {
  const int64_t first = lane * n;
  int64_t total = 0;
  for (int64_t j = first; j < first + n; ++j) total += (terminated[j] | truncated[j]) != 0;
  const EpisodeRing& ring = rings[lane];
  const unsigned long long count = *ring.count;
  for (int64_t j = first, k = 0; j < first + n; ++j)
    if (terminated[j] | truncated[j]) StoreEpisode(ring, count, k++, total, returns[j], lengths[j]);
  *ring.count = count + static_cast<unsigned long long>(total);
}

// An evaluation's episodes (agents/common/evaluation.h): env i keeps the first quota[i] episodes it
// finishes in slots first[i], first[i] + 1, ..., with the step each ended in, so the host orders
// them by step, then env, as it would have read them step by step.
struct EvalRecord {
  const int64_t* first;  // [n] env i's first slot
  const int64_t* quota;  // [n] the episodes env i plays
  int64_t* done;         // [n] the episodes env i has finished so far (up to its quota)
  float* returns;        // [sum of quota] by slot
  int32_t* lengths;
  int64_t* steps;
};

// Env i's episode that ended in `step`, if one did and env i's quota is not met yet: recorded,
// and true (the caller counts the episodes recorded). One writer per env.
CUGYM_HD inline bool RecordEvalEpisode(const EvalRecord& r, const uint8_t* terminated, const uint8_t* truncated,
                                       const float* returns, const int32_t* lengths, int64_t step, int64_t i) {
  if (!(terminated[i] | truncated[i]) || r.done[i] >= r.quota[i]) return false;
  const int64_t slot = r.first[i] + r.done[i]++;
  r.returns[slot] = returns[i];
  r.lengths[slot] = lengths[i];
  r.steps[slot] = step;
  return true;
}

}  // namespace cugym::agent
