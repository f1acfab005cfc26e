// The CPU back end's own GEMM: every entry, bit for bit, is the fused multiply-add chain over k in
// order (so a product does not depend on the CPU's vector width or on OpenBLAS's kernel choice),
// for every transpose case and the sizes around its tiles; and the back end's Gemm uses it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "nn/backend.h"
#include "nn/small_gemm.h"

namespace cugym::nn {
namespace {

// op(a)(i, l) * op(b)(l, j) summed as fma(a, b, c) for l = 0, 1, ..., then alpha c + beta c_old.
std::vector<float> FmaChain(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& a,
                            const std::vector<float>& b, float beta, const std::vector<float>& c) {
  std::vector<float> out(c);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int l = 0; l < k; ++l) s = std::fma(ta ? a[l + i * k] : a[i + l * m], tb ? b[j + l * n] : b[l + j * k], s);
      const float scaled = alpha * s;
      out[i + j * m] = beta == 0.0f ? scaled : std::fma(beta, c[i + j * m], scaled);
    }
  }
  return out;
}

std::vector<float> Random(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

bool SameBits(float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; }

TEST(SmallGemm, EveryEntryIsTheFusedMultiplyAddChainInOrder) {
  if (!internal::kHaveSmallGemm) GTEST_SKIP() << "built without FMA: the back end uses OpenBLAS";
  std::mt19937 rng(7);
  std::vector<float> pack;
  // Around the tile sizes (8 or 16 lanes, two vectors, six columns), the DQN layers' shapes, and
  // degenerate ones.
  const int sizes[] = {1, 3, 4, 6, 7, 8, 15, 16, 17, 31, 32, 33, 64, 84, 120};
  int checked = 0;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int m : sizes) {
        for (int n : sizes) {
          const int k = sizes[(m * 7 + n * 3 + ta + 2 * tb) % 15];
          for (float beta : {0.0f, 0.5f}) {
            const float alpha = beta == 0.0f ? 1.0f : -2.0f;
            const std::vector<float> a = Random(int64_t{m} * k, rng), b = Random(int64_t{k} * n, rng);
            std::vector<float> c = Random(int64_t{m} * n, rng);
            if (beta == 0.0f) c.assign(c.size(), std::nanf(""));  // ignored, as BLAS does
            const std::vector<float> want = FmaChain(ta, tb, m, n, k, alpha, a, b, beta, c);
            internal::SmallGemm(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, c.data(), pack);
            for (int e = 0; e < m * n; ++e) {
              ASSERT_TRUE(SameBits(c[e], want[e]))
                  << "ta " << ta << " tb " << tb << " m " << m << " n " << n << " k " << k << " beta " << beta
                  << " entry " << e << ": " << c[e] << " vs " << want[e];
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 15 * 15 * 2);
}

TEST(SmallGemm, AnEmptySumLeavesBetaTimesC) {
  if (!internal::kHaveSmallGemm) GTEST_SKIP() << "built without FMA: the back end uses OpenBLAS";
  std::vector<float> pack, c = {1, 2, 3, 4};
  internal::SmallGemm(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 0.5f, c.data(), pack);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  internal::SmallGemm(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 0.0f, c.data(), pack);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

// Sanitizer builds leave the kernel uninstrumented (its checks made it over ten times slower) and
// check each operand's whole extent once per call instead: an operand one float short, whose last
// float only the kernel reads or writes (32 rows: whole tiles, read in place), is still reported.
TEST(SmallGemmDeathTest, SanitizersReportAnOperandShortOfItsExtent) {
#if !defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a check of AddressSanitizer builds";
#else
  if (!internal::kHaveSmallGemm) GTEST_SKIP() << "built without FMA: the back end uses OpenBLAS";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr int64_t m = 32, n = 7, k = 9;
  const int64_t sizes[3] = {m * k, k * n, m * n};
  for (int shortened = 0; shortened < 3; ++shortened) {
    std::unique_ptr<float[]> operand[3];
    for (int i = 0; i < 3; ++i) operand[i].reset(new float[sizes[i] - (i == shortened ? 1 : 0)]());
    std::vector<float> pack;
    EXPECT_DEATH(internal::SmallGemm(false, false, m, n, k, 1.0f, operand[0].get(), operand[1].get(), 0.0f,
                                     operand[2].get(), pack),
                 "heap-buffer-overflow")
        << "operand "
        << "abc"[shortened];
  }
#endif
}

TEST(SmallGemm, TheCpuBackEndsSmallProductsAreTheChain) {
  if (!internal::kHaveSmallGemm) GTEST_SKIP() << "built without FMA: the back end uses OpenBLAS";
  // A 64 x 120 by 120 x 84 product, the middle layer of CartPole's shipped network: OpenBLAS's
  // kernels sum it in another order (the 1e-6 relative differences the back end had before).
  std::mt19937 rng(3);
  const int m = 84, n = 64, k = 120;
  const std::vector<float> a = Random(m * k, rng), b = Random(k * n, rng);
  std::vector<float> c(m * n);
  std::shared_ptr<Backend> cpu = MakeBackend(Device::kCpu);
  cpu->Gemm(Op::kT, ConstColMajorView(a.data(), k, m, Device::kCpu), Op::kN,
            ConstColMajorView(b.data(), k, n, Device::kCpu), 1.0f, 0.0f, ColMajorView(c.data(), m, n, Device::kCpu));
  const std::vector<float> want = FmaChain(true, false, m, n, k, 1.0f, a, b, 0.0f, c);
  for (int e = 0; e < m * n; ++e) ASSERT_TRUE(SameBits(c[e], want[e])) << "entry " << e;
}

}  // namespace
}  // namespace cugym::nn
