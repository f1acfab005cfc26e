// PyTorch-default Linear and Conv2d initialization, and orthogonal initialization, from Philox draws.
#include "nn/init.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.h"

namespace cugym::nn {
namespace {

// Rng's "env index" for layer l. Its high word 0x4E4E ("NN") differs from every env's (env
// indices are below 2^32, so their high word holds only the stream id << 24): network weights
// never share draws with env dynamics or policies.
constexpr uint64_t kInitIndexBase = uint64_t{0x4E4E} << 32;  // "NN"

// The "layer" whose key the convolution draws from: beyond any Linear layer's index.
constexpr int kConvInitLayer = 1 << 20;

constexpr double kTwoPi = 6.283185307179586;

void CheckLayer(const char* who, int layer, int64_t out, int64_t in) {
  if (in < 1 || out < 1 || layer < 0) {
    throw std::invalid_argument(std::string(who) + ": layer " + std::to_string(layer) + " of " + std::to_string(in) +
                                " -> " + std::to_string(out) + " units");
  }
}

// Standard normal draws by Box-Muller, both of each pair used. u1 is in (0, 1] so its log is
// finite; 32 bits per uniform put the largest draw at 6.7 standard deviations.
class NormalDraws {
 public:
  explicit NormalDraws(Rng rng) : rng_(rng) {}
  double Next() {
    if (spare_ready_) {
      spare_ready_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(rng_.NextU32()) + 1.0) / 4294967296.0;
    const double u2 = static_cast<double>(rng_.NextU32()) / 4294967296.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(kTwoPi * u2);
    spare_ready_ = true;
    return r * std::cos(kTwoPi * u2);
  }

 private:
  Rng rng_;
  double spare_ = 0.0;
  bool spare_ready_ = false;
};

// Q [m x k] (column-major, m >= k) of A = QR for A [m x k] (column-major, overwritten), with each
// column of Q times the sign of R's diagonal entry (+ for 0), as orthogonal_ does. The sign fix
// makes R's diagonal positive, and that QR is unique: Q is A's columns orthonormalized in order,
// whichever algorithm factors it (LAPACK's for PyTorch, this one here), and uniformly distributed
// over the matrices with orthonormal columns. Householder's Q without it is not: its first entry,
// A's first divided by -sign(A's first) |A's first column|, is negative in every draw.
std::vector<double> OrthonormalColumns(std::vector<double>& a, int64_t m, int64_t k) {
  // Reflection j, H_j = I - tau_j v_j v_j^T, keeps v_j in rows j.. of column j of a; r_jj apart.
  std::vector<double> tau(k, 0.0), r_diag(k, 0.0);
  for (int64_t j = 0; j < k; ++j) {
    double* v = a.data() + j * m;
    double norm_sq = 0.0;
    for (int64_t i = j; i < m; ++i) norm_sq += v[i] * v[i];
    // H_j x = alpha e_j with alpha of x_j's opposite sign: v = x - alpha e_j cancels nothing.
    const double alpha = v[j] >= 0.0 ? -std::sqrt(norm_sq) : std::sqrt(norm_sq);
    v[j] -= alpha;
    double v_sq = 0.0;
    for (int64_t i = j; i < m; ++i) v_sq += v[i] * v[i];
    tau[j] = v_sq > 0.0 ? 2.0 / v_sq : 0.0;
    r_diag[j] = alpha;
    for (int64_t c = j + 1; c < k; ++c) {
      double* col = a.data() + c * m;
      double dot = 0.0;
      for (int64_t i = j; i < m; ++i) dot += v[i] * col[i];
      const double s = tau[j] * dot;
      for (int64_t i = j; i < m; ++i) col[i] -= s * v[i];
    }
  }
  // Q = H_0 H_1 ... H_{k-1} applied to the first k columns of I, the last reflection first. Column
  // c < j is still e_c then, which H_j (rows j.. only) leaves alone.
  std::vector<double> q(static_cast<std::size_t>(m * k), 0.0);
  for (int64_t c = 0; c < k; ++c) q[c * m + c] = 1.0;
  for (int64_t j = k - 1; j >= 0; --j) {
    const double* v = a.data() + j * m;
    for (int64_t c = j; c < k; ++c) {
      double* col = q.data() + c * m;
      double dot = 0.0;
      for (int64_t i = j; i < m; ++i) dot += v[i] * col[i];
      const double s = tau[j] * dot;
      for (int64_t i = j; i < m; ++i) col[i] -= s * v[i];
    }
  }
  for (int64_t c = 0; c < k; ++c) {
    if (r_diag[c] < 0.0) {
      for (int64_t i = 0; i < m; ++i) q[c * m + i] = -q[c * m + i];
    }
  }
  return q;
}

}  // namespace

void InitLinear(uint64_t seed, int layer, int64_t out, int64_t in, float* weight, float* bias) {
  CheckLayer("InitLinear", layer, out, in);
  const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in)));
  Rng rng(seed, kInitIndexBase + static_cast<uint64_t>(layer), 0);
  for (int64_t i = 0; i < out * in; ++i) weight[i] = rng.Uniform(-bound, bound);
  for (int64_t i = 0; i < out; ++i) bias[i] = rng.Uniform(-bound, bound);
}

void InitConv2d(uint64_t seed, int64_t out, int64_t in_channels, int64_t kernel, float* weight, float* bias) {
  if (in_channels < 1 || kernel < 1) {
    throw std::invalid_argument("InitConv2d: " + std::to_string(in_channels) + " input channels, kernel " +
                                std::to_string(kernel));
  }
  InitLinear(seed, kConvInitLayer, out, in_channels * kernel * kernel, weight, bias);
}

void InitOrthogonal(uint64_t seed, int layer, int64_t out, int64_t in, double gain, float* weight, float* bias) {
  CheckLayer("InitOrthogonal", layer, out, in);
  if (!std::isfinite(gain)) throw std::invalid_argument("InitOrthogonal: gain " + std::to_string(gain));
  // A [m x k] with m >= k: the weight itself when tall or square, its transpose when wide.
  const bool wide = out < in;
  const int64_t m = wide ? in : out, k = wide ? out : in;
  NormalDraws normal(Rng(seed, kInitIndexBase + static_cast<uint64_t>(layer), 0));
  std::vector<double> a(static_cast<std::size_t>(m * k));
  for (double& v : a) v = normal.Next();
  const std::vector<double> q = OrthonormalColumns(a, m, k);
  for (int64_t r = 0; r < out; ++r) {
    for (int64_t c = 0; c < in; ++c) {
      // Q is column-major: Q[i][j] at q[j * m + i]; a wide weight is Q^T.
      const double value = wide ? q[r * m + c] : q[c * m + r];
      weight[r * in + c] = static_cast<float>(gain * value);
    }
  }
  for (int64_t i = 0; i < out; ++i) bias[i] = 0.0f;
}

void InitConv2dOrthogonal(uint64_t seed, int64_t out, int64_t in_channels, int64_t kernel, double gain, float* weight,
                          float* bias) {
  if (in_channels < 1 || kernel < 1) {
    throw std::invalid_argument("InitConv2dOrthogonal: " + std::to_string(in_channels) + " input channels, kernel " +
                                std::to_string(kernel));
  }
  InitOrthogonal(seed, kConvInitLayer, out, in_channels * kernel * kernel, gain, weight, bias);
}

}  // namespace cugym::nn
