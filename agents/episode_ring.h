// The ring of finished episodes (return, length) on the device: each vector step appends the
// episodes that ended in it, in env order; the host reads it every log_interval env steps
// (agents/episode_stats.h). Written once as a CUGYM_HD function; AgentOps runs it on each back end.
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

}  // namespace cugym::agent
