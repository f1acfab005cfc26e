// Internal to nn/: the factories of the two back ends (defined in backend_cpu.cpp and
// backend_cuda.cu) and the sizes they agree on. Not installed, no CUDA types.
#pragma once

#include <memory>

#include "core/macros.h"
#include "nn/backend.h"

namespace cugym::nn::internal {

std::shared_ptr<Backend> MakeCpuBackend();
#ifdef CUGYM_HAVE_CUDA
std::shared_ptr<Backend> MakeCudaBackend();
#endif

// PyTorch's clip_grad_norm_ adds this to the norm before dividing.
constexpr float kClipEps = 1e-6f;

// Adam's moments are flushed to zero below the smallest normal float. A parameter whose gradient
// stays 0 (a dead ReLU's weights) decays its first moment by 0.9 per step into the subnormal range
// and then sticks there (0.1 of the smallest subnormals rounds to 0), where every CPU instruction
// that touches it takes a microcode assist: without the flush Adam took a third of a CartPole DQN
// update on an Intel Xeon. The flushed values are below 1.2e-38; the step they would take is below
// lr * 1e-30. Both back ends run this.
CUGYM_HD inline float FlushSubnormal(float x) { return (x < 0.0f ? -x : x) < 1.17549435e-38f ? 0.0f : x; }

// One row of Backend::ValueAdvantage and of its backward: both back ends run these, so they agree
// bit for bit (the sums run in the same order).
CUGYM_HD inline void ValueAdvantageRow(const float* x, float* y, int k) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += x[1 + j];
  const float base = x[0] - sum / static_cast<float>(k);
  for (int j = 0; j < k; ++j) y[j] = base + x[1 + j];
}
CUGYM_HD inline void ValueAdvantageBackwardRow(const float* dy, float* dx, int k) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += dy[j];
  const float mean = sum / static_cast<float>(k);
  dx[0] = sum;
  for (int j = 0; j < k; ++j) dx[1 + j] = dy[j] - mean;
}

// sum_j term(j) for j in [0, f), in a fixed order that vectorizes without reassociation: eight
// interleaved partial sums (lane j % 8), combined pairwise at the end. Both back ends run it, so
// they add in the same order.
template <class Term>
CUGYM_HD inline float LaneSum(int64_t f, const Term& term) {
  float lane[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int64_t j = 0;
  for (; j + 8 <= f; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += term(j + k);
  }
  for (int k = 0; j < f; ++j, ++k) lane[k] += term(j);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// LayerNormRow's last pass with the activation `activate` applied to each output: one loop per
// activation, so ReLU's stays a plain loop the compiler vectorizes (a tanhf call in it would not).
template <class Activate>
CUGYM_HD inline void NormalizeRow(float* x, float mean, float rstd, const float* gamma, const float* beta, float* y,
                                  int64_t f, const Activate& activate) {
  for (int64_t j = 0; j < f; ++j) {
    const float xhat = (x[j] - mean) * rstd;
    const float h = gamma[j] * xhat + beta[j];
    x[j] = xhat;
    y[j] = activate(h);
  }
}

// One row of Backend::LayerNorm: x [f] becomes xhat, y [f] = act(gamma * xhat + beta); returns
// rstd. Two passes over x (the mean, then the variance of the centred values), in float. tanh is
// the C library's tanhf on the CPU and CUDA's on the GPU: within 2 ulp of each other, not the same
// bits.
CUGYM_HD inline float LayerNormRow(float* x, const float* gamma, const float* beta, float* y, int64_t f,
                                   Activation act) {
  const float mean = LaneSum(f, [&](int64_t j) { return x[j]; }) / static_cast<float>(f);
  const float sq = LaneSum(f, [&](int64_t j) {
    const float d = x[j] - mean;
    return d * d;
  });
  const float rstd = 1.0f / sqrtf(sq / static_cast<float>(f) + kLayerNormEps);
  if (act == Activation::kRelu) {
    // NaN stays NaN, as BiasActivation's ReLU.
    NormalizeRow(x, mean, rstd, gamma, beta, y, f, [](float h) { return h < 0.0f ? 0.0f : h; });
  } else if (act == Activation::kTanh) {
    NormalizeRow(x, mean, rstd, gamma, beta, y, f, [](float h) { return tanhf(h); });
  } else {
    NormalizeRow(x, mean, rstd, gamma, beta, y, f, [](float h) { return h; });
  }
  return rstd;
}

// dL/dz from dL/dy through a ReLU y = max(z, 0): the mask y > 0.
CUGYM_HD inline float ReluGrad(float dy, float y) { return y > 0.0f ? dy : 0.0f; }
// dL/dz from dL/dy through y = tanh(z): 1 - y^2, from the output as PyTorch's tanh_backward
// (no pre-activation kept; the derivative's relative error grows as |y| nears 1, as PyTorch's does).
CUGYM_HD inline float TanhGrad(float dy, float y) { return dy * (1.0f - y * y); }
// Through `act` (kNone: dy itself). Both sides of each select are cheap, so a loop over it still
// vectorizes.
CUGYM_HD inline float ActivationGrad(Activation act, float dy, float y) {
  return act == Activation::kRelu ? ReluGrad(dy, y) : act == Activation::kTanh ? TanhGrad(dy, y) : dy;
}

// One row of Backend::LayerNormBackward's input gradient, once dh = dL/d(gamma * xhat + beta) is
// in dy (the activation's derivative applied by the column pass): dy [f] becomes dL/dx =
// rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = gamma * dh.
CUGYM_HD inline void LayerNormBackwardRow(float* dy, const float* xhat, float rstd, const float* gamma, int64_t f) {
  const float m1 = LaneSum(f, [&](int64_t j) { return dy[j] * gamma[j]; }) / static_cast<float>(f);
  const float m2 = LaneSum(f, [&](int64_t j) { return dy[j] * gamma[j] * xhat[j]; }) / static_cast<float>(f);
  for (int64_t j = 0; j < f; ++j) dy[j] = rstd * (dy[j] * gamma[j] - m1 - xhat[j] * m2);
}

// The scalars of one Adam or RAdam step t (1-based), formed in double as PyTorch does and rounded
// to float where they meet the tensors; AdamDelta applies them to one parameter.
struct AdamScalars {
  enum Kind { kAdam, kRectified, kMomentum } kind;
  float step_size;  // Adam: lr_t / bc1; RAdam: lr_t * r_t / bc1, or lr_t / bc1 before rectification
  float bc2_sqrt;   // sqrt(1 - beta2^t)
};
CUGYM_HD inline AdamScalars AdamStepScalars(const AdamOptions& o, int64_t t) {
  const double bc1 = 1.0 - pow(o.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - pow(o.beta2, static_cast<double>(t));
  const double lr = ScheduledLr(o.lr, o.lr_decay_updates, t);
  AdamScalars s{AdamScalars::kAdam, static_cast<float>(lr / bc1), static_cast<float>(sqrt(bc2))};
  if (o.rectified) {
    const double r = RadamRectification(o.beta2, t);
    s.kind = r > 0.0 ? AdamScalars::kRectified : AdamScalars::kMomentum;
    if (r > 0.0) s.step_size = static_cast<float>(lr * r / bc1);
  }
  return s;
}
// The amount one parameter moves down (p -= AdamDelta(...)), from its new moments m and v: a
// template on the kind, so the CPU's loop over the parameters has no branch in it.
template <AdamScalars::Kind kKind>
CUGYM_HD inline float AdamDelta(const AdamScalars& s, float m, float v, float eps) {
  if (kKind == AdamScalars::kRectified) return s.step_size * m * s.bc2_sqrt / (sqrtf(v) + eps);  // torch's RAdam
  if (kKind == AdamScalars::kMomentum) return s.step_size * m;
  return s.step_size * m / (sqrtf(v) / s.bc2_sqrt + eps);
}
CUGYM_HD inline float AdamDelta(const AdamScalars& s, float m, float v, float eps) {
  switch (s.kind) {
    case AdamScalars::kRectified:
      return AdamDelta<AdamScalars::kRectified>(s, m, v, eps);
    case AdamScalars::kMomentum:
      return AdamDelta<AdamScalars::kMomentum>(s, m, v, eps);
    default:
      return AdamDelta<AdamScalars::kAdam>(s, m, v, eps);
  }
}

}  // namespace cugym::nn::internal
