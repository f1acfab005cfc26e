// Adam over one flat parameter buffer (PyTorch semantics, optional global gradient-norm
// clipping), with its moments, step count and scratch on the device: Step() queues one or two
// kernels and never waits, so it can be captured in a CUDA graph.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "nn/backend.h"
#include "nn/tensor.h"

namespace cugym::nn {

class Adam {
 public:
  // Moments start at zero, the step count at 0. `groups`: the parameters are that many equal blocks
  // (the replicas of a network), each clipped by its own gradient norm. Throws
  // std::invalid_argument for bad options or a num_params that does not split into the groups.
  Adam(std::shared_ptr<Backend> backend, int64_t num_params, const AdamOptions& options = {}, int64_t groups = 1);

  // One update of params (num_params floats) from grads. grads are not modified: clipping
  // scales them on the fly (PyTorch scales .grad in place; the parameters come out the same).
  // Options are read when the work is queued: a captured graph keeps the ones it was captured with.
  void Step(VectorView<float> params, VectorView<const float> grads);
  // Zeroes the moments and the step count.
  void Reset();

  const AdamOptions& options() const { return options_; }
  void set_options(const AdamOptions& options);
  int64_t num_params() const { return num_params_; }
  int64_t groups() const { return groups_; }
  // Device-resident state (for checkpoints and tests).
  VectorView<float> exp_avg() { return {moments_.data(), num_params_, moments_.device()}; }
  VectorView<float> exp_avg_sq() { return {moments_.data() + num_params_, num_params_, moments_.device()}; }
  VectorView<int64_t> step_count() { return AsVector(step_); }
  VectorView<const int64_t> step_count() const { return AsVector(step_); }
  VectorView<const float> exp_avg() const { return {moments_.data(), num_params_, moments_.device()}; }
  VectorView<const float> exp_avg_sq() const { return {moments_.data() + num_params_, num_params_, moments_.device()}; }
  // [groups]: each group's gradient norm before clipping, written by each Step when clipping is on.
  VectorView<const float> grad_norm() const { return {scratch_.data(), groups_, scratch_.device()}; }

  // Host reads (they wait for the queued work): steps taken, each group's last gradient norm.
  int64_t ReadStepCount() const;
  std::vector<float> ReadGradNorms() const;

 private:
  std::shared_ptr<Backend> backend_;
  int64_t num_params_;
  int64_t groups_;
  AdamOptions options_;
  Buffer<float> moments_;  // m then v
  Buffer<int64_t> step_;
  Buffer<float> scratch_;  // [groups] grad norms, then the back end's scratch (zeroed)
};

}  // namespace cugym::nn
