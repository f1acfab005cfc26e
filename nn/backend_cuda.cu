// CUDA back end: cuBLAS sgemm for the GEMMs and a few fused kernels for everything else, all on
// one stream, nothing read back on the host, so a whole training step can be captured into a
// CUDA graph. Plain kernels, no Thrust (this file compiles in seconds).
//
// Napkin math for one training step (two forwards, a backward, Adam) of a 4-120-84-2 MLP at
// batch 128: ~11 MFLOP and well under 1 MB of traffic; an H200 does that in microseconds, so the
// cost is the number of kernels (a few microseconds each, launch and ramp): 15 per update without
// clipping, 16 with (see docs/nn.md), all replayed by one graph launch.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "nn/backend.h"
#include "nn/backend_impl.h"
#include "nn/cublas_check.h"

namespace cugym::nn {
namespace {

constexpr int kThreads = 256;        // element-wise kernels
constexpr int kMaxBlocks = 4096;     // grid-stride beyond this
constexpr int kMaxNormBlocks = 128;  // partial sums of the gradient norm (fixed per size: deterministic)
constexpr int kLossThreads = 256;    // the single-block loss kernel
constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;  // NVIDIA's recommendation for Hopper

int Blocks(int64_t n, int threads = kThreads, int cap = kMaxBlocks) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, cap)));
}

int NormBlocks(int64_t n) { return Blocks(n, kThreads * 8, kMaxNormBlocks); }

// Sum over the block in a fixed tree order (bit-identical from run to run); every thread gets the
// result. blockDim.x must be kBlock, a power of two.
template <int kBlock>
__device__ float BlockSum(float value, float* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  float total = shared[0];
  __syncthreads();
  return total;
}

// group_size: elements per group of rows (each group's bias bias_stride floats after the one
// before's).
__global__ void BiasActivationKernel(float* y, const float* bias, int64_t count, int f, Activation act,
                                     int64_t group_size, int64_t bias_stride) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* b = bias_stride == 0 ? bias : bias + (i / group_size) * bias_stride;  // no division ungrouped
    float v = y[i] + b[i % f];
    if (act == Activation::kRelu) v = v < 0.0f ? 0.0f : v;  // as std::max(v, 0.0f) on the CPU (NaN stays NaN)
    if (act == Activation::kTanh) v = tanhf(v);             // CUDA's tanhf: within 2 ulp of the CPU's
    y[i] = v;
  }
}

// Block (32, 8): 32 features side by side (coalesced rows), 8 row phases; one block per 32
// features. dbias is the sum of the 8 phase partials in a fixed order. A thread loads 4 of its
// rows before using any (a convolution's bias gradient runs over n * Ho * Wo rows: 2048 for
// MinAtar's batch of 32, 256 per thread, which one load in flight at a time would make
// latency-bound); each row's value is still added in row order, so the sums are those of a loop
// over one row at a time. Grouped (blockIdx.y = group g): rows [g n, (g + 1) n) into dbias + g *
// dbias_stride, the same sums as a call on that group alone.
__global__ void ActivationBackwardKernel(float* __restrict__ dy, const float* __restrict__ y, float* dbias, int64_t n,
                                         int f, Activation act, int64_t dbias_stride) {
  constexpr int kPhases = 8, kUnroll = 4;
  __shared__ float partial[kPhases][33];
  const bool masked = act != Activation::kNone;  // dz differs from dy: ReLU's mask, tanh's 1 - y^2
  dy += blockIdx.y * n * f;
  if (masked) y += blockIdx.y * n * f;
  dbias += blockIdx.y * dbias_stride;
  const int j = blockIdx.x * 32 + threadIdx.x;
  float sum = 0.0f;
  if (j < f) {
    for (int64_t r0 = threadIdx.y; r0 < n; r0 += kPhases * kUnroll) {
      float g[kUnroll], out[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t r = r0 + u * kPhases;
        g[u] = r < n ? dy[r * f + j] : 0.0f;
        out[u] = masked && r < n ? y[r * f + j] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t r = r0 + u * kPhases;
        if (r >= n) break;
        if (masked) {
          g[u] = internal::ActivationGrad(act, g[u], out[u]);
          dy[r * f + j] = g[u];
        }
        sum += g[u];
      }
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && j < f) {
    float total = 0.0f;
    for (int p = 0; p < 8; ++p) total += partial[p][threadIdx.x];
    dbias[j] = total;
  }
}

// One block per group of n rows: gather, loss, gradient, statistics and the last bias gradient in
// one pass. Each thread owns rows threadIdx.x + i * blockDim.x throughout, so it rereads only what
// it wrote.
__global__ void GatherLossKernel(bool huber, const float* q, const int32_t* actions, const float* targets, float* dq,
                                 float* dbias, float* stats, const float* weights, float* errors, int64_t n, int k,
                                 int64_t dbias_stride) {
  __shared__ float shared[kLossThreads];
  const int64_t first = blockIdx.x * n;
  q += first * k;
  dq += first * k;
  targets += first;
  if (actions != nullptr) actions += first;
  if (weights != nullptr) weights += first;
  if (errors != nullptr) errors += first;
  if (dbias != nullptr) dbias += blockIdx.x * dbias_stride;
  stats += 2 * blockIdx.x;
  const float inv_n = 1.0f / static_cast<float>(n);
  float loss_sum = 0.0f, q_sum = 0.0f;
  int bad = 0;
  for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
    const int a = actions != nullptr ? actions[r] : 0;
    float* row = dq + r * k;
    for (int j = 0; j < k; ++j) row[j] = 0.0f;
    if (a < 0 || a >= k) {
      bad = 1;
      continue;
    }
    const float value = q[r * k + a];
    const float d = value - targets[r];
    float grad, term;
    if (huber) {
      const float ad = fabsf(d);
      term = ad < 1.0f ? 0.5f * d * d : ad - 0.5f;
      grad = HuberGradient(d) * inv_n;
    } else {
      term = d * d;
      grad = 2.0f * d * inv_n;
    }
    if (weights != nullptr) {
      term *= weights[r];
      grad *= weights[r];
    }
    if (errors != nullptr) errors[r] = d;
    loss_sum += term;
    q_sum += value;
    row[a] = grad;
  }
  const float total_loss = BlockSum<kLossThreads>(loss_sum, shared);
  const float total_q = BlockSum<kLossThreads>(q_sum, shared);
  const int any_bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) {
    stats[0] = any_bad ? NAN : total_loss * inv_n;
    stats[1] = total_q * inv_n;
  }
  if (dbias != nullptr) {
    for (int j = 0; j < k; ++j) {
      float s = 0.0f;
      for (int64_t r = threadIdx.x; r < n; r += blockDim.x) s += dq[r * k + j];
      const float total = BlockSum<kLossThreads>(s, shared);
      if (threadIdx.x == 0) dbias[j] = total;
    }
  }
}

__global__ void GatherKernel(const float* q, const int32_t* actions, float* out, int64_t n, int k) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int a = actions[r];
    out[r] = a >= 0 && a < k ? q[r * k + a] : NAN;
  }
}

__global__ void RowMaxKernel(const float* q, float* max, int32_t* argmax, int64_t n, int k) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* row = q + r * k;
    int best = 0;
    float best_value = row[0];
    for (int j = 1; j < k; ++j) {
      const float v = row[j];
      if (v > best_value) {
        best = j;
        best_value = v;
      }
    }
    if (max != nullptr) max[r] = best_value;
    if (argmax != nullptr) argmax[r] = best;
  }
}

// Partial sums of g^2, one per block: NormBlocks(n) blocks for each of the gridDim.y groups of n
// gradients (group y's at y n, its partials at y gridDim.x).
__global__ void SumSquaresKernel(const float* g, int64_t n, float* partials) {
  __shared__ float shared[kThreads];
  g += static_cast<int64_t>(blockIdx.y) * n;
  float s = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    s += g[i] * g[i];
  }
  s = BlockSum<kThreads>(s, shared);
  if (threadIdx.x == 0) partials[static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x] = s;
}

// Each group's norm from its partial sums (in a fixed order: deterministic) and its clipping
// coefficient, min(1, max_grad_norm / (norm + eps)); one thread per group.
__global__ void ClipCoefKernel(const float* partials, int num_partials, int64_t groups, float max_grad_norm,
                               float* grad_norm, float* coefs) {
  for (int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; group < groups;
       group += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int i = 0; i < num_partials; ++i) sum += partials[group * num_partials + i];
    const float norm = sqrtf(sum);
    grad_norm[group] = norm;
    const float c = max_grad_norm / (norm + internal::kClipEps);
    coefs[group] = c < 1.0f ? c : 1.0f;
  }
}

struct AdamArgs {
  AdamOptions options;    // for the step's scalars (AdamStepScalars), formed in double as PyTorch does
  float w1, b2, w2, eps;  // 1 - beta1, beta2, 1 - beta2, eps: rounded once from double
};

// One Adam step for all parameters (one flat buffer). The step count lives on the device: thread
// 0 of each block reads it first thing, and the last block to finish (counted with an atomic)
// stores step + 1, so a graph replay keeps counting without the host. With clipping, parameter i
// is scaled by coefs[i / group_size] (ClipCoefKernel's; null: no clipping).
__global__ void AdamKernel(AdamArgs o, float* p, const float* g, float* m, float* v, int64_t n, int64_t* step,
                           const float* coefs, int64_t group_size, unsigned* done) {
  __shared__ internal::AdamScalars s_scalars;
  __shared__ int64_t s_t;
  __shared__ bool s_last;
  if (threadIdx.x == 0) {
    const int64_t t = *step + 1;
    s_scalars = internal::AdamStepScalars(o.options, t);
    s_t = t;
  }
  __syncthreads();
  const internal::AdamScalars scalars = s_scalars;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float gi = coefs != nullptr ? g[i] * coefs[i / group_size] : g[i];
    float mi = m[i];
    mi = internal::FlushSubnormal(mi + o.w1 * (gi - mi));
    const float vi = internal::FlushSubnormal(v[i] * o.b2 + o.w2 * gi * gi);
    m[i] = mi;
    v[i] = vi;
    p[i] -= internal::AdamDelta(scalars, mi, vi, o.eps);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    s_last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (s_last && threadIdx.x == 0) {
    *step = s_t;
    *done = 0;
  }
}

// LayerNorm: one thread per row (LayerNormRow), so the sums run in the CPU's order.
// Grouped: row r takes the parameters of its block, r / group_rows, param_stride floats apart.
__global__ void LayerNormKernel(float* x, const float* gamma, const float* beta, float* rstd, float* y, int64_t n,
                                int64_t f, Activation act, int64_t group_rows, int64_t param_stride) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t shift = r / group_rows * param_stride;
    rstd[r] = internal::LayerNormRow(x + r * f, gamma + shift, beta + shift, y + r * f, f, act);
  }
}

// dy becomes dh, taken back through the activation (ReLU's mask, tanh's 1 - y^2): every element
// at once.
__global__ void ActivationGradKernel(float* dy, const float* y, int64_t count, Activation act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dy[i] = internal::ActivationGrad(act, dy[i], y[i]);
}

// LayerNorm's parameter gradients from dh: the column sums of dh * xhat and of dh. A block takes
// `cols` columns (LayerNormGradColumns) and kThreads / cols row lanes: lane t adds rows t,
// t + lanes, ... in order, then the lanes' sums meet in a fixed tree, so every run gives the same
// bits (within rounding of the CPU's row-order sums). One thread per column, as before, left
// MinAtar's convolution (16 channels at 8,192 positions per minibatch of 128) to 16 threads, each
// 8,192 dependent steps long; now 16 blocks of 256 lanes each add 32 rows. Thread i of a block is
// column i % cols of lane i / cols, so a warp reads whole rows where there are enough columns.
// Grouped: blockIdx.y is the group, whose n rows follow the previous group's and whose sums go
// param_stride floats after the previous group's.
__global__ void LayerNormParamGradKernel(const float* __restrict__ dh, const float* __restrict__ xhat, float* dgamma,
                                         float* dbeta, int64_t n, int64_t f, int cols, int64_t param_stride) {
  __shared__ float sum_g[kThreads], sum_b[kThreads];
  dh += static_cast<int64_t>(blockIdx.y) * n * f;
  xhat += static_cast<int64_t>(blockIdx.y) * n * f;
  dgamma += static_cast<int64_t>(blockIdx.y) * param_stride;
  dbeta += static_cast<int64_t>(blockIdx.y) * param_stride;
  const int lanes = kThreads / cols, lane = threadIdx.x / cols;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * cols + threadIdx.x % cols;
  float g = 0.0f, b = 0.0f;
  if (j < f) {
#pragma unroll 4
    for (int64_t r = lane; r < n; r += lanes) {
      const float d = dh[r * f + j];
      g += d * xhat[r * f + j];
      b += d;
    }
  }
  sum_g[threadIdx.x] = g;
  sum_b[threadIdx.x] = b;
  __syncthreads();
  for (int half = lanes / 2; half > 0; half /= 2) {  // lanes is a power of two
    if (lane < half) {
      sum_g[threadIdx.x] += sum_g[threadIdx.x + half * cols];
      sum_b[threadIdx.x] += sum_b[threadIdx.x + half * cols];
    }
    __syncthreads();
  }
  if (lane == 0 && j < f) {
    dgamma[j] = sum_g[threadIdx.x];
    dbeta[j] = sum_b[threadIdx.x];
  }
}

// Columns per block of LayerNormParamGradKernel: a power of two from 1 to 32, about f / 64, so that
// few columns still spread over several multiprocessors with many row lanes each, and many columns
// get warps that read 32 adjacent floats.
int LayerNormGradColumns(int64_t f) {
  int cols = 1;
  while (cols < 32 && static_cast<int64_t>(cols) * 64 < f) cols *= 2;
  return cols;
}

__global__ void LayerNormBackwardKernel(float* dy, const float* xhat, const float* rstd, const float* gamma, int64_t n,
                                        int64_t f, int64_t group_rows, int64_t param_stride) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    internal::LayerNormBackwardRow(dy + r * f, xhat + r * f, rstd[r], gamma + r / group_rows * param_stride, f);
}

__global__ void ValueAdvantageKernel(const float* x, float* y, int64_t n, int k) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    internal::ValueAdvantageRow(x + r * (k + 1), y + r * k, k);
  }
}

__global__ void ValueAdvantageBackwardKernel(const float* dy, float* dx, int64_t n, int k) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    internal::ValueAdvantageBackwardRow(dy + r * k, dx + r * (k + 1), k);
  }
}

__global__ void PolyakKernel(float* target, const float* source, int64_t n, float tau) {
  const float keep = 1.0f - tau;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    target[i] = tau * source[i] + keep * target[i];
  }
}

// The dimensions the two convolution kernels share, as ints (the checks bound them by the buffers).
struct ConvDims {
  int h, w, c, k, ho, wo;
  explicit ConvDims(const ConvSpec& s)
      : h(s.height), w(s.width), c(s.in_channels), k(s.kernel), ho(s.out_height()), wo(s.out_width()) {}
};

// One thread per patch entry (coalesced writes): entry (row, col) with row = (b, oy, ox) and
// col = (c * k + i) * k + j copies x[b, oy + i, ox + j, c].
__global__ void Im2ColKernel(const float* x, float* patches, int64_t total, ConvDims d) {
  const int kk = d.k * d.k, patch = d.c * kk, positions = d.ho * d.wo;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = e / patch;
    const int col = static_cast<int>(e - row * patch);
    const int64_t b = row / positions;
    const int pos = static_cast<int>(row - b * positions);
    const int oy = pos / d.wo, ox = pos - oy * d.wo;
    const int ch = col / kk, ij = col - ch * kk, i = ij / d.k, j = ij - i * d.k;
    patches[e] = x[((b * d.h + oy + i) * d.w + ox + j) * d.c + ch];
  }
}

// One thread per input element: the sum of the patch entries Im2Col copied it to, in increasing
// (oy, ox) (i and j decreasing), as the CPU's scatter-add; no atomics, the same bits every run.
__global__ void Col2ImKernel(const float* dpatches, float* dx, int64_t total, ConvDims d) {
  const int kk = d.k * d.k, patch = d.c * kk;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pixel = e / d.c;
    const int ch = static_cast<int>(e - pixel * d.c);
    const int64_t b = pixel / (static_cast<int64_t>(d.h) * d.w);
    const int yx = static_cast<int>(pixel - b * d.h * d.w);
    const int y = yx / d.w, x = yx - y * d.w;
    float sum = 0.0f;
    for (int i = d.k - 1; i >= 0; --i) {
      const int oy = y - i;
      if (oy < 0 || oy >= d.ho) continue;
      for (int j = d.k - 1; j >= 0; --j) {
        const int ox = x - j;
        if (ox < 0 || ox >= d.wo) continue;
        sum += dpatches[((b * d.ho + oy) * d.wo + ox) * patch + (ch * d.k + i) * d.k + j];
      }
    }
    dx[e] = sum;
  }
}

cublasOperation_t ToCublas(Op op) { return op == Op::kN ? CUBLAS_OP_N : CUBLAS_OP_T; }

int CheckedInt(int64_t v, const char* what) {
  if (v > 0x7fffffff)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(v) + " too large for cuBLAS");
  return static_cast<int>(std::max<int64_t>(v, 1));
}

class CudaGraph final : public Graph {
 public:
  CudaGraph(std::shared_ptr<Backend> owner, cudaGraphExec_t exec, cudaStream_t stream)
      : owner_(std::move(owner)), exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  void Replay() override { CUGYM_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

 private:
  std::shared_ptr<Backend> owner_;  // keeps the stream alive
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

class CudaBackend final : public Backend, public std::enable_shared_from_this<CudaBackend> {
 public:
  CudaBackend() : Backend(Device::kCuda) {
    // A blocking stream: it synchronizes with the legacy default stream, so Buffer's plain
    // cudaMemcpy calls (FromHost/ToHost) are ordered with the work queued here.
    CUGYM_CUDA_CHECK(cudaStreamCreate(&stream_));
    try {
      CUGYM_CUBLAS_CHECK(cublasCreate(&handle_));
      CUGYM_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
      // A workspace of our own, so cuBLAS allocates nothing while a graph is captured.
      CUGYM_CUDA_CHECK(cudaMalloc(&workspace_, kCublasWorkspaceBytes));
      CUGYM_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, kCublasWorkspaceBytes));
      // Full fp32 products: no TF32 tensor cores (about 1e-3 relative error), as PyTorch's default.
      CUGYM_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    } catch (...) {
      Release();
      throw;
    }
  }
  ~CudaBackend() override { Release(); }

  std::string Describe() const override {
    int version = 0;
    cublasGetVersion(handle_, &version);
    return "cuda (" + CudaDeviceName() + ", cuBLAS " + std::to_string(version) + ", fp32)";
  }
  // The blocks-done counter, each group's partial sums and each group's clipping coefficient.
  int64_t AdamScratchSize(int64_t num_params, int64_t groups) const override {
    return 1 + groups * NormBlocks(num_params / groups) + groups;
  }
  void Synchronize() override { CUGYM_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  void* native_stream() const override { return stream_; }

  std::unique_ptr<Graph> Capture(const std::function<void()>& work) override {
    CUGYM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      work();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream_, &partial);  // ends the capture; the error that got us here wins
      if (partial != nullptr) cudaGraphDestroy(partial);
      cudaGetLastError();
      throw;
    }
    cudaGraph_t graph = nullptr;
    CUGYM_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    CUGYM_CUDA_CHECK(status);
    return std::make_unique<CudaGraph>(shared_from_this(), exec, stream_);
  }

 private:
  void Release() noexcept {
    if (handle_ != nullptr) cublasDestroy(handle_);
    if (workspace_ != nullptr) cudaFree(workspace_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    handle_ = nullptr;
    workspace_ = nullptr;
    stream_ = nullptr;
  }

  void DoGemm(Op op_a, ConstColMajorView a, Op op_b, ConstColMajorView b, float alpha, float beta,
              ColMajorView c) override {
    const int64_t k = op_a == Op::kN ? a.cols() : a.rows();
    CUGYM_CUBLAS_CHECK(cublasSgemm(handle_, ToCublas(op_a), ToCublas(op_b), CheckedInt(c.rows(), "m"),
                                   CheckedInt(c.cols(), "n"), static_cast<int>(k), &alpha, a.data(),
                                   CheckedInt(a.ld(), "lda"), b.data(), CheckedInt(b.ld(), "ldb"), &beta, c.data(),
                                   CheckedInt(c.ld(), "ldc")));
  }

  void DoGemmBatched(int64_t count, Op op_a, ConstColMajorView a, int64_t stride_a, Op op_b, ConstColMajorView b,
                     int64_t stride_b, float alpha, float beta, ColMajorView c, int64_t stride_c) override {
    const int64_t k = op_a == Op::kN ? a.cols() : a.rows();
    CUGYM_CUBLAS_CHECK(cublasSgemmStridedBatched(
        handle_, ToCublas(op_a), ToCublas(op_b), CheckedInt(c.rows(), "m"), CheckedInt(c.cols(), "n"),
        static_cast<int>(k), &alpha, a.data(), CheckedInt(a.ld(), "lda"), stride_a, b.data(), CheckedInt(b.ld(), "ldb"),
        stride_b, &beta, c.data(), CheckedInt(c.ld(), "ldc"), stride_c, CheckedInt(count, "batch count")));
  }

  void DoBiasActivation(BatchView y, VectorView<const float> bias, Activation act, int64_t groups,
                        int64_t bias_stride) override {
    BiasActivationKernel<<<Blocks(y.size()), kThreads, 0, stream_>>>(
        y.data(), bias.data(), y.size(), static_cast<int>(y.cols()), act, y.size() / groups, bias_stride);
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoActivationBackward(BatchView dy, ConstBatchView y, VectorView<float> dbias, Activation act, int64_t groups,
                            int64_t dbias_stride) override {
    const int f = static_cast<int>(dy.cols());
    CheckGroupCount(Device::kCuda, groups, "ActivationBackward");  // Mlp checked its replicas at construction
    const dim3 grid((f + 31) / 32, static_cast<unsigned>(groups));
    ActivationBackwardKernel<<<grid, dim3(32, 8), 0, stream_>>>(dy.data(), y.data(), dbias.data(), dy.rows() / groups,
                                                                f, act, dbias_stride);
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoGatherLoss(LossKind loss, ConstBatchView q, VectorView<const int32_t> actions, VectorView<const float> targets,
                    BatchView dq, VectorView<float> dbias, VectorView<float> stats, VectorView<const float> weights,
                    VectorView<float> errors, int64_t groups, int64_t dbias_stride) override {
    GatherLossKernel<<<CheckedInt(groups, "groups"), kLossThreads, 0, stream_>>>(
        loss == LossKind::kHuber, q.data(), actions.empty() ? nullptr : actions.data(), targets.data(), dq.data(),
        dbias.empty() ? nullptr : dbias.data(), stats.data(), weights.empty() ? nullptr : weights.data(),
        errors.empty() ? nullptr : errors.data(), q.rows() / groups, static_cast<int>(q.cols()), dbias_stride);
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoGather(ConstBatchView q, VectorView<const int32_t> actions, VectorView<float> out) override {
    GatherKernel<<<Blocks(q.rows()), kThreads, 0, stream_>>>(q.data(), actions.data(), out.data(), q.rows(),
                                                             static_cast<int>(q.cols()));
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoRowMax(ConstBatchView q, VectorView<float> max, VectorView<int32_t> argmax) override {
    RowMaxKernel<<<Blocks(q.rows()), kThreads, 0, stream_>>>(q.data(), max.empty() ? nullptr : max.data(),
                                                             argmax.empty() ? nullptr : argmax.data(), q.rows(),
                                                             static_cast<int>(q.cols()));
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoAdamStep(const AdamOptions& o, VectorView<float> params, VectorView<const float> grads, const AdamState& state,
                  int64_t groups) override {
    const int64_t n = params.size(), group_size = n / groups;
    // scratch: [0] the blocks-done counter (as uint32 bits, zeroed at allocation), then each
    // group's partial sums of the squared gradients, then each group's clipping coefficient.
    unsigned* done = reinterpret_cast<unsigned*>(state.scratch.data());
    const int norm_blocks = NormBlocks(group_size);
    float* partials = state.scratch.data() + 1;
    float* coefs = partials + groups * norm_blocks;
    if (ClipsGradients(o)) {
      SumSquaresKernel<<<dim3(norm_blocks, static_cast<unsigned>(groups)), kThreads, 0, stream_>>>(
          grads.data(), group_size, partials);
      CUGYM_CUDA_CHECK_LAST();
      ClipCoefKernel<<<Blocks(groups), kThreads, 0, stream_>>>(
          partials, norm_blocks, groups, static_cast<float>(o.max_grad_norm), state.grad_norm.data(), coefs);
      CUGYM_CUDA_CHECK_LAST();
    }
    AdamArgs args{o, static_cast<float>(1.0 - o.beta1), static_cast<float>(o.beta2), static_cast<float>(1.0 - o.beta2),
                  static_cast<float>(o.eps)};
    AdamKernel<<<Blocks(n), kThreads, 0, stream_>>>(args, params.data(), grads.data(), state.exp_avg.data(),
                                                    state.exp_avg_sq.data(), n, state.step.data(),
                                                    ClipsGradients(o) ? coefs : nullptr, group_size, done);
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoLayerNorm(BatchView x, VectorView<const float> gamma, VectorView<const float> beta, VectorView<float> rstd,
                   BatchView y, Activation act, int64_t groups, int64_t param_stride) override {
    LayerNormKernel<<<Blocks(x.rows()), kThreads, 0, stream_>>>(x.data(), gamma.data(), beta.data(), rstd.data(),
                                                                y.data(), x.rows(), x.cols(), act, x.rows() / groups,
                                                                param_stride);
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoLayerNormBackward(BatchView dy, ConstBatchView xhat, VectorView<const float> rstd, ConstBatchView y,
                           VectorView<const float> gamma, VectorView<float> dgamma, VectorView<float> dbeta,
                           Activation act, int64_t groups, int64_t param_stride) override {
    if (act != Activation::kNone && dy.size() > 0) {
      ActivationGradKernel<<<Blocks(dy.size()), kThreads, 0, stream_>>>(dy.data(), y.data(), dy.size(), act);
      CUGYM_CUDA_CHECK_LAST();
    }
    const int64_t group_rows = dy.rows() / groups;
    const int cols = LayerNormGradColumns(dy.cols());
    if (dy.cols() > 0) {
      const dim3 grid(CheckedInt((dy.cols() + cols - 1) / cols, "LayerNorm columns"),
                      static_cast<unsigned>(groups));  // groups <= kMaxCudaGroups: CheckGroupCount
      LayerNormParamGradKernel<<<grid, kThreads, 0, stream_>>>(dy.data(), xhat.data(), dgamma.data(), dbeta.data(),
                                                               group_rows, dy.cols(), cols, param_stride);
      CUGYM_CUDA_CHECK_LAST();
    }
    if (dy.rows() == 0) return;
    LayerNormBackwardKernel<<<Blocks(dy.rows()), kThreads, 0, stream_>>>(
        dy.data(), xhat.data(), rstd.data(), gamma.data(), dy.rows(), dy.cols(), group_rows, param_stride);
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoValueAdvantage(ConstBatchView x, BatchView y) override {
    ValueAdvantageKernel<<<Blocks(x.rows()), kThreads, 0, stream_>>>(x.data(), y.data(), x.rows(),
                                                                     static_cast<int>(y.cols()));
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoValueAdvantageBackward(ConstBatchView dy, BatchView dx) override {
    ValueAdvantageBackwardKernel<<<Blocks(dy.rows()), kThreads, 0, stream_>>>(dy.data(), dx.data(), dy.rows(),
                                                                              static_cast<int>(dy.cols()));
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoIm2Col(ConstBatchView x, const ConvSpec& conv, BatchView patches) override {
    Im2ColKernel<<<Blocks(patches.size()), kThreads, 0, stream_>>>(x.data(), patches.data(), patches.size(),
                                                                   ConvDims(conv));
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoCol2Im(ConstBatchView dpatches, const ConvSpec& conv, BatchView dx) override {
    Col2ImKernel<<<Blocks(dx.size()), kThreads, 0, stream_>>>(dpatches.data(), dx.data(), dx.size(), ConvDims(conv));
    CUGYM_CUDA_CHECK_LAST();
  }

  void DoPolyak(VectorView<float> target, VectorView<const float> source, float tau) override {
    if (tau == 1.0f) {
      CUGYM_CUDA_CHECK(cudaMemcpyAsync(target.data(), source.data(), target.size() * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream_));
      return;
    }
    PolyakKernel<<<Blocks(target.size()), kThreads, 0, stream_>>>(target.data(), source.data(), target.size(), tau);
    CUGYM_CUDA_CHECK_LAST();
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
};

}  // namespace

namespace internal {
std::shared_ptr<Backend> MakeCudaBackend() { return std::make_shared<CudaBackend>(); }
}  // namespace internal

}  // namespace cugym::nn
