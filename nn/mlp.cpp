// MLP: parameter packing, initialization (PyTorch's default or orthogonal), forward and backward
// through the layers.
#include "nn/mlp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "nn/init.h"

namespace cugym::nn {
namespace {

constexpr int64_t kAlignFloats = 16;  // 64 bytes: each tensor starts on a cache line

int64_t AlignUp(int64_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

}  // namespace

Mlp::Mlp(std::shared_ptr<Backend> backend, std::vector<int> layer_sizes, const MlpOptions& options)
    : backend_(std::move(backend)),
      sizes_(std::move(layer_sizes)),
      max_batch_(options.max_batch),
      replicas_(options.replicas),
      trainable_(options.trainable),
      conv_(options.conv),
      layer_norm_(options.layer_norm),
      activation_(options.activation),
      init_(options.init),
      hidden_gain_(options.hidden_gain),
      output_gain_(options.output_gain) {
  if (backend_ == nullptr) throw std::invalid_argument("Mlp: no back end");
  if (activation_ != Activation::kRelu && activation_ != Activation::kTanh) {
    throw std::invalid_argument(std::string("Mlp: hidden activation ") + ActivationName(activation_) +
                                " (expected relu or tanh)");
  }
  if (!std::isfinite(hidden_gain_) || !std::isfinite(output_gain_)) {
    throw std::invalid_argument("Mlp: gains " + std::to_string(hidden_gain_) + " (hidden) and " +
                                std::to_string(output_gain_) + " (output), expected finite values");
  }
  if (sizes_.size() < 2) {
    throw std::invalid_argument("Mlp: layer sizes need at least an input and an output size, got " +
                                std::to_string(sizes_.size()) + " entries");
  }
  for (std::size_t i = 0; i < sizes_.size(); ++i) {
    if (sizes_[i] < 1) {
      throw std::invalid_argument("Mlp: layer size " + std::to_string(sizes_[i]) + " at position " + std::to_string(i) +
                                  " (expected >= 1)");
    }
  }
  if (max_batch_ < 1) throw std::invalid_argument("Mlp: max_batch " + std::to_string(max_batch_) + " (expected >= 1)");
  if (replicas_ < 1) throw std::invalid_argument("Mlp: replicas " + std::to_string(replicas_) + " (expected >= 1)");
  CheckGroupCount(backend_->device(), replicas_, "Mlp");
  if (conv_.out_channels < 0) {
    throw std::invalid_argument("Mlp: conv.out_channels " + std::to_string(conv_.out_channels) +
                                " (expected >= 1, or 0 for no convolution)");
  }
  if (has_conv()) {
    CheckConvSpec(conv_, "Mlp");
    if (conv_.in_features() != sizes_.front()) {
      throw std::invalid_argument("Mlp: the convolution takes " + std::to_string(conv_.height) + " x " +
                                  std::to_string(conv_.width) + " x " + std::to_string(conv_.in_channels) + " = " +
                                  std::to_string(conv_.in_features()) + " inputs, the layer sizes start with " +
                                  std::to_string(sizes_.front()));
    }
  } else {
    conv_ = ConvSpec();  // the shape of "none" is not part of the network (PolyakFrom compares it)
  }

  int64_t total = 0;
  if (has_conv()) {
    conv_offsets_.weight = total;
    total = AlignUp(total + conv_.out_channels * conv_.patch_size());
    conv_offsets_.bias = total;
    total = AlignUp(total + conv_.out_channels);
    if (layer_norm_) {
      conv_norm_offsets_.weight = total;
      total = AlignUp(total + conv_.out_channels);
      conv_norm_offsets_.bias = total;
      total = AlignUp(total + conv_.out_channels);
    }
  }
  for (int l = 0; l < num_layers(); ++l) {
    Offsets o;
    o.weight = total;
    total = AlignUp(total + sizes_[l + 1] * linear_in(l));
    o.bias = total;
    total = AlignUp(total + sizes_[l + 1]);
    offsets_.push_back(o);
    if (layer_norm_ && l + 1 < num_layers()) {
      Offsets norm;
      norm.weight = total;
      total = AlignUp(total + sizes_[l + 1]);
      norm.bias = total;
      total = AlignUp(total + sizes_[l + 1]);
      norm_offsets_.push_back(norm);
    }
  }
  replica_stride_ = total;  // a multiple of 16 floats: every replica's tensors stay aligned
  total *= replicas_;
  const Device device = backend_->device();
  params_ = Buffer<float>(device, total);
  params_.Zero();
  if (trainable_) {
    grads_ = Buffer<float>(device, total);
    grads_.Zero();  // the padding's gradient stays zero; everything else is overwritten
  }

  // Backward's dL/dx buffers hold a hidden layer's gradient, or the convolution's output's.
  int64_t widths = 0, widest_hidden = has_conv() ? conv_.out_features() : 1;
  for (int l = 1; l < static_cast<int>(sizes_.size()); ++l) {
    widths += AlignUp(sizes_[l]);
    if (l < num_layers()) widest_hidden = std::max<int64_t>(widest_hidden, sizes_[l]);
  }
  const int64_t rows = static_cast<int64_t>(max_batch_) * replicas_;
  const int64_t positions = static_cast<int64_t>(conv_.out_height()) * conv_.out_width();
  const int64_t patch_floats = has_conv() ? AlignUp(rows * positions * conv_.patch_size()) : 0;
  const int64_t conv_floats = has_conv() ? rows * AlignUp(conv_.out_features()) : 0;
  int64_t floats = patch_floats + conv_floats + rows * widths;
  if (trainable_) floats += 2 * rows * AlignUp(widest_hidden) + rows * AlignUp(out_features());
  if (options.input_gradient) {
    if (!trainable_ || has_conv())
      throw std::invalid_argument("Mlp: input_gradient needs a trainable network without a convolution");
    floats += rows * AlignUp(sizes_.front());
  }
  // LayerNorm keeps each normalized layer's xhat and 1/std for the backward.
  int64_t norm_floats = 0;
  if (layer_norm_) {
    for (int l = 0; l + 1 < num_layers(); ++l) norm_floats += rows * AlignUp(sizes_[l + 1]) + AlignUp(rows);
    if (has_conv()) norm_floats += conv_floats + AlignUp(rows * positions);
  }
  floats += norm_floats;
  workspace_ = Buffer<float>(device, floats);
  float* cursor = workspace_.data();
  if (has_conv()) {
    patches_ = cursor;
    cursor += patch_floats;
    conv_out_ = cursor;
    cursor += conv_floats;
  }
  for (int l = 1; l < static_cast<int>(sizes_.size()); ++l) {
    activations_.push_back(cursor);
    cursor += rows * AlignUp(sizes_[l]);
  }
  if (layer_norm_) {
    for (int l = 0; l + 1 < num_layers(); ++l) {
      xhat_.push_back(cursor);
      cursor += rows * AlignUp(sizes_[l + 1]);
      rstd_.push_back(cursor);
      cursor += AlignUp(rows);
    }
    if (has_conv()) {
      conv_xhat_ = cursor;
      cursor += conv_floats;
      conv_rstd_ = cursor;
      cursor += AlignUp(rows * positions);
    }
  }
  if (trainable_) {
    ping_[0] = cursor;
    cursor += rows * AlignUp(widest_hidden);
    ping_[1] = cursor;
    cursor += rows * AlignUp(widest_hidden);
    output_grad_ = cursor;
    cursor += rows * AlignUp(out_features());
  }
  if (options.input_gradient) input_grad_ = cursor;
  Initialize(options.seed);
}

int64_t Mlp::linear_in(int layer) const { return layer == 0 && has_conv() ? conv_.out_features() : sizes_.at(layer); }

int64_t Mlp::num_parameters() const {
  int64_t n = 0;
  if (has_conv()) n += conv_.out_channels * (conv_.patch_size() + 1 + (layer_norm_ ? 2 : 0));
  for (int l = 0; l < num_layers(); ++l) {
    n += sizes_[l + 1] * (linear_in(l) + 1);
    if (layer_norm_ && l + 1 < num_layers()) n += 2 * sizes_[l + 1];
  }
  return n;
}

void Mlp::CheckLayer(int layer) const {
  if (layer < 0 || layer >= num_layers()) {
    throw std::invalid_argument("Mlp: layer " + std::to_string(layer) + " of " + std::to_string(num_layers()));
  }
}

void Mlp::CheckConv() const {
  if (!has_conv()) throw std::invalid_argument("Mlp: the network has no convolution");
}

void Mlp::CheckNorm(int layer) const {
  if (!layer_norm_) throw std::invalid_argument("Mlp: the network has no LayerNorm");
  if (layer < 0 || layer + 1 >= num_layers()) {
    throw std::invalid_argument("Mlp: no LayerNorm after layer " + std::to_string(layer) + " of " +
                                std::to_string(num_layers()) + " (only hidden layers have one)");
  }
}

NormParams Mlp::norm(int layer) const {
  CheckNorm(layer);
  const int64_t f = sizes_[layer + 1];
  return {VectorView<const float>(params_.data() + norm_offsets_[layer].weight, f, device()),
          VectorView<const float>(params_.data() + norm_offsets_[layer].bias, f, device())};
}

NormGrads Mlp::norm_grads(int layer) {
  CheckNorm(layer);
  if (!trainable_) throw std::invalid_argument("Mlp: gradients of a network built with trainable = false");
  const int64_t f = sizes_[layer + 1];
  return {VectorView<float>(grads_.data() + norm_offsets_[layer].weight, f, device()),
          VectorView<float>(grads_.data() + norm_offsets_[layer].bias, f, device())};
}

NormParams Mlp::conv_norm() const {
  CheckConv();
  if (!layer_norm_) throw std::invalid_argument("Mlp: the network has no LayerNorm");
  const int64_t f = conv_.out_channels;
  return {VectorView<const float>(params_.data() + conv_norm_offsets_.weight, f, device()),
          VectorView<const float>(params_.data() + conv_norm_offsets_.bias, f, device())};
}

NormGrads Mlp::conv_norm_grads() {
  CheckConv();
  if (!layer_norm_) throw std::invalid_argument("Mlp: the network has no LayerNorm");
  if (!trainable_) throw std::invalid_argument("Mlp: gradients of a network built with trainable = false");
  const int64_t f = conv_.out_channels;
  return {VectorView<float>(grads_.data() + conv_norm_offsets_.weight, f, device()),
          VectorView<float>(grads_.data() + conv_norm_offsets_.bias, f, device())};
}

VectorView<float> Mlp::gradients() {
  if (!trainable_) throw std::invalid_argument("Mlp: gradients of a network built with trainable = false");
  return AsVector(grads_);
}

WeightView Mlp::weight(int layer) {
  CheckLayer(layer);
  return {params_.data() + offsets_[layer].weight, sizes_[layer + 1], linear_in(layer), device()};
}

VectorView<float> Mlp::bias(int layer) {
  CheckLayer(layer);
  return {params_.data() + offsets_[layer].bias, sizes_[layer + 1], device()};
}

LinearParams Mlp::linear(int layer) const {
  CheckLayer(layer);
  return {ConstWeightView(params_.data() + offsets_[layer].weight, sizes_[layer + 1], linear_in(layer), device()),
          VectorView<const float>(params_.data() + offsets_[layer].bias, sizes_[layer + 1], device())};
}

LinearGrads Mlp::linear_grads(int layer) {
  CheckLayer(layer);
  if (!trainable_) throw std::invalid_argument("Mlp: gradients of a network built with trainable = false");
  return {WeightView(grads_.data() + offsets_[layer].weight, sizes_[layer + 1], linear_in(layer), device()),
          VectorView<float>(grads_.data() + offsets_[layer].bias, sizes_[layer + 1], device())};
}

LinearParams Mlp::conv_params() const {
  CheckConv();
  return {ConstWeightView(params_.data() + conv_offsets_.weight, conv_.out_channels, conv_.patch_size(), device()),
          VectorView<const float>(params_.data() + conv_offsets_.bias, conv_.out_channels, device())};
}

LinearGrads Mlp::conv_grads() {
  CheckConv();
  if (!trainable_) throw std::invalid_argument("Mlp: gradients of a network built with trainable = false");
  return {WeightView(grads_.data() + conv_offsets_.weight, conv_.out_channels, conv_.patch_size(), device()),
          VectorView<float>(grads_.data() + conv_offsets_.bias, conv_.out_channels, device())};
}

void Mlp::CheckReplica(int replica) const {
  if (replica < 0 || replica >= replicas_) {
    throw std::invalid_argument("Mlp: replica " + std::to_string(replica) + " of " + std::to_string(replicas_));
  }
}

void Mlp::Initialize(uint64_t seed) {
  for (int r = 0; r < replicas_; ++r) Initialize(r, seed);
}

void Mlp::Initialize(int replica, uint64_t seed) {
  CheckReplica(replica);
  std::vector<float> host(static_cast<std::size_t>(replica_stride_), 0.0f);
  const bool orthogonal = init_ == MlpInit::kOrthogonal;
  if (has_conv()) {
    float* weight = host.data() + conv_offsets_.weight;
    float* bias = host.data() + conv_offsets_.bias;
    if (orthogonal) {
      InitConv2dOrthogonal(seed, conv_.out_channels, conv_.in_channels, conv_.kernel, hidden_gain_, weight, bias);
    } else {
      InitConv2d(seed, conv_.out_channels, conv_.in_channels, conv_.kernel, weight, bias);
    }
  }
  for (int l = 0; l < num_layers(); ++l) {
    float* weight = host.data() + offsets_[l].weight;
    float* bias = host.data() + offsets_[l].bias;
    if (orthogonal) {
      const double gain = l + 1 < num_layers() ? hidden_gain_ : output_gain_;
      InitOrthogonal(seed, l, sizes_[l + 1], linear_in(l), gain, weight, bias);
    } else {
      InitLinear(seed, l, sizes_[l + 1], linear_in(l), weight, bias);
    }
  }
  // LayerNorm starts as the identity: scale 1, shift 0 (PyTorch's and flax's defaults).
  if (layer_norm_) {
    if (has_conv()) std::fill_n(host.begin() + conv_norm_offsets_.weight, conv_.out_channels, 1.0f);
    for (int l = 0; l + 1 < num_layers(); ++l) std::fill_n(host.begin() + norm_offsets_[l].weight, sizes_[l + 1], 1.0f);
  }
  CopyFromHost(VectorView<float>(params_.data() + replica * replica_stride_, replica_stride_, device()), host);
}

void Mlp::CheckSolo(const Mlp& solo, const char* op) const {
  if (solo.replicas_ != 1 || solo.sizes_ != sizes_ || solo.conv_ != conv_ || solo.layer_norm_ != layer_norm_ ||
      solo.activation_ != activation_) {
    throw std::invalid_argument(std::string("Mlp::") + op +
                                ": the other network must be one replica of the same layers");
  }
  if (solo.backend_ != backend_) {
    throw std::invalid_argument(std::string("Mlp::") + op + ": the other network is on another back end");
  }
}

void Mlp::CopyReplicaFrom(int replica, const Mlp& solo) {
  CheckReplica(replica);
  CheckSolo(solo, "CopyReplicaFrom");
  backend_->Polyak(VectorView<float>(params_.data() + replica * replica_stride_, replica_stride_, device()),
                   solo.parameters(), 1.0f);
}

void Mlp::CopyReplicaTo(int replica, Mlp& solo) const {
  CheckReplica(replica);
  CheckSolo(solo, "CopyReplicaTo");
  backend_->Polyak(solo.parameters(),
                   VectorView<const float>(params_.data() + replica * replica_stride_, replica_stride_, device()),
                   1.0f);
}

ConstBatchView Mlp::RunForward(ConstBatchView x, const char* op) {
  const int64_t most = static_cast<int64_t>(max_batch_) * replicas_;
  if (x.cols() != in_features() || x.rows() > most || x.rows() % replicas_ != 0) {
    throw std::invalid_argument(std::string(op) + ": input is " + std::to_string(x.rows()) + " x " +
                                std::to_string(x.cols()) + ", the network takes at most " + std::to_string(most) +
                                " x " + std::to_string(in_features()) +
                                (replicas_ > 1 ? " in " + std::to_string(replicas_) + " equal blocks of rows" : ""));
  }
  if (x.size() > 0 && x.device() != device()) {
    throw std::invalid_argument(std::string(op) + ": input on " + DeviceName(x.device()) + ", network on " +
                                DeviceName(device()));
  }
  const int64_t n = x.rows();
  ConstBatchView input = x;
  if (has_conv()) {
    // The convolution's activation is ReLU whatever the hidden layers' is (MlpOptions::activation).
    const int64_t positions = static_cast<int64_t>(conv_.out_height()) * conv_.out_width();
    const BatchView patches(patches_, n * positions, conv_.patch_size(), device());
    BatchView y(conv_out_, n, conv_.out_features(), device());
    if (layer_norm_) {
      // Conv2d -> LayerNorm over each position's channels -> ReLU.
      Conv2dForward(*backend_, conv_, conv_params(), x, patches,
                    BatchView(conv_xhat_, n, conv_.out_features(), device()), Activation::kNone, layer_replicas());
      const NormParams norm = conv_norm();
      backend_->LayerNorm(BatchView(conv_xhat_, n * positions, conv_.out_channels, device()), norm.gamma, norm.beta,
                          VectorView<float>(conv_rstd_, n * positions, device()),
                          BatchView(conv_out_, n * positions, conv_.out_channels, device()), Activation::kRelu,
                          replicas_, replica_stride_);
    } else {
      Conv2dForward(*backend_, conv_, conv_params(), x, patches, y, Activation::kRelu, layer_replicas());
    }
    input = y;
  }
  for (int l = 0; l < num_layers(); ++l) {
    BatchView y(activations_[l], n, sizes_[l + 1], device());
    const bool hidden = l + 1 < num_layers();
    if (hidden && layer_norm_) {
      // Linear -> LayerNorm -> activation: the Linear's output goes to xhat, normalized there in place.
      BatchView z(xhat_[l], n, sizes_[l + 1], device());
      LinearForward(*backend_, linear(l), input, z, Activation::kNone, layer_replicas());
      const NormParams p = norm(l);
      backend_->LayerNorm(z, p.gamma, p.beta, VectorView<float>(rstd_[l], n, device()), y, activation_, replicas_,
                          replica_stride_);
    } else {
      LinearForward(*backend_, linear(l), input, y, hidden ? activation_ : Activation::kNone, layer_replicas());
    }
    input = y;
  }
  return input;
}

ConstBatchView Mlp::Forward(ConstBatchView x) {
  train_rows_ = 0;  // the activations a Backward would need are overwritten
  return RunForward(x, "Mlp::Forward");
}

ConstBatchView Mlp::ForwardTrain(ConstBatchView x) {
  if (!trainable_) throw std::invalid_argument("Mlp::ForwardTrain on a network built with trainable = false");
  train_rows_ = 0;
  ConstBatchView y = RunForward(x, "Mlp::ForwardTrain");
  train_x_ = x;
  train_rows_ = x.rows();
  return y;
}

BatchView Mlp::OutputGrad() {
  if (!trainable_) throw std::invalid_argument("Mlp::OutputGrad on a network built with trainable = false");
  return {output_grad_, train_rows_, out_features(), device()};
}

void Mlp::Backward(BatchView dy, bool last_bias_grad_ready) {
  if (!trainable_) throw std::invalid_argument("Mlp::Backward on a network built with trainable = false");
  if (train_rows_ == 0)
    throw std::invalid_argument("Mlp::Backward: no ForwardTrain to go back through (or a Forward overwrote it)");
  if (dy.rows() != train_rows_ || dy.cols() != out_features()) {
    throw std::invalid_argument("Mlp::Backward: dy is " + std::to_string(dy.rows()) + " x " +
                                std::to_string(dy.cols()) + ", the last ForwardTrain gave " +
                                std::to_string(train_rows_) + " x " + std::to_string(out_features()));
  }
  const int64_t n = train_rows_;
  BatchView dz = dy;
  int next = 0;
  const ConstBatchView conv_y(conv_out_, has_conv() ? n : 0, conv_.out_features(), device());
  for (int l = num_layers() - 1; l >= 0; --l) {
    ConstBatchView x = l > 0        ? ConstBatchView(activations_[l - 1], n, sizes_[l], device())
                       : has_conv() ? conv_y
                                    : train_x_;
    ConstBatchView y(activations_[l], n, sizes_[l + 1], device());
    BatchView dx = l > 0 || has_conv()      ? BatchView(ping_[next], n, linear_in(l), device())
                   : input_grad_ != nullptr ? BatchView(input_grad_, n, sizes_.front(), device())
                                            : BatchView();
    const bool last = l == num_layers() - 1;
    Activation act = last ? Activation::kNone : activation_;
    if (!last && layer_norm_) {
      // Back through the activation and LayerNorm to the Linear's output.
      const NormGrads g = norm_grads(l);
      backend_->LayerNormBackward(dz, ConstBatchView(xhat_[l], n, sizes_[l + 1], device()),
                                  VectorView<const float>(rstd_[l], n, device()), y, norm(l).gamma, g.gamma, g.beta,
                                  activation_, replicas_, replica_stride_);
      act = Activation::kNone;
    }
    LinearBackward(*backend_, linear(l), x, y, dz, act, linear_grads(l), dx, last && last_bias_grad_ready,
                   layer_replicas());
    dz = dx;
    next ^= 1;
  }
  if (has_conv()) {
    // The first layer: no input gradient, so no patches gradient either.
    const int64_t positions = static_cast<int64_t>(conv_.out_height()) * conv_.out_width();
    Activation act = Activation::kRelu;
    if (layer_norm_) {
      const NormGrads g = conv_norm_grads();
      backend_->LayerNormBackward(BatchView(dz.data(), n * positions, conv_.out_channels, device()),
                                  ConstBatchView(conv_xhat_, n * positions, conv_.out_channels, device()),
                                  VectorView<const float>(conv_rstd_, n * positions, device()),
                                  ConstBatchView(conv_out_, n * positions, conv_.out_channels, device()),
                                  conv_norm().gamma, g.gamma, g.beta, Activation::kRelu, replicas_, replica_stride_);
      act = Activation::kNone;
    }
    Conv2dBackward(*backend_, conv_, conv_params(),
                   ConstBatchView(patches_, n * positions, conv_.patch_size(), device()), conv_y, dz, act, conv_grads(),
                   BatchView(), BatchView(), layer_replicas());
  }
}

ConstBatchView Mlp::InputGrad() const {
  if (input_grad_ == nullptr) throw std::invalid_argument("Mlp::InputGrad on a network built without input_gradient");
  return ConstBatchView(input_grad_, train_rows_, sizes_.front(), device());
}

void Mlp::CopyParametersFrom(const Mlp& other) { PolyakFrom(other, 1.0f); }

void Mlp::PolyakFrom(const Mlp& other, float tau) {
  if (other.sizes_ != sizes_ || other.conv_ != conv_ || other.layer_norm_ != layer_norm_ ||
      other.replicas_ != replicas_ || other.activation_ != activation_)
    throw std::invalid_argument(
        "Mlp: copying parameters between networks of different layer sizes, activations or replicas");
  if (other.backend_ != backend_)
    throw std::invalid_argument("Mlp: copying parameters between networks on different back ends");
  backend_->Polyak(parameters(), other.parameters(), tau);
}

}  // namespace cugym::nn
