// SinCos against double-precision libm.
#include "core/fastmath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace cugym {
namespace {

TEST(SinCos, WithinTwoUlpOfDoublePrecisionOverManyPeriods) {
  double worst = 0;
  for (int i = -200000; i <= 200000; ++i) {
    const float x = static_cast<float>(i) * 5e-4f;  // [-100, 100]
    float s, c;
    SinCos(x, &s, &c);
    const double ulp = std::ldexp(1.0, -23);  // relative to values near 1; absolute error bound
    worst = std::max({worst, std::fabs(s - std::sin(double(x))) / ulp, std::fabs(c - std::cos(double(x))) / ulp});
  }
  EXPECT_LT(worst, 2.0);
}

TEST(SinCos, SmallAnglesAreRelativelyAccurate) {
  for (float x : {1e-30f, 1e-8f, -3e-5f, 0.01f, -0.2094f}) {
    float s, c;
    SinCos(x, &s, &c);
    EXPECT_NEAR(s, std::sin(double(x)), 2 * std::fabs(x) * 1.2e-7) << x;
    EXPECT_NEAR(c, std::cos(double(x)), 1.2e-7) << x;
  }
  float s, c;
  SinCos(0.0f, &s, &c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, 1.0f);
}

TEST(SinCos, QuadrantsHaveTheRightSigns) {
  const double kPi = 3.14159265358979323846;
  for (int k = -8; k <= 8; ++k) {
    const float x = static_cast<float>(k * kPi / 2 + 0.3);
    float s, c;
    SinCos(x, &s, &c);
    EXPECT_NEAR(s, std::sin(double(x)), 3e-7) << k;
    EXPECT_NEAR(c, std::cos(double(x)), 3e-7) << k;
  }
}

TEST(Log2Exp2, WithinAFewUlpOfLibmAndExactAtPowersOfTwo) {
  double worst_log = 0, worst_exp = 0;
  for (int i = 1; i <= 200000; ++i) {
    const double x = std::ldexp(static_cast<double>(i) * 0.61803398874989, -(i % 60));
    const double ref = std::log2(x);
    if (ref != 0) worst_log = std::max(worst_log, std::fabs(Log2(x) - ref) / std::fabs(ref));
    const double y = static_cast<double>(i - 100000) * 3e-4;  // [-30, 30]
    worst_exp = std::max(worst_exp, std::fabs(Exp2(y) - std::exp2(y)) / std::exp2(y));
  }
  EXPECT_LT(worst_log, 1e-15);
  EXPECT_LT(worst_exp, 1e-15);
  for (int e = -60; e <= 60; ++e) {
    EXPECT_EQ(Log2(std::ldexp(1.0, e)), e);
    EXPECT_EQ(Exp2(e), std::ldexp(1.0, e));
  }
}

}  // namespace
}  // namespace cugym
