// The compute back end of cugym's nn: the handful of primitives layers, losses and Adam are made
// of, on one device. CPU: OpenBLAS + plain loops. CUDA: cuBLAS + fused kernels on one stream,
// no host synchronisation, capturable into a CUDA graph. No CUDA types here.
//
// The public methods check shapes and devices (std::invalid_argument naming the values), then
// queue the work. On CUDA they return before the work is done; Synchronize() waits, and
// core's Buffer::ToHost waits too (the stream synchronizes with the legacy default stream).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/device.h"
#include "core/macros.h"
#include "nn/tensor.h"

namespace cugym::nn {

// How a GEMM operand is used: as stored (kN) or transposed (kT), as in BLAS.
enum class Op { kN, kT };
// The activation after a Linear layer (or a LayerNorm): none, ReLU max(z, 0), or tanh (PPO's
// hidden layers, as CleanRL's ppo.py). Backward takes each from its output y: [y > 0] for ReLU,
// 1 - y^2 for tanh (PyTorch's tanh_backward), so no pre-activation is kept.
enum class Activation { kNone, kRelu, kTanh };
// Losses on a selected output, averaged over the batch. kHuber is PyTorch's smooth_l1_loss with
// beta = 1 (Huber with delta = 1): 0.5 d^2 for |d| < 1, |d| - 0.5 beyond.
enum class LossKind { kMse, kHuber };

/// LayerNorm's epsilon, added to the variance: PyTorch's nn.LayerNorm default (flax uses 1e-6).
constexpr float kLayerNormEps = 1e-5f;

/// The most groups (replicas of a network, MlpOptions::replicas) one grouped op takes on CUDA:
/// ActivationBackward gives each group a row of blocks, and a grid has at most 65,535 rows.
constexpr int64_t kMaxCudaGroups = 65535;

// Throws std::invalid_argument, naming `who` and the count, when the back end of `device` cannot
// run `groups` groups in one op (CUDA: more than kMaxCudaGroups). Networks check at construction,
// so that no such op fails later inside a CUDA graph's capture.
void CheckGroupCount(Device device, int64_t groups, const std::string& who);

/// A 2-D convolution layer's shape: stride 1, no padding ("valid"), images in NHWC layout (one
/// sample is [height][width][in_channels], channels fastest, as the envs' image observations),
/// weights in PyTorch's Conv2d layout [out_channels][in_channels][kernel][kernel]. out_channels 0
/// means no convolution (MlpOptions::conv's default).
struct ConvSpec {
  int height = 0;        ///< input rows (MinAtar: 10)
  int width = 0;         ///< input columns (MinAtar: 10)
  int in_channels = 0;   ///< input channels (MinAtar: 4 to 10, one per object kind)
  int out_channels = 0;  ///< filters; 0 = no convolution (MinAtar's reference network: 16)
  int kernel = 3;        ///< square kernel size (MinAtar: 3)

  bool enabled() const { return out_channels > 0; }
  int out_height() const { return height - kernel + 1; }
  int out_width() const { return width - kernel + 1; }
  int64_t in_features() const { return static_cast<int64_t>(height) * width * in_channels; }
  // The flattened output, [out_height][out_width][out_channels] (MinAtar: 8 x 8 x 16 = 1024).
  int64_t out_features() const { return static_cast<int64_t>(out_height()) * out_width() * out_channels; }
  // One patch, in the weight's order [in_channels][kernel][kernel] (the fan-in: MinAtar 4 x 9 = 36).
  int64_t patch_size() const { return static_cast<int64_t>(in_channels) * kernel * kernel; }
  bool operator==(const ConvSpec& o) const {
    return height == o.height && width == o.width && in_channels == o.in_channels && out_channels == o.out_channels &&
           kernel == o.kernel;
  }
  bool operator!=(const ConvSpec& o) const { return !(*this == o); }
};

// Throws std::invalid_argument ("WHERE: ...") unless `conv` is enabled, every size is >= 1 and the
// kernel fits the image.
void CheckConvSpec(const ConvSpec& conv, const std::string& where);

const char* LossName(LossKind loss);  // "mse", "huber"
// Parses "mse" or "huber"; throws std::invalid_argument naming the value.
LossKind ParseLoss(const std::string& name);

const char* ActivationName(Activation act);  // "none", "relu", "tanh"
// Parses a hidden layer's activation, "relu" or "tanh" (model files' cugym.activation); throws
// std::invalid_argument naming the value.
Activation ParseHiddenActivation(const std::string& name);

/// Adam with PyTorch's semantics (torch.optim.Adam, no weight decay, no amsgrad), plus PyTorch's
/// clip_grad_norm_ applied to the gradients first when max_grad_norm > 0; with `rectified`, RAdam
/// (Liu et al. 2020, torch.optim.RAdam's update: RadamRectification). Doubles, as PyTorch's
/// Python floats: 0.999f is not 0.999, and 1 - 0.999f would be off by 1.3e-5 relative.
struct AdamOptions {
  double lr = 1e-3;            ///< learning rate (CleanRL uses 2.5e-4 for Q-networks, SB3 1e-4)
  double beta1 = 0.9;          ///< first-moment decay
  double beta2 = 0.999;        ///< second-moment decay
  double eps = 1e-8;           ///< added to sqrt(v_hat), as PyTorch does (outside the square root)
  double max_grad_norm = 0.0;  ///< global L2 norm limit; 0 = no clipping (SB3 uses 10)
  /// > 0: the learning rate falls linearly to 0 over this many updates, lr * (1 - (t - 1) / decay)
  /// at update t (optax.linear_schedule, as PureJaxRL's LR_LINEAR_DECAY); it stays 0 after.
  /// Read from the device-side step count, so graph replays follow it.
  int64_t lr_decay_updates = 0;
  /// RAdam: the step is lr * r_t * m_hat * sqrt(1 - beta2^t) / (sqrt(v) + eps) once the variance of
  /// the adaptive rate is tractable (r_t > 0), and plain momentum, lr * m_hat, before (the first 5
  /// steps with beta2 0.999). PQN's optimizer (purejaxql uses optax.radam).
  bool rectified = false;
};

/// RAdam's variance rectification at update t (1-based), in double as PyTorch forms it: with
/// rho_inf = 2 / (1 - beta2) - 1 and rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t),
/// r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)) when rho_t > 5,
/// else 0 (the un-normalised momentum step).
CUGYM_HD inline double RadamRectification(double beta2, int64_t t) {
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  const double beta2_t = pow(beta2, static_cast<double>(t));
  const double rho_t = rho_inf - 2.0 * static_cast<double>(t) * beta2_t / (1.0 - beta2_t);
  if (!(rho_t > 5.0)) return 0.0;
  return sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
}

/// The learning rate of update t (1-based) under AdamOptions::lr_decay_updates.
CUGYM_HD inline double ScheduledLr(double lr, int64_t lr_decay_updates, int64_t t) {
  if (lr_decay_updates <= 0) return lr;
  const double left = 1.0 - static_cast<double>(t - 1) / static_cast<double>(lr_decay_updates);
  return left > 0.0 ? lr * left : 0.0;
}

/// Whether AdamStep clips: decided once, on the double, for both back ends (a tiny positive limit
/// rounds to 0 as a float, and then the two would disagree). Clipping to such a limit zeroes the
/// gradients, as PyTorch's clip_grad_norm_ does.
inline bool ClipsGradients(const AdamOptions& options) { return options.max_grad_norm > 0.0; }

/// The Huber loss's (delta 1) derivative: d clamped to [-1, 1]. NaN stays NaN on both back ends
/// (fminf/fmaxf would turn it into a bound and hide a diverged target).
CUGYM_HD inline float HuberGradient(float d) { return d < -1.0f ? -1.0f : (d > 1.0f ? 1.0f : d); }

// The optimizer's device-resident state for Backend::AdamStep, sized by the caller (see Adam).
struct AdamState {
  VectorView<float> exp_avg;     // first moment m, one per parameter
  VectorView<float> exp_avg_sq;  // second moment v, one per parameter
  VectorView<int64_t> step;      // [1]: updates taken so far; AdamStep increments it on the device
  VectorView<float> scratch;     // Backend::AdamScratchSize(n, groups) floats
  VectorView<float> grad_norm;   // [groups]: each group's gradient norm before clipping (written when clipping)
};

// A recorded sequence of backend calls. On CUDA a CUDA graph (one launch replays every kernel);
// on the CPU the recorded function, called again.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void Replay() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  Device device() const { return device_; }
  // One line for logs and benchmarks: "cpu (OpenBLAS 0.3.21 ..., 2 threads)", "cuda (NVIDIA H200, fp32)".
  virtual std::string Describe() const = 0;

  // c = alpha * op_a(a) * op_b(b) + beta * c, all column-major (BLAS's sgemm).
  void Gemm(Op op_a, ConstColMajorView a, Op op_b, ConstColMajorView b, float alpha, float beta, ColMajorView c);

  // `count` GEMMs at once (cuBLAS's strided batched GEMM): for r in [0, count), the views a, b and
  // c moved r * stride_a, r * stride_b and r * stride_c floats, c_r = alpha * op_a(a_r) * op_b(b_r) +
  // beta * c_r. The replicas of a network (Mlp's MlpOptions::replicas) run their layers this way.
  // The outputs must not overlap (stride_c >= c.size() when count > 1). On the CPU each product is
  // Gemm's on its operands, bit for bit; on CUDA one launch.
  void GemmBatched(int64_t count, Op op_a, ConstColMajorView a, int64_t stride_a, Op op_b, ConstColMajorView b,
                   int64_t stride_b, float alpha, float beta, ColMajorView c, int64_t stride_c);

  // y = act(y + bias) in place, bias broadcast over the rows of y [n x f].
  void BiasActivation(BatchView y, VectorView<const float> bias, Activation act) { BiasActivation(y, bias, act, 1, 0); }
  // The same on `groups` equal blocks of consecutive rows of y, block g with the bias moved
  // g * bias_stride floats (one bias per replica of a network, one pass for all).
  void BiasActivation(BatchView y, VectorView<const float> bias, Activation act, int64_t groups, int64_t bias_stride);

  // Backward of BiasActivation. dy [n x f] holds dL/dy on entry and dL/dz on return (z the
  // pre-activation: dy * [y > 0] for ReLU, dy * (1 - y^2) for tanh, unchanged for kNone); y is
  // BiasActivation's output (unused for kNone).
  // dbias [f] = sum over rows of dL/dz (overwritten).
  void ActivationBackward(BatchView dy, ConstBatchView y, VectorView<float> dbias, Activation act) {
    ActivationBackward(dy, y, dbias, act, 1, 0);
  }
  // The same on `groups` equal blocks of consecutive rows, block g's sums into dbias moved
  // g * dbias_stride floats: each block's are the bits a call on that block alone gives.
  void ActivationBackward(BatchView dy, ConstBatchView y, VectorView<float> dbias, Activation act, int64_t groups,
                          int64_t dbias_stride);

  // Layer normalization of each row of x [n x f] (PyTorch's nn.LayerNorm over the last axis,
  // biased variance, kLayerNormEps, learned scale and shift), then `act`: x is replaced by
  // xhat = (x - mean) * rstd, kept for the backward, rstd [n] = 1 / sqrt(var + eps), and
  // y [n x f] = act(gamma * xhat + beta). Each row is one thread's loop, in the same order on both
  // back ends.
  // Grouped (K replicas of a network): the rows in `groups` equal blocks, block g normalized with
  // gamma and beta moved g * param_stride floats; each block's outputs are a call on it alone's.
  void LayerNorm(BatchView x, VectorView<const float> gamma, VectorView<const float> beta, VectorView<float> rstd,
                 BatchView y, Activation act, int64_t groups = 1, int64_t param_stride = 0);
  // Backward of LayerNorm: dy [n x f] holds dL/dy on entry and dL/dx on return; xhat, rstd and y
  // are the forward's (y gives the activation's derivative, as in ActivationBackward). dgamma and
  // dbeta [f] are overwritten with the column sums of dh * xhat and dh, where
  // dh = dL/d(gamma * xhat + beta). Grouped: block g's sums (over its rows only) into dgamma and
  // dbeta moved g * param_stride floats, the bits a call on that block alone gives.
  void LayerNormBackward(BatchView dy, ConstBatchView xhat, VectorView<const float> rstd, ConstBatchView y,
                         VectorView<const float> gamma, VectorView<float> dgamma, VectorView<float> dbeta,
                         Activation act, int64_t groups = 1, int64_t param_stride = 0);

  // Regression of selected outputs: d_b = q[b, actions[b]] - targets[b] for the n rows of q
  // [n x k]; loss = mean_b L(d_b). Writes stats[0] = loss, stats[1] = mean_b q[b, actions[b]];
  // dq [n x k] = dloss/dq (zero except at the selected entries); dbias [k] (optional, may be
  // empty) = column sums of dq, the last Linear layer's bias gradient, fused here to save a pass.
  // `actions` may be empty when k == 1 (plain regression). An action outside [0, k) is a
  // std::invalid_argument on the CPU; on CUDA (no host reads) it makes the loss NaN and its row's
  // gradient zero.
  // Optional, may be empty: `weights` [n] weigh each row's term, loss = mean_b w_b L(d_b) (importance
  // weights of prioritized replay); `errors` [n] receives d_b itself.
  // Grouped (K replicas of a network, one pass for all): the rows in `groups` equal blocks, each
  // its own regression: group g's loss and mean into stats[2 g], stats[2 g + 1] (stats has 2 K
  // elements), its bias gradient into dbias moved g * dbias_stride floats; each group's results are
  // the bits a call on its rows alone gives.
  void GatherLoss(LossKind loss, ConstBatchView q, VectorView<const int32_t> actions, VectorView<const float> targets,
                  BatchView dq, VectorView<float> dbias, VectorView<float> stats, VectorView<const float> weights = {},
                  VectorView<float> errors = {}, int64_t groups = 1, int64_t dbias_stride = 0);

  // out[b] = q[b, actions[b]] (NaN on CUDA for an action out of range).
  void Gather(ConstBatchView q, VectorView<const int32_t> actions, VectorView<float> out);

  // Row-wise max and argmax of q [n x k]; either output may be empty. Ties go to the lowest
  // index, as torch.argmax.
  void RowMax(ConstBatchView q, VectorView<float> max, VectorView<int32_t> argmax);

  // One Adam update of params from grads (grads are read, not modified: clipping scales them on
  // the fly). Increments state.step on the device, so a captured graph keeps counting.
  // Grouped (K replicas of a network, their parameters in `groups` equal blocks): each block
  // clipped by its own norm, into grad_norm[g], the bits a step of that block alone gives on the
  // CPU; one step count for all.
  void AdamStep(const AdamOptions& options, VectorView<float> params, VectorView<const float> grads,
                const AdamState& state, int64_t groups = 1);
  // Floats of scratch AdamStep needs for n parameters in `groups` blocks.
  virtual int64_t AdamScratchSize(int64_t num_params, int64_t groups = 1) const = 0;

  // target = tau * source + (1 - tau) * target; tau == 1 copies exactly (hard update).
  void Polyak(VectorView<float> target, VectorView<const float> source, float tau);

  // The dueling aggregation (Wang et al. 2016) of a head of k + 1 outputs, x [n x (k + 1)]: a
  // value column then k advantages, into y [n x k] with y[r, j] = x[r, 0] + x[r, 1 + j] -
  // mean_i x[r, 1 + i] (the mean keeps value and advantages identifiable).
  void ValueAdvantage(ConstBatchView x, BatchView y);
  // Its backward: dx [n x (k + 1)] from dy [n x k] (overwritten): dx[r, 0] = sum_j dy[r, j],
  // dx[r, 1 + j] = dy[r, j] - mean_i dy[r, i].
  void ValueAdvantageBackward(ConstBatchView dy, BatchView dx);

  // im2col of a ConvSpec convolution: from images x [n x H*W*C] (NHWC), patches [n*Ho*Wo x C*k*k]
  // with row (b, oy, ox) and column (c * k + i) * k + j = x[b, oy + i, ox + j, c] (PyTorch's weight
  // order). A convolution is then a GEMM with the weight as a [out x C*k*k] matrix, whose output
  // [n*Ho*Wo x out] is NHWC again (nn/layers.h).
  void Im2Col(ConstBatchView x, const ConvSpec& conv, BatchView patches);
  // The adjoint of Im2Col, for the input gradient: dx [n x H*W*C] (overwritten) = for each element,
  // the sum of the dpatches entries Im2Col copied it to (in the same order on both back ends).
  void Col2Im(ConstBatchView dpatches, const ConvSpec& conv, BatchView dx);

  // Waits for all queued work.
  virtual void Synchronize() = 0;

  // Records the backend calls `work` makes (it must make no others on this device, allocate
  // nothing and not read results on the host) into a Graph whose Replay() runs them again on
  // the same buffers. Everything `work` refers to must outlive the Graph.
  virtual std::unique_ptr<Graph> Capture(const std::function<void()>& work) = 0;

  // The CUDA stream all work is queued on (a cudaStream_t), so callers can queue their own
  // kernels in order with it and inside a Capture; nullptr on the CPU.
  virtual void* native_stream() const { return nullptr; }

 protected:
  explicit Backend(Device device) : device_(device) {}

 private:
  virtual void DoGemm(Op op_a, ConstColMajorView a, Op op_b, ConstColMajorView b, float alpha, float beta,
                      ColMajorView c) = 0;
  // The CPU's: one Gemm after the other.
  virtual void DoGemmBatched(int64_t count, Op op_a, ConstColMajorView a, int64_t stride_a, Op op_b,
                             ConstColMajorView b, int64_t stride_b, float alpha, float beta, ColMajorView c,
                             int64_t stride_c);
  // y [groups * rows x f], bias [f] (group g's at g * bias_stride); likewise dbias.
  virtual void DoBiasActivation(BatchView y, VectorView<const float> bias, Activation act, int64_t groups,
                                int64_t bias_stride) = 0;
  virtual void DoActivationBackward(BatchView dy, ConstBatchView y, VectorView<float> dbias, Activation act,
                                    int64_t groups, int64_t dbias_stride) = 0;
  // Grouped as LayerNorm: `groups` blocks of rows, block g's parameters (and their gradients) at
  // g * param_stride (0 when groups is 1).
  virtual void DoLayerNorm(BatchView x, VectorView<const float> gamma, VectorView<const float> beta,
                           VectorView<float> rstd, BatchView y, Activation act, int64_t groups,
                           int64_t param_stride) = 0;
  virtual void DoLayerNormBackward(BatchView dy, ConstBatchView xhat, VectorView<const float> rstd, ConstBatchView y,
                                   VectorView<const float> gamma, VectorView<float> dgamma, VectorView<float> dbeta,
                                   Activation act, int64_t groups, int64_t param_stride) = 0;
  virtual void DoGatherLoss(LossKind loss, ConstBatchView q, VectorView<const int32_t> actions,
                            VectorView<const float> targets, BatchView dq, VectorView<float> dbias,
                            VectorView<float> stats, VectorView<const float> weights, VectorView<float> errors,
                            int64_t groups, int64_t dbias_stride) = 0;
  virtual void DoGather(ConstBatchView q, VectorView<const int32_t> actions, VectorView<float> out) = 0;
  virtual void DoRowMax(ConstBatchView q, VectorView<float> max, VectorView<int32_t> argmax) = 0;
  virtual void DoAdamStep(const AdamOptions& options, VectorView<float> params, VectorView<const float> grads,
                          const AdamState& state, int64_t groups) = 0;
  virtual void DoPolyak(VectorView<float> target, VectorView<const float> source, float tau) = 0;
  virtual void DoValueAdvantage(ConstBatchView x, BatchView y) = 0;
  virtual void DoValueAdvantageBackward(ConstBatchView dy, BatchView dx) = 0;
  virtual void DoIm2Col(ConstBatchView x, const ConvSpec& conv, BatchView patches) = 0;
  virtual void DoCol2Im(ConstBatchView dpatches, const ConvSpec& conv, BatchView dx) = 0;

  Device device_;
};

// The back end for `device`. Throws std::invalid_argument for CUDA without a usable GPU or
// without a CUDA build (the reason in the message). GEMMs run in full fp32 on both (no TF32 on
// CUDA), like PyTorch's default for matmuls.
std::shared_ptr<Backend> MakeBackend(Device device);

}  // namespace cugym::nn
