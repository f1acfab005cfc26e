// The CPU back end's own GEMM for the small layers of RL networks (widths of a few hundred, batches
// of a few hundred), where it is faster than OpenBLAS's kernels called one GEMM at a time and, unlike
// them, gives the same bits on every CPU: each entry of the product is one fused multiply-add chain
// over k in order, c = fma(a[i, 0], b[0, j], 0), then fma(a[i, 1], b[1, j], c), ..., whatever the
// vector width the compiler picked or the tiling. Internal to nn/.
#pragma once

#include <cstdint>
#include <vector>

namespace cugym::nn::internal {

// Whether this build has the vectorized fused multiply-add SmallGemm relies on for speed (x86 with
// FMA, e.g. -march=native on any x86 CPU since 2013, or AArch64). Without it the back end uses
// OpenBLAS for every GEMM.
constexpr bool kHaveSmallGemm =
#if defined(__FMA__) || defined(__aarch64__)
    true;
#else
    false;
#endif

// c = alpha * op_a(a) * op_b(b) + beta * c, column-major with dense leading dimensions (BLAS's sgemm
// with lda = rows of a, and so on): op_a(a) is m x k, op_b(b) k x n, c m x n. beta == 0 ignores what
// c held (NaN included), as BLAS does. `pack` is scratch, grown as needed.
void SmallGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b,
               float beta, float* c, std::vector<float>& pack);

}  // namespace cugym::nn::internal
