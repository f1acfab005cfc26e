// SinCos against double-precision libm.
#include "core/fastmath.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cugym
