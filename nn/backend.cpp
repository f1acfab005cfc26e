// Argument checks shared by both back ends, and the factory.
#include "nn/backend.h"

#include <stdexcept>
#include <string>

#include "nn/backend_impl.h"

namespace cugym::nn {
namespace {

std::string Dims(int64_t rows, int64_t cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

[[noreturn]] void Bad(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

template <class View>
void CheckDevice(const char* op, const char* name, const View& view, Device device) {
  if (view.size() > 0 && view.device() != device) {
    Bad(op, std::string(name) + " is on " + DeviceName(view.device()) + ", the back end on " + DeviceName(device));
  }
  if (view.size() > 0 && view.data() == nullptr) Bad(op, std::string(name) + " has no data");
}

template <class View>
void CheckSize(const char* op, const char* name, const View& view, int64_t size) {
  if (view.size() != size) {
    Bad(op, std::string(name) + " has " + std::to_string(view.size()) + " elements, expected " + std::to_string(size));
  }
}

}  // namespace

const char* LossName(LossKind loss) { return loss == LossKind::kMse ? "mse" : "huber"; }

LossKind ParseLoss(const std::string& name) {
  if (name == "mse") return LossKind::kMse;
  if (name == "huber" || name == "smooth_l1") return LossKind::kHuber;
  throw std::invalid_argument("unknown loss '" + name + "' (expected mse or huber)");
}

const char* ActivationName(Activation act) {
  return act == Activation::kRelu ? "relu" : act == Activation::kTanh ? "tanh" : "none";
}

Activation ParseHiddenActivation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "tanh") return Activation::kTanh;
  throw std::invalid_argument("unknown activation '" + name + "' (expected relu or tanh)");
}

namespace {

// Gemm's and GemmBatched's checks; false when there is nothing to compute (an empty c).
bool CheckGemm(const char* op, Op op_a, ConstColMajorView a, Op op_b, ConstColMajorView b, ColMajorView c,
               Device device) {
  const int64_t m = op_a == Op::kN ? a.rows() : a.cols();
  const int64_t k = op_a == Op::kN ? a.cols() : a.rows();
  const int64_t kb = op_b == Op::kN ? b.rows() : b.cols();
  const int64_t n = op_b == Op::kN ? b.cols() : b.rows();
  if (k != kb || c.rows() != m || c.cols() != n) {
    Bad(op, "op(a) is " + Dims(m, k) + ", op(b) " + Dims(kb, n) + ", c " + Dims(c.rows(), c.cols()));
  }
  CheckDevice(op, "a", a, device);
  CheckDevice(op, "b", b, device);
  CheckDevice(op, "c", c, device);
  return m > 0 && n > 0;
}

}  // namespace

void CheckGroupCount(Device device, int64_t groups, const std::string& who) {
  if (device == Device::kCuda && groups > kMaxCudaGroups) {
    throw std::invalid_argument(who + ": " + std::to_string(groups) + " replicas, but CUDA runs at most " +
                                std::to_string(kMaxCudaGroups) + " in one op (a grid's rows); split them into batches");
  }
}

void Backend::Gemm(Op op_a, ConstColMajorView a, Op op_b, ConstColMajorView b, float alpha, float beta,
                   ColMajorView c) {
  if (CheckGemm("Gemm", op_a, a, op_b, b, c, device_)) DoGemm(op_a, a, op_b, b, alpha, beta, c);
}

void Backend::GemmBatched(int64_t count, Op op_a, ConstColMajorView a, int64_t stride_a, Op op_b, ConstColMajorView b,
                          int64_t stride_b, float alpha, float beta, ColMajorView c, int64_t stride_c) {
  if (count < 1) Bad("GemmBatched", "count " + std::to_string(count) + " (expected >= 1)");
  if (stride_a < 0 || stride_b < 0 || stride_c < 0) {
    Bad("GemmBatched", "strides " + std::to_string(stride_a) + ", " + std::to_string(stride_b) + ", " +
                           std::to_string(stride_c) + " (expected >= 0)");
  }
  if (count > 1 && stride_c < c.size()) {
    Bad("GemmBatched",
        "the outputs overlap: c is " + Dims(c.rows(), c.cols()) + ", its stride " + std::to_string(stride_c));
  }
  if (count == 1) return Gemm(op_a, a, op_b, b, alpha, beta, c);
  if (CheckGemm("GemmBatched", op_a, a, op_b, b, c, device_)) {
    DoGemmBatched(count, op_a, a, stride_a, op_b, b, stride_b, alpha, beta, c, stride_c);
  }
}

void Backend::DoGemmBatched(int64_t count, Op op_a, ConstColMajorView a, int64_t stride_a, Op op_b, ConstColMajorView b,
                            int64_t stride_b, float alpha, float beta, ColMajorView c, int64_t stride_c) {
  for (int64_t r = 0; r < count; ++r) {
    DoGemm(op_a, ConstColMajorView(a.data() + r * stride_a, a.rows(), a.cols(), a.device()), op_b,
           ConstColMajorView(b.data() + r * stride_b, b.rows(), b.cols(), b.device()), alpha, beta,
           ColMajorView(c.data() + r * stride_c, c.rows(), c.cols(), c.device()));
  }
}

namespace {

// Groups of rows for the grouped bias passes: >= 1, dividing the rows; a stride that keeps the
// groups' vectors apart.
void CheckGroups(const char* op, int64_t rows, int64_t groups, int64_t stride, int64_t f, bool output) {
  if (groups < 1 || rows % groups != 0) {
    Bad(op, std::to_string(rows) + " rows in " + std::to_string(groups) + " groups (expected >= 1 equal groups)");
  }
  if (groups > 1 && (stride < 0 || (output && stride < f))) {
    Bad(op, "bias stride " + std::to_string(stride) + " for " + std::to_string(f) + " features");
  }
}

}  // namespace

void Backend::BiasActivation(BatchView y, VectorView<const float> bias, Activation act, int64_t groups,
                             int64_t bias_stride) {
  CheckSize("BiasActivation", "bias", bias, y.cols());
  CheckGroups("BiasActivation", y.rows(), groups, bias_stride, y.cols(), false);
  CheckDevice("BiasActivation", "y", y, device_);
  CheckDevice("BiasActivation", "bias", bias, device_);
  if (y.size() == 0) return;
  DoBiasActivation(y, bias, act, groups, groups > 1 ? bias_stride : 0);
}

void Backend::ActivationBackward(BatchView dy, ConstBatchView y, VectorView<float> dbias, Activation act,
                                 int64_t groups, int64_t dbias_stride) {
  if (act != Activation::kNone && (y.rows() != dy.rows() || y.cols() != dy.cols())) {
    Bad("ActivationBackward", "dy is " + Dims(dy.rows(), dy.cols()) + ", y " + Dims(y.rows(), y.cols()));
  }
  CheckSize("ActivationBackward", "dbias", dbias, dy.cols());
  CheckGroups("ActivationBackward", dy.rows(), groups, dbias_stride, dy.cols(), true);
  CheckDevice("ActivationBackward", "dy", dy, device_);
  CheckDevice("ActivationBackward", "y", y, device_);
  CheckDevice("ActivationBackward", "dbias", dbias, device_);
  if (dbias.size() == 0) return;
  DoActivationBackward(dy, y, dbias, act, groups, groups > 1 ? dbias_stride : 0);
}

void Backend::LayerNorm(BatchView x, VectorView<const float> gamma, VectorView<const float> beta,
                        VectorView<float> rstd, BatchView y, Activation act, int64_t groups, int64_t param_stride) {
  const char* op = "LayerNorm";
  if (y.rows() != x.rows() || y.cols() != x.cols())
    Bad(op, "x is " + Dims(x.rows(), x.cols()) + ", y " + Dims(y.rows(), y.cols()));
  CheckGroups(op, x.rows(), groups, param_stride, x.cols(), false);
  CheckSize(op, "gamma", gamma, x.cols());
  CheckSize(op, "beta", beta, x.cols());
  CheckSize(op, "rstd", rstd, x.rows());
  CheckDevice(op, "x", x, device_);
  CheckDevice(op, "gamma", gamma, device_);
  CheckDevice(op, "beta", beta, device_);
  CheckDevice(op, "rstd", rstd, device_);
  CheckDevice(op, "y", y, device_);
  if (x.size() == 0) return;
  DoLayerNorm(x, gamma, beta, rstd, y, act, groups, groups > 1 ? param_stride : 0);
}

void Backend::LayerNormBackward(BatchView dy, ConstBatchView xhat, VectorView<const float> rstd, ConstBatchView y,
                                VectorView<const float> gamma, VectorView<float> dgamma, VectorView<float> dbeta,
                                Activation act, int64_t groups, int64_t param_stride) {
  const char* op = "LayerNormBackward";
  CheckGroups(op, dy.rows(), groups, param_stride, dy.cols(), true);
  if (xhat.rows() != dy.rows() || xhat.cols() != dy.cols())
    Bad(op, "dy is " + Dims(dy.rows(), dy.cols()) + ", xhat " + Dims(xhat.rows(), xhat.cols()));
  if (act != Activation::kNone && (y.rows() != dy.rows() || y.cols() != dy.cols()))
    Bad(op, "dy is " + Dims(dy.rows(), dy.cols()) + ", y " + Dims(y.rows(), y.cols()));
  CheckSize(op, "rstd", rstd, dy.rows());
  CheckSize(op, "gamma", gamma, dy.cols());
  CheckSize(op, "dgamma", dgamma, dy.cols());
  CheckSize(op, "dbeta", dbeta, dy.cols());
  CheckDevice(op, "dy", dy, device_);
  CheckDevice(op, "xhat", xhat, device_);
  CheckDevice(op, "rstd", rstd, device_);
  CheckDevice(op, "y", y, device_);
  CheckDevice(op, "gamma", gamma, device_);
  CheckDevice(op, "dgamma", dgamma, device_);
  CheckDevice(op, "dbeta", dbeta, device_);
  if (dy.cols() == 0) return;
  DoLayerNormBackward(dy, xhat, rstd, y, gamma, dgamma, dbeta, act, groups, groups > 1 ? param_stride : 0);
}

void Backend::GatherLoss(LossKind loss, ConstBatchView q, VectorView<const int32_t> actions,
                         VectorView<const float> targets, BatchView dq, VectorView<float> dbias,
                         VectorView<float> stats, VectorView<const float> weights, VectorView<float> errors,
                         int64_t groups, int64_t dbias_stride) {
  const char* op = "GatherLoss";
  if (q.rows() == 0 || q.cols() == 0) Bad(op, "q is " + Dims(q.rows(), q.cols()) + ": no rows to average over");
  if (actions.empty() && q.cols() != 1) Bad(op, "no actions given for q with " + std::to_string(q.cols()) + " columns");
  if (!actions.empty()) CheckSize(op, "actions", actions, q.rows());
  CheckSize(op, "targets", targets, q.rows());
  if (dq.rows() != q.rows() || dq.cols() != q.cols())
    Bad(op, "dq is " + Dims(dq.rows(), dq.cols()) + ", q " + Dims(q.rows(), q.cols()));
  if (!dbias.empty()) CheckSize(op, "dbias", dbias, q.cols());
  CheckGroups(op, q.rows(), groups, dbias_stride, q.cols(), !dbias.empty());
  if (stats.size() < 2 * groups) {
    Bad(op, "stats has " + std::to_string(stats.size()) + " elements, needs " + std::to_string(2 * groups));
  }
  CheckDevice(op, "q", q, device_);
  CheckDevice(op, "actions", actions, device_);
  CheckDevice(op, "targets", targets, device_);
  CheckDevice(op, "dq", dq, device_);
  CheckDevice(op, "dbias", dbias, device_);
  if (!weights.empty()) CheckSize(op, "weights", weights, q.rows());
  if (!errors.empty()) CheckSize(op, "errors", errors, q.rows());
  CheckDevice(op, "stats", stats, device_);
  CheckDevice(op, "weights", weights, device_);
  CheckDevice(op, "errors", errors, device_);
  DoGatherLoss(loss, q, actions, targets, dq, dbias, stats, weights, errors, groups, groups > 1 ? dbias_stride : 0);
}

void Backend::Gather(ConstBatchView q, VectorView<const int32_t> actions, VectorView<float> out) {
  CheckSize("Gather", "actions", actions, q.rows());
  CheckSize("Gather", "out", out, q.rows());
  if (q.rows() > 0 && q.cols() == 0) Bad("Gather", "q has no columns");
  CheckDevice("Gather", "q", q, device_);
  CheckDevice("Gather", "actions", actions, device_);
  CheckDevice("Gather", "out", out, device_);
  if (q.rows() == 0) return;
  DoGather(q, actions, out);
}

void Backend::RowMax(ConstBatchView q, VectorView<float> max, VectorView<int32_t> argmax) {
  if (!max.empty()) CheckSize("RowMax", "max", max, q.rows());
  if (!argmax.empty()) CheckSize("RowMax", "argmax", argmax, q.rows());
  if (q.rows() > 0 && q.cols() == 0) Bad("RowMax", "q has no columns");
  CheckDevice("RowMax", "q", q, device_);
  CheckDevice("RowMax", "max", max, device_);
  CheckDevice("RowMax", "argmax", argmax, device_);
  if (q.rows() == 0 || (max.empty() && argmax.empty())) return;
  DoRowMax(q, max, argmax);
}

void Backend::AdamStep(const AdamOptions& options, VectorView<float> params, VectorView<const float> grads,
                       const AdamState& state, int64_t groups) {
  const char* op = "AdamStep";
  if (!(options.lr >= 0.0)) Bad(op, "lr " + std::to_string(options.lr) + " (expected >= 0)");
  if (options.lr_decay_updates < 0)
    Bad(op, "lr_decay_updates " + std::to_string(options.lr_decay_updates) + " (expected >= 0)");
  if (!(options.beta1 >= 0.0 && options.beta1 < 1.0))
    Bad(op, "beta1 " + std::to_string(options.beta1) + " (expected in [0, 1))");
  if (!(options.beta2 >= 0.0 && options.beta2 < 1.0))
    Bad(op, "beta2 " + std::to_string(options.beta2) + " (expected in [0, 1))");
  if (!(options.eps > 0.0)) Bad(op, "eps " + std::to_string(options.eps) + " (expected > 0)");
  if (!(options.max_grad_norm >= 0.0))
    Bad(op, "max_grad_norm " + std::to_string(options.max_grad_norm) + " (expected >= 0; 0 = off)");
  const int64_t n = params.size();
  CheckSize(op, "grads", grads, n);
  CheckSize(op, "exp_avg", state.exp_avg, n);
  CheckSize(op, "exp_avg_sq", state.exp_avg_sq, n);
  CheckSize(op, "step", state.step, 1);
  if (groups < 1 || n % groups != 0)
    Bad(op, std::to_string(n) + " parameters in " + std::to_string(groups) + " groups (expected >= 1 equal groups)");
  CheckSize(op, "grad_norm", state.grad_norm, groups);
  if (state.scratch.size() < AdamScratchSize(n, groups)) {
    Bad(op, "scratch has " + std::to_string(state.scratch.size()) + " floats, needs " +
                std::to_string(AdamScratchSize(n, groups)));
  }
  CheckDevice(op, "params", params, device_);
  CheckDevice(op, "grads", grads, device_);
  CheckDevice(op, "exp_avg", state.exp_avg, device_);
  CheckDevice(op, "exp_avg_sq", state.exp_avg_sq, device_);
  CheckDevice(op, "step", state.step, device_);
  CheckDevice(op, "scratch", state.scratch, device_);
  CheckDevice(op, "grad_norm", state.grad_norm, device_);
  DoAdamStep(options, params, grads, state, groups);
}

void Backend::Polyak(VectorView<float> target, VectorView<const float> source, float tau) {
  if (!(tau >= 0.0f && tau <= 1.0f)) Bad("Polyak", "tau " + std::to_string(tau) + " (expected in [0, 1])");
  CheckSize("Polyak", "source", source, target.size());
  CheckDevice("Polyak", "target", target, device_);
  CheckDevice("Polyak", "source", source, device_);
  if (target.size() == 0 || tau == 0.0f) return;
  DoPolyak(target, source, tau);
}

void Backend::ValueAdvantage(ConstBatchView x, BatchView y) {
  if (x.cols() < 2 || y.cols() != x.cols() - 1 || y.rows() != x.rows())
    Bad("ValueAdvantage", "x is " + Dims(x.rows(), x.cols()) + ", y " + Dims(y.rows(), y.cols()) +
                              " (expected n x (k + 1) and n x k, k >= 1)");
  CheckDevice("ValueAdvantage", "x", x, device_);
  CheckDevice("ValueAdvantage", "y", y, device_);
  if (x.rows() == 0) return;
  DoValueAdvantage(x, y);
}

void Backend::ValueAdvantageBackward(ConstBatchView dy, BatchView dx) {
  if (dy.cols() < 1 || dx.cols() != dy.cols() + 1 || dx.rows() != dy.rows())
    Bad("ValueAdvantageBackward", "dy is " + Dims(dy.rows(), dy.cols()) + ", dx " + Dims(dx.rows(), dx.cols()) +
                                      " (expected n x k and n x (k + 1), k >= 1)");
  CheckDevice("ValueAdvantageBackward", "dy", dy, device_);
  CheckDevice("ValueAdvantageBackward", "dx", dx, device_);
  if (dy.rows() == 0) return;
  DoValueAdvantageBackward(dy, dx);
}

void CheckConvSpec(const ConvSpec& conv, const std::string& where) {
  if (conv.height < 1 || conv.width < 1 || conv.in_channels < 1 || conv.out_channels < 1 || conv.kernel < 1 ||
      conv.kernel > conv.height || conv.kernel > conv.width) {
    throw std::invalid_argument(where + ": convolution of " + std::to_string(conv.kernel) + " x " +
                                std::to_string(conv.kernel) + " on " + std::to_string(conv.height) + " x " +
                                std::to_string(conv.width) + " x " + std::to_string(conv.in_channels) + " images to " +
                                std::to_string(conv.out_channels) +
                                " channels (expected sizes >= 1 and a kernel no larger than the image)");
  }
}

namespace {

// The shapes Im2Col and Col2Im take: images [n x H*W*C], patches [n*Ho*Wo x C*k*k].
void CheckConvViews(const char* op, const ConvSpec& conv, int64_t image_rows, int64_t image_cols, int64_t patch_rows,
                    int64_t patch_cols) {
  CheckConvSpec(conv, op);
  const int64_t positions = static_cast<int64_t>(conv.out_height()) * conv.out_width();
  if (image_cols != conv.in_features() || patch_rows != image_rows * positions || patch_cols != conv.patch_size()) {
    Bad(op, "images " + Dims(image_rows, image_cols) + ", patches " + Dims(patch_rows, patch_cols) + " (expected n x " +
                std::to_string(conv.in_features()) + " and " + std::to_string(positions) + "n x " +
                std::to_string(conv.patch_size()) + ")");
  }
}

}  // namespace

void Backend::Im2Col(ConstBatchView x, const ConvSpec& conv, BatchView patches) {
  CheckConvViews("Im2Col", conv, x.rows(), x.cols(), patches.rows(), patches.cols());
  CheckDevice("Im2Col", "x", x, device_);
  CheckDevice("Im2Col", "patches", patches, device_);
  if (x.rows() == 0) return;
  DoIm2Col(x, conv, patches);
}

void Backend::Col2Im(ConstBatchView dpatches, const ConvSpec& conv, BatchView dx) {
  CheckConvViews("Col2Im", conv, dx.rows(), dx.cols(), dpatches.rows(), dpatches.cols());
  CheckDevice("Col2Im", "dpatches", dpatches, device_);
  CheckDevice("Col2Im", "dx", dx, device_);
  if (dx.rows() == 0) return;
  DoCol2Im(dpatches, conv, dx);
}

std::shared_ptr<Backend> MakeBackend(Device device) {
  if (device == Device::kCpu) return internal::MakeCpuBackend();
  std::string reason = CudaUnavailableReason();
  if (!reason.empty()) throw std::invalid_argument("nn back end for cuda: " + reason);
#ifdef CUGYM_HAVE_CUDA
  return internal::MakeCudaBackend();
#else
  throw std::invalid_argument("nn back end for cuda: this cugym was built without CUDA");
#endif
}

}  // namespace cugym::nn
