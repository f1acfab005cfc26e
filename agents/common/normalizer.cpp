// The running normalizers' state and its checkpoint part (normalizer.h).
#include "agents/common/normalizer.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/common/checkpoint.h"

namespace cugym::agent {
namespace {

Buffer<double> Filled(Device device, int64_t size, double value) {
  const std::vector<double> host(size, value);
  Buffer<double> buffer(device, host.size());
  if (!host.empty()) buffer.FromHost(host.data(), host.size());
  return buffer;
}

double At(const Buffer<double>& buffer, int64_t i) { return buffer.ToHost(i, 1).front(); }

void Set(Buffer<double>& buffer, int64_t i, double value) { buffer.FromHost(&value, 1, i); }

}  // namespace

Normalizers::Normalizers(Device device, int64_t lanes, int64_t n, int64_t obs_dim, bool observations, bool rewards,
                         double gamma)
    : lanes_(lanes), n_(n), obs_dim_(obs_dim), observations_(observations), rewards_(rewards), gamma_(gamma) {
  if (lanes < 1 || n < 1 || obs_dim < 1)
    throw std::invalid_argument("Normalizers: lanes, n and obs_dim must be >= 1, got " + std::to_string(lanes) + ", " +
                                std::to_string(n) + " and " + std::to_string(obs_dim));
  if (observations) {
    obs_mean_ = Filled(device, lanes * obs_dim, 0.0);
    obs_var_ = Filled(device, lanes * obs_dim, 1.0);
    obs_count_ = Filled(device, lanes, kRunningCountPrior);
  }
  if (rewards) {
    returns_ = Filled(device, lanes * n, 0.0);
    return_mean_ = Filled(device, lanes, 0.0);
    return_var_ = Filled(device, lanes, 1.0);
    return_count_ = Filled(device, lanes, kRunningCountPrior);
  }
}

RunningMoments Normalizers::observation_moments() {
  if (!observations_) return RunningMoments{};
  return RunningMoments{obs_mean_.data(), obs_var_.data(), obs_count_.data(), lanes_, obs_dim_};
}

RewardScaler Normalizers::reward_scaler() {
  if (!rewards_) return RewardScaler{};
  return RewardScaler{returns_.data(),
                      RunningMoments{return_mean_.data(), return_var_.data(), return_count_.data(), lanes_, 1}, gamma_};
}

void Normalizers::CheckLane(int64_t lane) const {
  if (lane < 0 || lane >= lanes_)
    throw std::out_of_range("Normalizers: lane " + std::to_string(lane) + " of " + std::to_string(lanes_));
}

void Normalizers::Save(int64_t lane, CheckpointWriter& out) const {
  CheckLane(lane);
  if (observations_) {
    out.Ints("norm.obs_mean", DoubleBits(obs_mean_.ToHost(lane * obs_dim_, obs_dim_)));
    out.Ints("norm.obs_var", DoubleBits(obs_var_.ToHost(lane * obs_dim_, obs_dim_)));
    out.Real("cugym.norm.obs_count", At(obs_count_, lane));
  }
  if (rewards_) {
    out.Ints("norm.returns", DoubleBits(returns_.ToHost(lane * n_, n_)));
    out.Real("cugym.norm.return_mean", At(return_mean_, lane));
    out.Real("cugym.norm.return_var", At(return_var_, lane));
    out.Real("cugym.norm.return_count", At(return_count_, lane));
  }
}

void Normalizers::Load(int64_t lane, const CheckpointReader& in) {
  CheckLane(lane);
  if (observations_) {
    const std::vector<double> mean = DoublesFromBits(in.Int64s("norm.obs_mean", obs_dim_));
    const std::vector<double> var = DoublesFromBits(in.Int64s("norm.obs_var", obs_dim_));
    const double count = in.Real("cugym.norm.obs_count");
    obs_mean_.FromHost(mean.data(), mean.size(), lane * obs_dim_);
    obs_var_.FromHost(var.data(), var.size(), lane * obs_dim_);
    Set(obs_count_, lane, count);
  }
  if (rewards_) {
    const std::vector<double> returns = DoublesFromBits(in.Int64s("norm.returns", n_));
    const double mean = in.Real("cugym.norm.return_mean"), var = in.Real("cugym.norm.return_var");
    const double count = in.Real("cugym.norm.return_count");
    returns_.FromHost(returns.data(), returns.size(), lane * n_);
    Set(return_mean_, lane, mean);
    Set(return_var_, lane, var);
    Set(return_count_, lane, count);
  }
}

void Normalizers::ReadObservationMoments(int64_t lane, std::vector<double>* mean, std::vector<double>* var) const {
  CheckLane(lane);
  if (!observations_) throw std::logic_error("Normalizers: the observation normalizer is off");
  *mean = obs_mean_.ToHost(lane * obs_dim_, obs_dim_);
  *var = obs_var_.ToHost(lane * obs_dim_, obs_dim_);
}

void Normalizers::WriteObservationMoments(int64_t lane, const std::vector<double>& mean,
                                          const std::vector<double>& var) {
  CheckLane(lane);
  if (!observations_) throw std::logic_error("Normalizers: the observation normalizer is off");
  if (static_cast<int64_t>(mean.size()) != obs_dim_ || static_cast<int64_t>(var.size()) != obs_dim_)
    throw std::invalid_argument("Normalizers: " + std::to_string(mean.size()) + " means and " +
                                std::to_string(var.size()) + " variances for " + std::to_string(obs_dim_) +
                                " observation features");
  obs_mean_.FromHost(mean.data(), mean.size(), lane * obs_dim_);
  obs_var_.FromHost(var.data(), var.size(), lane * obs_dim_);
}

void Normalizers::CopyLane(int64_t to, const Normalizers& from, int64_t lane) {
  CheckLane(to);
  from.CheckLane(lane);
  const auto copy = [](Buffer<double>& dst, int64_t dst_at, const Buffer<double>& src, int64_t src_at, int64_t count) {
    CopyBytes(dst.data() + dst_at, dst.device(), src.data() + src_at, src.device(), count * sizeof(double));
  };
  if (observations_) {
    copy(obs_mean_, to * obs_dim_, from.obs_mean_, lane * obs_dim_, obs_dim_);
    copy(obs_var_, to * obs_dim_, from.obs_var_, lane * obs_dim_, obs_dim_);
    copy(obs_count_, to, from.obs_count_, lane, 1);
  }
  if (rewards_) {
    copy(returns_, to * n_, from.returns_, lane * n_, n_);
    copy(return_mean_, to, from.return_mean_, lane, 1);
    copy(return_var_, to, from.return_var_, lane, 1);
    copy(return_count_, to, from.return_count_, lane, 1);
  }
}

}  // namespace cugym::agent
