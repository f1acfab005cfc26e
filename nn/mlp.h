// A multilayer perceptron: Linear -> ReLU -> ... -> Linear, with all parameters in one flat
// buffer (so Adam, clipping, hard copies and Polyak averaging are one pass each) and every
// activation buffer allocated at construction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "nn/backend.h"
#include "nn/layers.h"
#include "nn/tensor.h"

namespace cugym::nn {

struct MlpOptions {
  /// Most rows one Forward, ForwardTrain or Backward takes (the minibatch, or the number of envs
  /// acted for). The workspace is sized for it: about max_batch * (sum of layer widths) floats,
  /// twice that when trainable.
  int max_batch = 256;
  /// Allocate gradients and backward scratch. A network that is only evaluated needs neither.
  bool trainable = true;
  /// Seed of the initial weights (PyTorch's nn.Linear default, nn/init.h).
  uint64_t seed = 0;
};

class Mlp {
 public:
  // layer_sizes = {in, hidden..., out}: at least 2 entries, each >= 1. ReLU after every Linear
  // but the last. Throws std::invalid_argument naming a bad size.
  Mlp(std::shared_ptr<Backend> backend, std::vector<int> layer_sizes, const MlpOptions& options = {});
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  const std::vector<int>& layer_sizes() const { return sizes_; }
  int num_layers() const { return static_cast<int>(sizes_.size()) - 1; }  // Linear layers
  int in_features() const { return sizes_.front(); }
  int out_features() const { return sizes_.back(); }
  int max_batch() const { return max_batch_; }
  bool trainable() const { return trainable_; }
  Device device() const { return backend_->device(); }
  Backend& backend() const { return *backend_; }
  const std::shared_ptr<Backend>& shared_backend() const { return backend_; }
  // Weights and biases, padding excluded (4-120-84-2: 10,934).
  int64_t num_parameters() const;

  // Parameters and gradients: views into flat buffers. Each tensor starts 64-byte aligned; the
  // padding between tensors is zero and stays zero (its gradient is zero).
  VectorView<float> parameters() { return AsVector(params_); }
  VectorView<const float> parameters() const { return AsVector(params_); }
  VectorView<float> gradients();
  WeightView weight(int layer);
  VectorView<float> bias(int layer);
  LinearParams linear(int layer) const;
  LinearGrads linear_grads(int layer);

  // Redraws every weight and bias (PyTorch's default, nn/init.h): host draws, one copy.
  void Initialize(uint64_t seed);

  // Inference: the output [n x out] for x [n x in], n <= max_batch. The view points into the
  // workspace and stays valid until the next Forward, ForwardTrain or Backward.
  ConstBatchView Forward(ConstBatchView x);
  // Training forward: the same output; keeps every layer's activations and x itself (x must stay
  // unchanged until Backward).
  ConstBatchView ForwardTrain(ConstBatchView x);
  // Scratch [n x out] for dL/doutput of the last ForwardTrain's n rows (so a loss can write it
  // without another buffer).
  BatchView OutputGrad();
  // Backward of the last ForwardTrain. dy [n x out] = dL/doutput (overwritten). gradients() are
  // overwritten, not accumulated (unlike PyTorch's .grad). With last_bias_grad_ready, the last
  // layer's bias gradient is already in place (written by Backend::GatherLoss).
  void Backward(BatchView dy, bool last_bias_grad_ready = false);

  // Hard update (this = other) and Polyak averaging (this = tau * other + (1 - tau) * this) of
  // all parameters in one pass; other must have the same layer sizes and back end.
  void CopyParametersFrom(const Mlp& other);
  void PolyakFrom(const Mlp& other, float tau);

  // Offsets (in floats) of layer l's weight and bias in parameters().
  int64_t weight_offset(int layer) const { return offsets_.at(layer).weight; }
  int64_t bias_offset(int layer) const { return offsets_.at(layer).bias; }

 private:
  struct Offsets {
    int64_t weight, bias;
  };
  ConstBatchView RunForward(ConstBatchView x, const char* op);
  void CheckLayer(int layer) const;

  std::shared_ptr<Backend> backend_;
  std::vector<int> sizes_;
  int max_batch_;
  bool trainable_;
  std::vector<Offsets> offsets_;
  Buffer<float> params_;
  Buffer<float> grads_;
  // Workspace: activations[l] = output of layer l, [max_batch x sizes_[l + 1]] each; then two
  // ping-pong buffers for dL/dx and the output gradient (trainable only).
  Buffer<float> workspace_;
  std::vector<float*> activations_;
  float* ping_[2] = {nullptr, nullptr};
  float* output_grad_ = nullptr;
  // The last ForwardTrain: its input and row count (0: none, or overwritten since).
  ConstBatchView train_x_;
  int64_t train_rows_ = 0;
};

}  // namespace cugym::nn
