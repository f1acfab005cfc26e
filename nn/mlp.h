// A multilayer perceptron: Linear -> ReLU (or tanh, PPO's) -> ... -> Linear, optionally behind a Conv2d -> ReLU
// front for image observations and optionally with a LayerNorm before each activation (PQN's network), with all
// parameters in one flat buffer (so Adam, clipping, hard copies and Polyak averaging are one pass each) and every
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

/// How an Mlp's weights start (MlpOptions::init).
enum class MlpInit {
  kTorchDefault,  ///< PyTorch's nn.Linear and nn.Conv2d defaults, U(+-1/sqrt(fan_in)) for weights and biases
  kOrthogonal,    ///< torch.nn.init.orthogonal_ times a gain, biases 0 (CleanRL's layer_init: PPO's networks)
};

struct MlpOptions {
  /// Most rows one Forward, ForwardTrain or Backward takes (the minibatch, or the number of envs
  /// acted for). The workspace is sized for it: about max_batch * (sum of layer widths) floats,
  /// twice that when trainable.
  int max_batch = 256;
  /// Allocate gradients and backward scratch. A network that is only evaluated needs neither.
  bool trainable = true;
  /// Seed of the initial weights (`init`, nn/init.h).
  uint64_t seed = 0;
  /// An optional convolution in front (out_channels 0: none): Conv2d -> ReLU on the input read as
  /// NHWC images, its output [Ho][Wo][out] flattened into the first Linear layer. The input size
  /// (layer_sizes[0]) must be height * width * in_channels. MinAtar's network: {10, 10, C, 16, 3}
  /// with layer sizes {100 C, 128, actions}.
  ConvSpec conv;
  /// A LayerNorm (learned scale and shift, Backend::LayerNorm) between every hidden Linear layer
  /// and its ReLU, and between the convolution and its ReLU (over each position's channels, as
  /// purejaxql's MinAtar network): Linear -> LayerNorm -> ReLU -> ... -> Linear.
  bool layer_norm = false;
  /// Replicas: K independent networks of these sizes run as one (the K agents of a batch of
  /// seeds). Their parameters lie one block after the other in parameters() (replica r's at
  /// r * replica_stride(), each laid out as a network of one is), inputs and outputs hold K equal
  /// blocks of rows (replica r's rows r n .. r n + n - 1), and each layer is one batched GEMM and
  /// one bias pass for all K (Backend::GemmBatched), the convolution and LayerNorms too. On the CPU
  /// replica r's outputs and gradients are the bits a network of one with its parameters gives.
  /// max_batch counts rows per replica.
  int replicas = 1;
  /// The hidden layers' activation, after each hidden Linear layer (after its LayerNorm with
  /// layer_norm): kRelu (DQN's and PQN's networks) or kTanh (PPO's, as CleanRL's ppo.py builds its
  /// actor and critic: Linear -> Tanh -> Linear -> Tanh -> Linear). The convolution's stays ReLU
  /// (CleanRL's image networks use ReLU throughout). Model files record it (cugym.activation).
  Activation activation = Activation::kRelu;
  /// The initial weights: kTorchDefault (PyTorch's defaults, as every network before PPO's), or
  /// kOrthogonal: every weight a matrix with orthonormal rows or columns (whichever are fewer)
  /// times a gain, every bias 0, as CleanRL's layer_init (torch.nn.init.orthogonal_; the
  /// convolution's weight as [out x in * k * k]). Both are drawn on the host from `seed`, the same
  /// on every device. LayerNorm scales start at 1 and shifts at 0 either way.
  MlpInit init = MlpInit::kTorchDefault;
  /// kOrthogonal's gain for the hidden layers and the convolution: sqrt(2), CleanRL's.
  double hidden_gain = 1.4142135623730951;
  /// kOrthogonal's gain for the last layer: CleanRL's ppo.py uses 0.01 for the actor (a nearly
  /// uniform first policy) and 1 for the critic.
  double output_gain = 1.0;
  /// Backward also writes dL/dx, the gradient with respect to the network's input (InputGrad()):
  /// SAC's actor update differentiates the critics with respect to their action inputs. Needs
  /// trainable and no convolution.
  bool input_gradient = false;
};

// A LayerNorm's scale (gamma, "weight" in PyTorch) and shift (beta, "bias").
struct NormParams {
  VectorView<const float> gamma;
  VectorView<const float> beta;
};
struct NormGrads {
  VectorView<float> gamma;
  VectorView<float> beta;
};

class Mlp {
 public:
  // layer_sizes = {in, hidden..., out}: at least 2 entries, each >= 1. options.activation after
  // every Linear but the last (ReLU after the convolution). With options.conv, the first Linear
  // layer takes the convolution's conv.out_features() outputs, not `in`. Throws
  // std::invalid_argument naming a bad size, a hidden activation other than ReLU or tanh, or a
  // gain that is not finite.
  Mlp(std::shared_ptr<Backend> backend, std::vector<int> layer_sizes, const MlpOptions& options = {});
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  const std::vector<int>& layer_sizes() const { return sizes_; }
  int num_layers() const { return static_cast<int>(sizes_.size()) - 1; }  // Linear layers
  int in_features() const { return sizes_.front(); }
  // The input width of Linear layer l: layer_sizes()[l], or for the first behind a convolution its
  // flattened output.
  int64_t linear_in(int layer) const;
  // The convolution in front (enabled() false: none).
  const ConvSpec& conv() const { return conv_; }
  bool has_conv() const { return conv_.enabled(); }
  bool layer_norm() const { return layer_norm_; }
  // The hidden layers' activation (MlpOptions::activation) and how Initialize draws (MlpOptions::init).
  Activation activation() const { return activation_; }
  MlpInit init() const { return init_; }
  int out_features() const { return sizes_.back(); }
  int max_batch() const { return max_batch_; }
  bool trainable() const { return trainable_; }
  Device device() const { return backend_->device(); }
  Backend& backend() const { return *backend_; }
  const std::shared_ptr<Backend>& shared_backend() const { return backend_; }
  // Weights and biases (and LayerNorm scales and shifts) of one replica, padding excluded
  // (4-120-84-2: 10,934; MinAtar's 10x10x4 conv 16 then 400-128-6: 132,566).
  int64_t num_parameters() const;
  // MlpOptions::replicas, and the floats from one replica's parameters (and gradients) to the
  // next's: one replica's block, padding included (parameters().size() / replicas()).
  int replicas() const { return replicas_; }
  int64_t replica_stride() const { return replica_stride_; }

  // Parameters and gradients: views into flat buffers (every replica's). Each tensor starts
  // 64-byte aligned; the padding between tensors is zero and stays zero (its gradient is zero).
  // The per-tensor views below are replica 0's; replica r's lie r * replica_stride() further.
  VectorView<float> parameters() { return AsVector(params_); }
  VectorView<const float> parameters() const { return AsVector(params_); }
  VectorView<float> gradients();
  WeightView weight(int layer);
  VectorView<float> bias(int layer);
  LinearParams linear(int layer) const;
  LinearGrads linear_grads(int layer);
  // The convolution's weight [out x in*k*k] (PyTorch's [out][in][k][k]) and bias; throws without one.
  LinearParams conv_params() const;
  LinearGrads conv_grads();
  // The LayerNorm after hidden layer l (l < num_layers() - 1) or after the convolution; throws
  // without layer_norm.
  NormParams norm(int layer) const;
  NormGrads norm_grads(int layer);
  NormParams conv_norm() const;
  NormGrads conv_norm_grads();

  // Redraws every weight and bias (MlpOptions::init, nn/init.h): host draws, one copy. Every
  // replica gets the weights of `seed`; the second form redraws one replica only, as a network of
  // one with that seed draws.
  void Initialize(uint64_t seed);
  void Initialize(int replica, uint64_t seed);

  // One replica's parameters from or into `solo`, a network of one replica with the same layers
  // and activation on the same back end (to save, load or evaluate one replica as an ordinary
  // network).
  void CopyReplicaFrom(int replica, const Mlp& solo);
  void CopyReplicaTo(int replica, Mlp& solo) const;

  // Inference: the output [n x out] for x [n x in], n <= max_batch (with replicas, n = K m rows,
  // m <= max_batch, replica r's m rows after replica r - 1's). The view points into the
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
  // layer's bias gradient is already in place (written by Backend::GatherLoss; with replicas, every
  // replica's: its grouped form).
  void Backward(BatchView dy, bool last_bias_grad_ready = false);
  // With MlpOptions::input_gradient: dL/dx [n x in] of the last Backward (valid until the next
  // Backward).
  ConstBatchView InputGrad() const;

  // Hard update (this = other) and Polyak averaging (this = tau * other + (1 - tau) * this) of
  // all parameters in one pass; other must have the same layers, activation and back end.
  void CopyParametersFrom(const Mlp& other);
  void PolyakFrom(const Mlp& other, float tau);

  // Offsets (in floats) of layer l's weight and bias in parameters(), and of the convolution's
  // (which come first).
  int64_t weight_offset(int layer) const { return offsets_.at(layer).weight; }
  int64_t bias_offset(int layer) const { return offsets_.at(layer).bias; }
  int64_t conv_weight_offset() const { return conv_offsets_.weight; }
  int64_t conv_bias_offset() const { return conv_offsets_.bias; }
  // Offsets of the LayerNorm's scale ("weight") and shift ("bias") after hidden layer l, and after
  // the convolution.
  int64_t norm_weight_offset(int layer) const { return norm_offsets_.at(layer).weight; }
  int64_t norm_bias_offset(int layer) const { return norm_offsets_.at(layer).bias; }
  int64_t conv_norm_weight_offset() const { return conv_norm_offsets_.weight; }
  int64_t conv_norm_bias_offset() const { return conv_norm_offsets_.bias; }

 private:
  struct Offsets {
    int64_t weight, bias;
  };
  ConstBatchView RunForward(ConstBatchView x, const char* op);
  void CheckLayer(int layer) const;
  void CheckConv() const;
  void CheckNorm(int layer) const;
  void CheckReplica(int replica) const;
  void CheckSolo(const Mlp& solo, const char* op) const;
  // The layers' replica layout (count 1: a network of one).
  LayerReplicas layer_replicas() const { return {replicas_, replica_stride_}; }

  std::shared_ptr<Backend> backend_;
  std::vector<int> sizes_;
  int max_batch_;
  int replicas_;
  int64_t replica_stride_ = 0;
  bool trainable_;
  ConvSpec conv_;
  bool layer_norm_;
  Activation activation_;
  MlpInit init_;
  double hidden_gain_, output_gain_;
  Offsets conv_offsets_{0, 0};
  std::vector<Offsets> offsets_;
  // LayerNorm scale (weight) and shift (bias) offsets, per hidden layer and for the convolution.
  Offsets conv_norm_offsets_{0, 0};
  std::vector<Offsets> norm_offsets_;
  Buffer<float> params_;
  Buffer<float> grads_;
  // Workspace: with a convolution its patches [max_batch * Ho*Wo x C*k*k] and output
  // [max_batch x conv_.out_features()]; activations[l] = output of layer l, [max_batch x
  // sizes_[l + 1]] each; then two ping-pong buffers for dL/dx and the output gradient (trainable
  // only).
  Buffer<float> workspace_;
  float* patches_ = nullptr;
  float* conv_out_ = nullptr;
  std::vector<float*> activations_;
  // layer_norm: each hidden layer's normalized pre-activation xhat [max_batch x width] and 1/std
  // [max_batch], and the convolution's ([max_batch * Ho*Wo x out] and [max_batch * Ho*Wo]).
  std::vector<float*> xhat_, rstd_;
  float* conv_xhat_ = nullptr;
  float* conv_rstd_ = nullptr;
  float* ping_[2] = {nullptr, nullptr};
  float* output_grad_ = nullptr;
  float* input_grad_ = nullptr;  // MlpOptions::input_gradient: [max_batch x in]
  // The last ForwardTrain: its input and row count (0: none, or overwritten since).
  ConstBatchView train_x_;
  int64_t train_rows_ = 0;
};

}  // namespace cugym::nn
