// SmallGemm: a register-tiled GEMM that keeps a block of kVecs x kLanes rows by kCols columns of
// the product in registers over the whole k loop (two vectors of rows by six columns: 32 x 6 with
// AVX-512, 16 x 6 with AVX2).
//
// The product is computed as D = P Q with P's rows in the vector lanes, either as C = op_a(a)
// op_b(b) or as C^T = op_b(b)^T op_a(a)^T (D's entries then go to C transposed). Lanes need P with
// unit stride down its columns; the orientation that has it is taken (both do for the weight
// gradient: Cost picks the one that fills the lanes better), and P is copied into panels
// otherwise (the forward pass: an m*k or n*k copy, transposed kLanes x kLanes at a time in
// registers, against m*n*k multiply-adds) and for a last, partial tile. Q is read in place, one
// scalar per multiply-add column.
//
// The vectors are GCC's generic vector type: its lanes are D's rows, so the compiler may map them
// onto any hardware width without changing a single sum. Each multiply-add is an explicit fused
// one (Fma below): GCC's contraction of `acc += a * b` under -ffp-contract=fast is not a promise,
// and GCC 12 left some kernels as a multiply and an add with AVX2. The unit tests compare every
// entry with a scalar std::fma chain, bit for bit.
#include "nn/small_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#if defined(__FMA__) || defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

// The sanitizers' checks in the kernel's inner loop (a call for each access wider than 16 bytes,
// AddressSanitizer's handling of the AVX vectors; UBSan's bounds and overflow checks on every index)
// made the sanitizer build's SmallGemm over ten times slower than its other code, and its DQN tests
// minutes long. There the kernel (and what it inlines) is left uninstrumented, and SmallGemm checks
// each operand's whole extent once per call instead (CheckOperand).
#if defined(__SANITIZE_ADDRESS__)
#define CUGYM_KERNEL_UNINSTRUMENTED __attribute__((no_sanitize("address,undefined")))
#else
#define CUGYM_KERNEL_UNINSTRUMENTED
#endif

namespace cugym::nn::internal {
namespace {

// Lanes as wide as the hardware's vectors (a wider generic vector is split badly by GCC); the
// width changes which rows share a vector, never a sum.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
constexpr int kVecs = 2;  // 12 accumulators of 32 zmm registers
#elif defined(__AVX__)
constexpr int kLanes = 8;
constexpr int kVecs = 2;  // 12 accumulators of 16 ymm registers
#else
constexpr int kLanes = 4;
constexpr int kVecs = 4;  // 24 accumulators of AArch64's 32 vector registers
#endif
constexpr int kCols = 6;
constexpr int kTileRows = kVecs * kLanes;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

// a * b + c in every lane, rounded once.
CUGYM_KERNEL_UNINSTRUMENTED inline Vec Fma(Vec a, Vec b, Vec c) {
#if defined(__AVX512F__)
  return reinterpret_cast<Vec>(
      _mm512_fmadd_ps(reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b), reinterpret_cast<__m512>(c)));
#elif defined(__FMA__)
  return reinterpret_cast<Vec>(
      _mm256_fmadd_ps(reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(b), reinterpret_cast<__m256>(c)));
#elif defined(__aarch64__)
  return reinterpret_cast<Vec>(
      vfmaq_f32(reinterpret_cast<float32x4_t>(c), reinterpret_cast<float32x4_t>(a), reinterpret_cast<float32x4_t>(b)));
#else  // no vector FMA (kHaveSmallGemm is false: the back end does not call SmallGemm)
  for (int i = 0; i < kLanes; ++i) c[i] = std::fma(a[i], b[i], c[i]);
  return c;
#endif
}

// A strided matrix: element (i, j) at data[i * rs + j * cs].
struct Strided {
  const float* data;
  int64_t rs, cs;
};

// Writes one column of D's tile: d[0..rows) (vectors of lanes), d[r] going to out[r * rs].
template <int vecs>
CUGYM_KERNEL_UNINSTRUMENTED inline void Store(const Vec (&d)[vecs], int rows, float alpha, float beta, float* out,
                                              int64_t rs) {
  if (rs == 1 && alpha == 1.0f && beta == 0.0f && rows == vecs * kLanes) {
    for (int v = 0; v < vecs; ++v) std::memcpy(out + v * kLanes, &d[v], sizeof(Vec));
    return;
  }
  float value[vecs * kLanes];
  std::memcpy(value, d, sizeof(value));
  for (int r = 0; r < rows; ++r) {
    const float scaled = alpha * value[r];
    out[r * rs] = beta == 0.0f ? scaled : std::fma(beta, out[r * rs], scaled);
  }
}

// Transposes a kLanes x kLanes block held as kLanes row vectors: at each distance d = kLanes / 2,
// ..., 2, 1 the off-diagonal d x d blocks of every 2d x 2d block swap places.
typedef int32_t Index __attribute__((vector_size(kLanes * sizeof(int32_t))));
constexpr int SwapLane(int j, int d, bool upper) {
  const bool low = (j & d) == 0;
  return upper ? (low ? j + d : kLanes + j) : (low ? j : kLanes + j - d);
}
template <int d, bool upper, size_t... j>
constexpr Index SwapMask(std::index_sequence<j...>) {
  return Index{SwapLane(static_cast<int>(j), d, upper)...};
}
template <int d>
inline void SwapBlocks(Vec (&rows)[kLanes]) {
  constexpr Index lower = SwapMask<d, false>(std::make_index_sequence<kLanes>());
  constexpr Index upper = SwapMask<d, true>(std::make_index_sequence<kLanes>());
  for (int i = 0; i < kLanes; ++i) {
    if ((i & d) != 0) continue;
    const Vec a = rows[i], b = rows[i + d];
    rows[i] = __builtin_shuffle(a, b, lower);
    rows[i + d] = __builtin_shuffle(a, b, upper);
  }
}
template <int d = kLanes / 2>
inline void Transpose(Vec (&rows)[kLanes]) {
  SwapBlocks<d>(rows);
  if constexpr (d > 1) Transpose<d / 2>(rows);
}

// One tile of `vecs` vectors of rows by `cols` columns: P's rows at p (column stride ldp, unit row
// stride), Q (k x cols) strided; D's entry (r, j) goes to out[r * rs + j * cs].
template <int vecs, int cols>
CUGYM_KERNEL_UNINSTRUMENTED void Kernel(const float* p, int64_t ldp, Strided q, int64_t k, int rows, float alpha,
                                        float beta, float* out, int64_t rs, int64_t cs) {
  Vec acc[cols][vecs] = {};
  for (int64_t l = 0; l < k; ++l) {
    Vec a[vecs];
    for (int v = 0; v < vecs; ++v) std::memcpy(&a[v], p + l * ldp + v * kLanes, sizeof(Vec));
    const float* b = q.data + l * q.rs;
    for (int j = 0; j < cols; ++j) {
      const Vec bj = Vec{} + b[j * q.cs];
      for (int v = 0; v < vecs; ++v) acc[j][v] = Fma(a[v], bj, acc[j][v]);
    }
  }
  for (int j = 0; j < cols; ++j) Store<vecs>(acc[j], rows, alpha, beta, out + j * cs, rs);
}

using KernelFn = void (*)(const float*, int64_t, Strided, int64_t, int, float, float, float*, int64_t, int64_t);

template <int vecs>
constexpr KernelFn kKernels[kCols + 1] = {nullptr,         Kernel<vecs, 1>, Kernel<vecs, 2>, Kernel<vecs, 3>,
                                          Kernel<vecs, 4>, Kernel<vecs, 5>, Kernel<vecs, 6>};

// The work of D = P Q with `rows` rows in the lanes, in lane multiply-adds (idle lanes included),
// plus copying P into panels unless it is read in place and writing D to C transposed: a scalar
// copied or scattered costs about one cycle, in which the kernel does kTileRows multiply-adds.
int64_t Cost(int64_t rows, int64_t cols, int64_t k, bool in_place, bool scatter) {
  const int64_t whole = rows / kTileRows * kTileRows, rest = rows - whole;
  const int64_t lanes = whole + (rest == 0 ? 0 : rest <= kLanes ? kLanes : kTileRows);
  return lanes * cols * k + kTileRows * ((in_place ? 0 : rows * k) + (scatter ? rows * cols : 0));
}

// In sanitizer builds: reads the first poisoned byte of [data, data + count) if there is one, an
// instrumented access that AddressSanitizer reports as usual (which allocation, freed or overflowed).
void CheckOperand([[maybe_unused]] const float* data, [[maybe_unused]] int64_t count) {
#if defined(__SANITIZE_ADDRESS__)
  if (void* bad = __asan_region_is_poisoned(const_cast<float*>(data), static_cast<size_t>(count) * sizeof(float))) {
    (void)*static_cast<volatile const char*>(bad);
  }
#endif
}

}  // namespace

void SmallGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b,
               float beta, float* c, std::vector<float>& pack) {
  if (m <= 0 || n <= 0) return;
  CheckOperand(a, m * k);  // dense operands: a is m x k (or k x m), b k x n, c m x n
  CheckOperand(b, k * n);
  CheckOperand(c, m * n);
  // op_a(a)(i, l) = a[i * ars + l * acs]; op_b(b)(l, j) = b[l * brs + j * bcs].
  const int64_t ars = trans_a ? k : 1, acs = trans_a ? 1 : m;
  const int64_t brs = trans_b ? n : 1, bcs = trans_b ? 1 : k;
  // D = P Q: P rows x k, Q k x cols; D(r, j) -> c[r * drs + j * dcs].
  // P is unit-stride down its columns as op_a(a) when a is not transposed, as op_b(b)^T when b is.
  const bool normal_in_place = !trans_a, transposed_in_place = trans_b;
  const bool transposed = Cost(n, m, k, transposed_in_place, true) < Cost(m, n, k, normal_in_place, false);
  const int64_t rows = transposed ? n : m, cols = transposed ? m : n;
  const Strided p = transposed ? Strided{b, bcs, brs} : Strided{a, ars, acs};
  const Strided q = transposed ? Strided{a, acs, ars} : Strided{b, brs, bcs};
  const int64_t drs = transposed ? m : 1, dcs = transposed ? 1 : m;

  // P as tiles of kTileRows rows: read in place where rows are unit-stride and the tile is whole,
  // otherwise copied into a zero-padded panel (column stride kTileRows).
  const int64_t tiles = (rows + kTileRows - 1) / kTileRows;
  const bool in_place = p.rs == 1;
  const int64_t copied = in_place ? (rows % kTileRows != 0 ? 1 : 0) : tiles;
  if (static_cast<int64_t>(pack.size()) < copied * kTileRows * k) pack.resize(copied * kTileRows * k);
  for (int64_t t = tiles - copied; t < tiles; ++t) {
    float* panel = pack.data() + (t - (tiles - copied)) * kTileRows * k;
    const int64_t i0 = t * kTileRows, n_rows = std::min<int64_t>(kTileRows, rows - i0);
    if (n_rows < kTileRows) std::fill(panel, panel + kTileRows * k, 0.0f);
    int64_t l0 = 0;
    if (p.cs == 1) {  // P's rows are unit-stride: transpose kLanes x kLanes blocks in registers
      for (; l0 + kLanes <= k; l0 += kLanes) {
        for (int64_t r0 = 0; r0 < n_rows; r0 += kLanes) {
          Vec block[kLanes];
          const int64_t block_rows = std::min<int64_t>(kLanes, n_rows - r0);
          for (int64_t r = 0; r < kLanes; ++r) {
            if (r < block_rows) {
              std::memcpy(&block[r], p.data + (i0 + r0 + r) * p.rs + l0, sizeof(Vec));
            } else {
              block[r] = Vec{};
            }
          }
          Transpose(block);
          for (int l = 0; l < kLanes; ++l) std::memcpy(panel + (l0 + l) * kTileRows + r0, &block[l], sizeof(Vec));
        }
      }
    }
    for (int64_t r = 0; r < n_rows; ++r) {  // the rest, one element at a time
      const float* src = p.data + (i0 + r) * p.rs;
      for (int64_t l = l0; l < k; ++l) panel[l * kTileRows + r] = src[l * p.cs];
    }
  }

  for (int64_t j0 = 0; j0 < cols; j0 += kCols) {
    const int n_cols = static_cast<int>(std::min<int64_t>(kCols, cols - j0));
    const Strided q_tile{q.data + j0 * q.cs, q.rs, q.cs};
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t i0 = t * kTileRows;
      const int n_rows = static_cast<int>(std::min<int64_t>(kTileRows, rows - i0));
      const bool packed = t >= tiles - copied;
      const float* tile = packed ? pack.data() + (t - (tiles - copied)) * kTileRows * k : p.data + i0;
      const int64_t ldp = packed ? kTileRows : p.cs;
      float* out = c + i0 * drs + j0 * dcs;
      if (kVecs > 1 && n_rows <= kLanes) {
        kKernels<1>[n_cols](tile, ldp, q_tile, k, n_rows, alpha, beta, out, drs, dcs);
      } else {
        kKernels<kVecs>[n_cols](tile, ldp, q_tile, k, n_rows, alpha, beta, out, drs, dcs);
      }
    }
  }
}

}  // namespace cugym::nn::internal
