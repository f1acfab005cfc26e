// A run's finished episodes: the ring the device appends them to (episode_ring.h), and on the
// host what the progress line and metrics.csv show of it (the means over the episodes that ended
// since the last read, the mean return of the last 100), and its part of a checkpoint
// (episodes.*, cugym.episodes, cugym.episodes_read).
#pragma once

#include <cstdint>
#include <vector>

#include "agents/common/checkpoint.h"
#include "agents/common/episode_ring.h"
#include "core/memory.h"

namespace cugym::agent {

class EpisodeStats {
 public:
  static constexpr int64_t kCapacity = 4096;  // episodes the ring holds between two reads

  explicit EpisodeStats(Device device);  // the ring zeroed, so identical runs write identical files
  // A view of a ring of kCapacity episodes that lives elsewhere, zeroed by its owner (K agents'
  // rings side by side: DqnAgent's lanes, read all with one copy each).
  EpisodeStats(Device device, const EpisodeRing& ring);

  EpisodeRing ring() const { return ring_; }

  struct Interval {
    double mean_return = 0;      // NaN when no episode ended since the last read
    double mean_length = 0;      // NaN likewise
    double mean_return_100 = 0;  // over the last 100 finished episodes (NaN before any)
    int64_t episodes = 0;        // finished so far
  };
  // The episodes that ended since the last Read (it waits for the queued work).
  Interval Read();
  // Read from a host copy of the ring: its kCapacity returns and lengths and its count.
  Interval Read(const float* returns, const int32_t* lengths, unsigned long long count);

  void Save(CheckpointWriter& out) const;
  // Restores what Save wrote; a file without episodes.last_100 leaves the window empty.
  void Load(const CheckpointReader& in);
  // Takes `from`'s ring (copied on the device) and what it has read so far, as Load would from
  // its Save.
  void CopyFrom(const EpisodeStats& from);

 private:
  struct HostRing {
    std::vector<float> returns;
    std::vector<int32_t> lengths;
    unsigned long long count;
  };
  HostRing CopyToHost() const;  // the ring's arrays and count, through host memory

  Device device_;
  Buffer<float> own_returns_;  // the ring's arrays when it owns them
  Buffer<int32_t> own_lengths_;
  Buffer<unsigned long long> own_count_;
  EpisodeRing ring_;             // returns, lengths [kCapacity] and count [1] (episodes appended so far)
  uint64_t read_ = 0;            // ring entries already reported
  std::vector<float> last_100_;  // the last 100 finished episodes' returns
};

}  // namespace cugym::agent
