// The running normalizers of observations and rewards (as Gymnasium's NormalizeObservation and
// NormalizeReward; PPO's, and model files keep the observations'): their statistics in plain
// device arrays, which PolicyOps::NormalizeObservations and ScaleRewards read and update, and each
// lane's part of its checkpoint. The keys a lane's checkpoint gets, for the normalizers that are on:
//   norm.obs_mean            I64 [obs_dim]  the running mean of each observation feature
//   norm.obs_var             I64 [obs_dim]  the running (population) variance of each feature
//   cugym.norm.obs_count     the number of observations behind them (1e-4 at first)
//   norm.returns             I64 [n]        each env's discounted return G so far
//   cugym.norm.return_mean, cugym.norm.return_var, cugym.norm.return_count   the returns' statistics
// The tensors hold doubles as their IEEE-754 bit patterns (cugym's safetensors hold F32, I32 and
// I64 only; a resumed run must normalize with the same bits); the counts and the returns'
// statistics are metadata numbers (MetadataNumber reads back as the same double).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "agents/common/normalizer_kernels.h"
#include "core/device.h"
#include "core/memory.h"

namespace cugym::agent {

class CheckpointWriter;
class CheckpointReader;

// Doubles as the int64 bit patterns checkpoints and model files keep them in (safetensors has
// F64, but I64 tensors read back bit for bit everywhere), and back.
inline std::vector<int64_t> DoubleBits(const std::vector<double>& values) {
  std::vector<int64_t> bits(values.size());
  if (!values.empty()) std::memcpy(bits.data(), values.data(), values.size() * sizeof(double));
  return bits;
}
inline std::vector<double> DoublesFromBits(const std::vector<int64_t>& bits) {
  std::vector<double> values(bits.size());
  if (!bits.empty()) std::memcpy(values.data(), bits.data(), bits.size() * sizeof(double));
  return values;
}

class Normalizers {
 public:
  // `lanes` lanes of n envs with observations of obs_dim floats; `observations` and `rewards` turn
  // each normalizer on. Gymnasium's start: mean 0, variance 1, count 1e-4, every G 0.
  Normalizers(Device device, int64_t lanes, int64_t n, int64_t obs_dim, bool observations, bool rewards, double gamma);

  bool observations() const { return observations_; }
  bool rewards() const { return rewards_; }
  // Views for PolicyOps (valid while this object lives; unset where the normalizer is off).
  RunningMoments observation_moments();
  RewardScaler reward_scaler();

  // Lane `lane`'s statistics into its checkpoint, and back (std::invalid_argument naming the file
  // where a key of a normalizer that is on is missing or of another size; std::out_of_range for
  // a lane past the last).
  void Save(int64_t lane, CheckpointWriter& out) const;
  void Load(int64_t lane, const CheckpointReader& in);
  // Lane `lane`'s observation statistics (a model file's), read and written: obs_dim doubles each;
  // std::invalid_argument for another size, std::logic_error when that normalizer is off.
  void ReadObservationMoments(int64_t lane, std::vector<double>* mean, std::vector<double>* var) const;
  void WriteObservationMoments(int64_t lane, const std::vector<double>& mean, const std::vector<double>& var);
  // Lane `lane` of `from` (the same normalizers and sizes) into lane `to`, on the device.
  void CopyLane(int64_t to, const Normalizers& from, int64_t lane);

 private:
  void CheckLane(int64_t lane) const;

  int64_t lanes_, n_, obs_dim_;
  bool observations_, rewards_;
  double gamma_;
  Buffer<double> obs_mean_, obs_var_, obs_count_;                     // [lanes][obs_dim], [lanes][obs_dim], [lanes]
  Buffer<double> returns_, return_mean_, return_var_, return_count_;  // [lanes n], [lanes] x 3
};

}  // namespace cugym::agent
