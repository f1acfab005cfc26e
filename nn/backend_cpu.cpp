// CPU back end: plain loops the compiler vectorizes (AVX2/AVX-512 with -march=native), and for the
// GEMMs, the cost at these sizes, SmallGemm (nn/small_gemm.h) below kSmallGemm multiply-adds (every
// layer of the shipped networks: a 256 x 256 layer at batch 128 is half of it) and OpenBLAS sgemm
// with its own threads above. SmallGemm's products are the same bits on every CPU with FMA and on
// any core count, where OpenBLAS's depend on the kernel it picks for the CPU model and on its
// thread count; on one core it is as fast as OpenBLAS's best kernels on these shapes (docs/nn.md).
// Builds without FMA use OpenBLAS throughout, GEMMs below kThreadedGemm on one thread (the same
// bits on any number of cores).
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/backend.h"
#include "nn/backend_impl.h"
#include "nn/small_gemm.h"

// OpenBLAS extensions (declared here too: Debian's cblas.h may be the netlib one).
extern "C" {
char* openblas_get_config(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int num_threads);
}

namespace cugym::nn {
namespace {

constexpr int64_t kSmallGemm = int64_t{1} << 24;
constexpr int64_t kThreadedGemm = int64_t{1} << 22;  // builds without SmallGemm

// OpenBLAS's thread count is global to the process; this is the count it started with (its
// default, or OPENBLAS_NUM_THREADS), read before the first GEMM changes it.
int BlasMaxThreads() {
  static const int max_threads = openblas_get_num_threads();
  return max_threads;
}

// One thread for a GEMM of fewer than kThreadedGemm multiply-adds, all of them otherwise; set
// only when it changes (a DQN's GEMMs are all small: set once).
void UseBlasThreadsFor(int64_t multiply_adds) {
  const int want = multiply_adds < kThreadedGemm ? 1 : BlasMaxThreads();
  if (openblas_get_num_threads() != want) openblas_set_num_threads(want);
}

int BlasInt(int64_t v) {
  if (v > INT_MAX) throw std::invalid_argument("matrix dimension " + std::to_string(v) + " too large for BLAS");
  return static_cast<int>(std::max<int64_t>(v, 1));
}

class CpuGraph final : public Graph {
 public:
  explicit CpuGraph(std::function<void()> work) : work_(std::move(work)) {}
  void Replay() override { work_(); }

 private:
  std::function<void()> work_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() : Backend(Device::kCpu) {}

  std::string Describe() const override {
    std::string config = openblas_get_config();
    return "cpu (" + config + ", " + std::to_string(BlasMaxThreads()) + " BLAS threads)";
  }
  int64_t AdamScratchSize(int64_t, int64_t) const override { return 0; }
  void Synchronize() override {}
  std::unique_ptr<Graph> Capture(const std::function<void()>& work) override {
    return std::make_unique<CpuGraph>(work);
  }

 private:
  void DoGemm(Op op_a, ConstColMajorView a, Op op_b, ConstColMajorView b, float alpha, float beta,
              ColMajorView c) override {
    const int64_t k = op_a == Op::kN ? a.cols() : a.rows();
    const int64_t multiply_adds = c.rows() * c.cols() * k;
    if (internal::kHaveSmallGemm && multiply_adds < kSmallGemm) {
      internal::SmallGemm(op_a == Op::kT, op_b == Op::kT, c.rows(), c.cols(), k, alpha, a.data(), b.data(), beta,
                          c.data(), gemm_pack_);
      return;
    }
    UseBlasThreadsFor(multiply_adds);
    cblas_sgemm(CblasColMajor, op_a == Op::kN ? CblasNoTrans : CblasTrans, op_b == Op::kN ? CblasNoTrans : CblasTrans,
                BlasInt(c.rows()), BlasInt(c.cols()), static_cast<int>(k), alpha, a.data(), BlasInt(a.ld()), b.data(),
                BlasInt(b.ld()), beta, c.data(), BlasInt(c.ld()));
  }

  void DoBiasActivation(BatchView y, VectorView<const float> bias, Activation act, int64_t groups,
                        int64_t bias_stride) override {
    const int64_t f = y.cols(), rows = y.rows() / groups;
    for (int64_t r = 0; r < y.rows(); ++r) {
      const float* b = bias.data() + (r / rows) * bias_stride;
      float* row = y.data() + r * f;
      if (act == Activation::kRelu) {
        for (int64_t j = 0; j < f; ++j) row[j] = std::max(row[j] + b[j], 0.0f);
      } else if (act == Activation::kTanh) {
        // A tanhf call per element (glibc's vector forms need -ffast-math): PPO's layers are small.
        for (int64_t j = 0; j < f; ++j) row[j] = std::tanh(row[j] + b[j]);
      } else {
        for (int64_t j = 0; j < f; ++j) row[j] += b[j];
      }
    }
  }

  void DoActivationBackward(BatchView dy, ConstBatchView y, VectorView<float> dbias, Activation act, int64_t groups,
                            int64_t dbias_stride) override {
    const int64_t f = dy.cols(), rows = dy.rows() / groups;
    for (int64_t group = 0; group < groups; ++group) {
      std::fill_n(dbias.data() + group * dbias_stride, f, 0.0f);
    }
    for (int64_t r = 0; r < dy.rows(); ++r) {
      float* db = dbias.data() + (r / rows) * dbias_stride;
      float* g = dy.data() + r * f;
      if (act == Activation::kRelu) {
        const float* out = y.data() + r * f;
        for (int64_t j = 0; j < f; ++j) {
          g[j] = out[j] > 0.0f ? g[j] : 0.0f;
          db[j] += g[j];
        }
      } else if (act == Activation::kTanh) {
        const float* out = y.data() + r * f;
        for (int64_t j = 0; j < f; ++j) {
          g[j] = internal::TanhGrad(g[j], out[j]);
          db[j] += g[j];
        }
      } else {
        for (int64_t j = 0; j < f; ++j) db[j] += g[j];
      }
    }
  }

  void DoLayerNorm(BatchView x, VectorView<const float> gamma, VectorView<const float> beta, VectorView<float> rstd,
                   BatchView y, Activation act, int64_t groups, int64_t param_stride) override {
    const int64_t f = x.cols(), rows = x.rows() / groups;
    for (int64_t r = 0; r < x.rows(); ++r) {
      const int64_t shift = r / rows * param_stride;
      rstd.data()[r] =
          internal::LayerNormRow(x.data() + r * f, gamma.data() + shift, beta.data() + shift, y.data() + r * f, f, act);
    }
  }

  void DoLayerNormBackward(BatchView dy, ConstBatchView xhat, VectorView<const float> rstd, ConstBatchView y,
                           VectorView<const float> gamma, VectorView<float> dgamma, VectorView<float> dbeta,
                           Activation act, int64_t groups, int64_t param_stride) override {
    const int64_t n = dy.rows() / groups, f = dy.cols();
    const bool masked = act != Activation::kNone;
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t first = group * n, shift = group * param_stride;
      float* dg = dgamma.data() + shift;
      float* db = dbeta.data() + shift;
      std::fill(dg, dg + f, 0.0f);
      std::fill(db, db + f, 0.0f);
      // dh (through the activation: ReLU's mask, tanh's 1 - y^2) in place and the column sums row
      // by row, each column's terms added in row order. CUDA's kernel splits the rows among lanes
      // and adds the lanes' sums as a tree (nn/backend_cuda.cu), so it agrees within rounding.
      for (int64_t r = first; r < first + n; ++r) {
        float* g = dy.data() + r * f;
        const float* out = masked ? y.data() + r * f : nullptr;
        const float* xh = xhat.data() + r * f;
        for (int64_t j = 0; j < f; ++j) {
          const float dh = masked ? internal::ActivationGrad(act, g[j], out[j]) : g[j];
          g[j] = dh;
          dg[j] += dh * xh[j];
          db[j] += dh;
        }
      }
      for (int64_t r = first; r < first + n; ++r)
        internal::LayerNormBackwardRow(dy.data() + r * f, xhat.data() + r * f, rstd.data()[r], gamma.data() + shift, f);
    }
  }

  void DoGatherLoss(LossKind loss, ConstBatchView q, VectorView<const int32_t> actions, VectorView<const float> targets,
                    BatchView dq, VectorView<float> dbias, VectorView<float> stats, VectorView<const float> weights,
                    VectorView<float> errors, int64_t groups, int64_t dbias_stride) override {
    const int64_t n = q.rows() / groups, k = q.cols();
    std::fill(dq.data(), dq.data() + dq.size(), 0.0f);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = g * n;
      GatherLossRows(loss, q.data() + first * k, actions.empty() ? nullptr : actions.data() + first,
                     targets.data() + first, dq.data() + first * k,
                     dbias.empty() ? nullptr : dbias.data() + g * dbias_stride, stats.data() + 2 * g,
                     weights.empty() ? nullptr : weights.data() + first,
                     errors.empty() ? nullptr : errors.data() + first, n, k, first);
    }
  }

  // One group of GatherLoss (dq already zero); `first` numbers its rows in errors.
  static void GatherLossRows(LossKind loss, const float* q, const int32_t* actions, const float* targets, float* dq,
                             float* dbias, float* stats, const float* weights, float* errors, int64_t n, int64_t k,
                             int64_t first) {
    const float inv_n = 1.0f / static_cast<float>(n);
    double loss_sum = 0.0, q_sum = 0.0;
    if (dbias != nullptr) std::fill(dbias, dbias + k, 0.0f);
    for (int64_t r = 0; r < n; ++r) {
      const int32_t a = actions == nullptr ? 0 : actions[r];
      if (a < 0 || a >= k) {
        throw std::invalid_argument("GatherLoss: action " + std::to_string(a) + " in row " + std::to_string(first + r) +
                                    " is outside [0, " + std::to_string(k) + ")");
      }
      const float value = q[r * k + a];
      const float d = value - targets[r];
      float grad;
      double term;
      if (loss == LossKind::kMse) {
        term = static_cast<double>(d) * d;
        grad = 2.0f * d * inv_n;
      } else {
        const float ad = std::fabs(d);
        term = ad < 1.0f ? 0.5 * static_cast<double>(d) * d : ad - 0.5;
        grad = HuberGradient(d) * inv_n;
      }
      if (weights != nullptr) {
        term *= weights[r];
        grad *= weights[r];
      }
      if (errors != nullptr) errors[r] = d;
      loss_sum += term;
      q_sum += value;
      dq[r * k + a] = grad;
      if (dbias != nullptr) dbias[a] += grad;
    }
    stats[0] = static_cast<float>(loss_sum / n);
    stats[1] = static_cast<float>(q_sum / n);
  }

  void DoGather(ConstBatchView q, VectorView<const int32_t> actions, VectorView<float> out) override {
    const int64_t k = q.cols();
    for (int64_t r = 0; r < q.rows(); ++r) {
      const int32_t a = actions.data()[r];
      if (a < 0 || a >= k) {
        throw std::invalid_argument("Gather: action " + std::to_string(a) + " in row " + std::to_string(r) +
                                    " is outside [0, " + std::to_string(k) + ")");
      }
      out.data()[r] = q.data()[r * k + a];
    }
  }

  void DoRowMax(ConstBatchView q, VectorView<float> max, VectorView<int32_t> argmax) override {
    const int64_t k = q.cols();
    for (int64_t r = 0; r < q.rows(); ++r) {
      const float* row = q.data() + r * k;
      int32_t best = 0;
      for (int64_t j = 1; j < k; ++j) {
        if (row[j] > row[best]) best = static_cast<int32_t>(j);
      }
      if (!max.empty()) max.data()[r] = row[best];
      if (!argmax.empty()) argmax.data()[r] = best;
    }
  }

  void DoAdamStep(const AdamOptions& o, VectorView<float> params, VectorView<const float> grads, const AdamState& state,
                  int64_t groups) override {
    const int64_t n = params.size(), block = n / groups;
    const float* g = grads.data();
    std::vector<float> coefs(groups, 1.0f);
    if (ClipsGradients(o)) {
      for (int64_t group = 0; group < groups; ++group) {
        double sum_sq = 0.0;
        for (int64_t i = group * block; i < (group + 1) * block; ++i) sum_sq += static_cast<double>(g[i]) * g[i];
        const float norm = static_cast<float>(std::sqrt(sum_sq));
        state.grad_norm.data()[group] = norm;
        const float c = static_cast<float>(o.max_grad_norm) / (norm + internal::kClipEps);
        if (c < 1.0f) coefs[group] = c;
      }
    }
    const int64_t t = ++state.step.data()[0];
    const internal::AdamScalars scalars = internal::AdamStepScalars(o, t);
    const float w1 = static_cast<float>(1.0 - o.beta1), b2 = static_cast<float>(o.beta2),
                w2 = static_cast<float>(1.0 - o.beta2), eps = static_cast<float>(o.eps);
    float* p = params.data();
    float* m = state.exp_avg.data();
    float* v = state.exp_avg_sq.data();
    // One loop per kind of step and group, so each stays a plain vectorizable loop.
    const auto update = [&](auto delta) {
      for (int64_t group = 0; group < groups; ++group) {
        const float coef = coefs[group];
        for (int64_t i = group * block; i < (group + 1) * block; ++i) {
          const float gi = g[i] * coef;
          m[i] = internal::FlushSubnormal(m[i] + w1 * (gi - m[i]));  // PyTorch: exp_avg.lerp_(grad, 1 - beta1)
          v[i] = internal::FlushSubnormal(v[i] * b2 + w2 * gi * gi);
          p[i] -= delta(m[i], v[i]);
        }
      }
    };
    switch (scalars.kind) {
      case internal::AdamScalars::kRectified:
        update([&](float mi, float vi) {
          return internal::AdamDelta<internal::AdamScalars::kRectified>(scalars, mi, vi, eps);
        });
        break;
      case internal::AdamScalars::kMomentum:
        update([&](float mi, float vi) {
          return internal::AdamDelta<internal::AdamScalars::kMomentum>(scalars, mi, vi, eps);
        });
        break;
      default:
        update([&](float mi, float vi) {
          return internal::AdamDelta<internal::AdamScalars::kAdam>(scalars, mi, vi, eps);
        });
    }
  }

  void DoValueAdvantage(ConstBatchView x, BatchView y) override {
    const int k = static_cast<int>(y.cols());
    for (int64_t r = 0; r < x.rows(); ++r) internal::ValueAdvantageRow(x.data() + r * (k + 1), y.data() + r * k, k);
  }

  void DoValueAdvantageBackward(ConstBatchView dy, BatchView dx) override {
    const int k = static_cast<int>(dy.cols());
    for (int64_t r = 0; r < dy.rows(); ++r)
      internal::ValueAdvantageBackwardRow(dy.data() + r * k, dx.data() + r * (k + 1), k);
  }

  // A row of patches per output position, in PyTorch's weight order (c * k + i) * k + j. Each
  // image is first copied channel by channel (CHW, 400 floats for MinAtar), so a window row of a
  // channel is k contiguous floats on both sides. For k = 3 each is copied as 4 floats, one vector
  // load and store (the 4th lands on the next segment's first, written after it; the row's last
  // segment is copied exactly): MinAtar's batch of 32 (73,728 floats) in a seventh of the time of
  // a gather per element.
  void DoIm2Col(ConstBatchView x, const ConvSpec& conv, BatchView patches) override {
    const int h = conv.height, w = conv.width, c = conv.in_channels, k = conv.kernel;
    const int ho = conv.out_height(), wo = conv.out_width();
    const int64_t plane = static_cast<int64_t>(h) * w, segments = static_cast<int64_t>(c) * k;
    if (static_cast<int64_t>(im2col_planes_.size()) < plane * c + 4) im2col_planes_.resize(plane * c + 4, 0.0f);
    float* planes = im2col_planes_.data();
    float* row = patches.data();
    for (int64_t b = 0; b < x.rows(); ++b) {
      const float* image = x.data() + b * conv.in_features();
      for (int ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < plane; ++p) planes[ch * plane + p] = image[p * c + ch];
      for (int oy = 0; oy < ho; ++oy) {
        for (int ox = 0; ox < wo; ++ox, row += conv.patch_size()) {
          const float* window = planes + static_cast<int64_t>(oy) * w + ox;
          if (k == 3) {
            for (int ch = 0; ch < c; ++ch) {
              const float* channel = window + ch * plane;
              float* out = row + 9 * ch;
              std::memcpy(out, channel, 4 * sizeof(float));
              std::memcpy(out + 3, channel + w, 4 * sizeof(float));
              std::memcpy(out + 6, channel + 2 * w, (ch + 1 < c ? 4 : 3) * sizeof(float));
            }
          } else {
            for (int64_t s = 0; s < segments; ++s) {
              std::memcpy(row + k * s, window + (s / k) * plane + (s % k) * w, k * sizeof(float));
            }
          }
        }
      }
    }
  }

  // Scatter-adds each patch back, positions in order: every element sums its terms in increasing
  // (oy, ox), the order the CUDA kernel's gather uses.
  void DoCol2Im(ConstBatchView dpatches, const ConvSpec& conv, BatchView dx) override {
    const int w = conv.width, c = conv.in_channels, k = conv.kernel, ho = conv.out_height(), wo = conv.out_width();
    const int64_t kk = static_cast<int64_t>(k) * k;
    std::fill(dx.data(), dx.data() + dx.size(), 0.0f);
    const float* row = dpatches.data();
    for (int64_t b = 0; b < dx.rows(); ++b) {
      float* image = dx.data() + b * conv.in_features();
      for (int oy = 0; oy < ho; ++oy) {
        for (int ox = 0; ox < wo; ++ox, row += conv.patch_size()) {
          for (int i = 0; i < k; ++i) {
            for (int j = 0; j < k; ++j) {
              float* pixel = image + (static_cast<int64_t>(oy + i) * w + ox + j) * c;
              const float* src = row + i * k + j;
              for (int ch = 0; ch < c; ++ch) pixel[ch] += src[ch * kk];
            }
          }
        }
      }
    }
  }

  void DoPolyak(VectorView<float> target, VectorView<const float> source, float tau) override {
    if (tau == 1.0f) {
      std::memmove(target.data(), source.data(), target.size() * sizeof(float));
      return;
    }
    const float keep = 1.0f - tau;
    float* t = target.data();
    const float* s = source.data();
    for (int64_t i = 0; i < target.size(); ++i) t[i] = tau * s[i] + keep * t[i];
  }

  std::vector<float> gemm_pack_;      // SmallGemm's scratch
  std::vector<float> im2col_planes_;  // Im2Col's: one image channel by channel, and 4 floats of slack
};

}  // namespace

namespace internal {
std::shared_ptr<Backend> MakeCpuBackend() { return std::make_shared<CpuBackend>(); }
}  // namespace internal

}  // namespace cugym::nn
