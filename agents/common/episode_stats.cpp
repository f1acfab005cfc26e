// The finished-episode statistics: the device ring, its host reads and its checkpoint part.
#include "agents/common/episode_stats.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cugym::agent {

EpisodeStats::EpisodeStats(Device device)
    : device_(device),
      own_returns_(device, kCapacity),
      own_lengths_(device, kCapacity),
      own_count_(device, 1),
      ring_{own_returns_.data(), own_lengths_.data(), own_count_.data(), kCapacity} {
  own_returns_.Zero();
  own_lengths_.Zero();
  own_count_.Zero();
}

EpisodeStats::EpisodeStats(Device device, const EpisodeRing& ring) : device_(device), ring_(ring) {
  if (ring.capacity != kCapacity)
    throw std::invalid_argument("EpisodeStats: a ring of " + std::to_string(ring.capacity) + " episodes, not " +
                                std::to_string(kCapacity));
}

EpisodeStats::HostRing EpisodeStats::CopyToHost() const {
  HostRing host{std::vector<float>(kCapacity), std::vector<int32_t>(kCapacity), 0};
  CopyBytes(&host.count, Device::kCpu, ring_.count, device_, sizeof(host.count));
  CopyBytes(host.returns.data(), Device::kCpu, ring_.returns, device_, kCapacity * sizeof(float));
  CopyBytes(host.lengths.data(), Device::kCpu, ring_.lengths, device_, kCapacity * sizeof(int32_t));
  return host;
}

EpisodeStats::Interval EpisodeStats::Read() {
  const HostRing host = CopyToHost();
  return Read(host.returns.data(), host.lengths.data(), host.count);
}

EpisodeStats::Interval EpisodeStats::Read(const float* returns, const int32_t* lengths, unsigned long long count) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const unsigned long long first = std::max<unsigned long long>(read_, count > kCapacity ? count - kCapacity : 0);
  double sum_return = 0, sum_length = 0;
  for (unsigned long long k = first; k < count; ++k) {
    const int64_t slot = static_cast<int64_t>(k % kCapacity);
    sum_return += returns[slot];
    sum_length += lengths[slot];
    last_100_.push_back(returns[slot]);
  }
  if (last_100_.size() > 100) last_100_.erase(last_100_.begin(), last_100_.end() - 100);
  const double fresh = static_cast<double>(count - first);
  Interval interval;
  interval.mean_return = fresh > 0 ? sum_return / fresh : kNaN;
  interval.mean_length = fresh > 0 ? sum_length / fresh : kNaN;
  interval.mean_return_100 =
      last_100_.empty() ? kNaN : std::accumulate(last_100_.begin(), last_100_.end(), 0.0) / last_100_.size();
  interval.episodes = static_cast<int64_t>(count);
  read_ = count;
  return interval;
}

void EpisodeStats::Save(CheckpointWriter& out) const {
  const HostRing host = CopyToHost();
  out.Int("cugym.episodes", host.count);
  out.Int("cugym.episodes_read", read_);
  out.Floats("episodes.returns", host.returns);
  out.Ints("episodes.lengths", host.lengths);
  out.Floats("episodes.last_100", last_100_);
}

void EpisodeStats::Load(const CheckpointReader& in) {
  const unsigned long long episodes = static_cast<unsigned long long>(in.Int("cugym.episodes"));
  CopyBytes(ring_.count, device_, &episodes, Device::kCpu, sizeof(episodes));
  CopyBytes(ring_.returns, device_, in.Floats("episodes.returns", kCapacity).data(), Device::kCpu,
            kCapacity * sizeof(float));
  CopyBytes(ring_.lengths, device_, in.Ints("episodes.lengths", kCapacity).data(), Device::kCpu,
            kCapacity * sizeof(int32_t));
  read_ = static_cast<uint64_t>(in.Int("cugym.episodes_read"));
  last_100_ = in.HasTensor("episodes.last_100") ? in.file().Find("episodes.last_100")->ToF32() : std::vector<float>{};
}

void EpisodeStats::CopyFrom(const EpisodeStats& from) {
  CopyBytes(ring_.count, device_, from.ring_.count, from.device_, sizeof(unsigned long long));
  CopyBytes(ring_.returns, device_, from.ring_.returns, from.device_, kCapacity * sizeof(float));
  CopyBytes(ring_.lengths, device_, from.ring_.lengths, from.device_, kCapacity * sizeof(int32_t));
  read_ = from.read_;
  last_100_ = from.last_100_;
}

}  // namespace cugym::agent
