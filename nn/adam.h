// Adam over one flat parameter buffer (PyTorch semantics, optional global gradient-norm
// clipping), with its moments, step count and scratch on the device: Step() queues one or two
// kernels and never waits, so it can be captured in a CUDA graph.
#pragma once

#include <cstdint>
#include <memory>

#include "core/memory.h"
#include "nn/backend.h"
#include "nn/tensor.h"

namespace cugym::nn {

class Adam {
 public:
  // Moments start at zero, the step count at 0. Throws std::invalid_argument for bad options.
  Adam(std::shared_ptr<Backend> backend, int64_t num_params, const AdamOptions& options = {});

  // One update of params (num_params floats) from grads. grads are not modified: clipping
  // scales them on the fly (PyTorch scales .grad in place; the parameters come out the same).
  // Options are read when the work is queued: a captured graph keeps the ones it was captured with.
  void Step(VectorView<float> params, VectorView<const float> grads);
  // Zeroes the moments and the step count.
  void Reset();

  const AdamOptions& options() const { return options_; }
  void set_options(const AdamOptions& options);
  int64_t num_params() const { return num_params_; }
  // Device-resident state (for checkpoints and tests).
  VectorView<float> exp_avg() { return {moments_.data(), num_params_, moments_.device()}; }
  VectorView<float> exp_avg_sq() { return {moments_.data() + num_params_, num_params_, moments_.device()}; }
  VectorView<int64_t> step_count() { return AsVector(step_); }
  VectorView<const int64_t> step_count() const { return AsVector(step_); }
  VectorView<const float> exp_avg() const { return {moments_.data(), num_params_, moments_.device()}; }
  VectorView<const float> exp_avg_sq() const { return {moments_.data() + num_params_, num_params_, moments_.device()}; }
  // [1]: the total gradient norm before clipping, written by each Step when clipping is on.
  VectorView<const float> grad_norm() const { return {scratch_.data(), 1, scratch_.device()}; }

  // Host reads (they wait for the queued work): steps taken, last gradient norm.
  int64_t ReadStepCount() const;
  float ReadGradNorm() const;

 private:
  std::shared_ptr<Backend> backend_;
  int64_t num_params_;
  AdamOptions options_;
  Buffer<float> moments_;  // m then v
  Buffer<int64_t> step_;
  Buffer<float> scratch_;  // [0] grad norm, then the back end's scratch (zeroed)
};

}  // namespace cugym::nn
