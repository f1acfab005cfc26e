// The finished-episode statistics: the device ring, its host reads and its checkpoint part.
#include "agents/episode_stats.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace cugym::agent {

EpisodeStats::EpisodeStats(Device device)
    : returns_(device, kCapacity), lengths_(device, kCapacity), count_(device, 1) {
  returns_.Zero();
  lengths_.Zero();
  count_.Zero();
}

EpisodeRing EpisodeStats::ring() { return EpisodeRing{returns_.data(), lengths_.data(), count_.data(), kCapacity}; }

EpisodeStats::Interval EpisodeStats::Read() {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const unsigned long long count = count_.ToHost()[0];
  const std::vector<float> returns = returns_.ToHost();
  const std::vector<int32_t> lengths = lengths_.ToHost();
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
  out.Int("cugym.episodes", count_.ToHost()[0]);
  out.Int("cugym.episodes_read", read_);
  out.Floats("episodes.returns", returns_.ToHost());
  out.Ints("episodes.lengths", lengths_.ToHost());
  out.Floats("episodes.last_100", last_100_);
}

void EpisodeStats::Load(const CheckpointReader& in) {
  const unsigned long long episodes = static_cast<unsigned long long>(in.Int("cugym.episodes"));
  count_.FromHost(&episodes, 1);
  returns_.FromHost(in.Floats("episodes.returns", kCapacity).data(), kCapacity);
  lengths_.FromHost(in.Ints("episodes.lengths", kCapacity).data(), kCapacity);
  read_ = static_cast<uint64_t>(in.Int("cugym.episodes_read"));
  last_100_ = in.HasTensor("episodes.last_100") ? in.file().Find("episodes.last_100")->ToF32() : std::vector<float>{};
}

}  // namespace cugym::agent
