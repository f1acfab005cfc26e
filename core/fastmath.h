// sin and cos in float32 with the same bits on every back end.
//
// Library sinf/cosf differ between glibc and CUDA (and between CPU code paths), which would
// make CPU and GPU trajectories drift apart. These use only +, -, *, floor and conversions,
// so with FMA contraction off (cugym_strict_fp) they round identically everywhere, and they
// vectorize. Cody-Waite reduction by pi/2 in three parts, then Cephes' single-precision
// minimax polynomials on [-pi/4, pi/4]: about 1 ulp for |x| < 1e4 (envs stay far below);
// meaningless beyond |x| ~ 6e6.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/macros.h"

namespace cugym {

CUGYM_HD CUGYM_FORCEINLINE void SinCos(float x, float* sin_out, float* cos_out) {
  constexpr float kTwoOverPi = 0.636619772367581343f;
  constexpr float kPiOver2A = 1.5703125f;                // exact in 9 bits
  constexpr float kPiOver2B = 4.837512969970703125e-4f;  // exact in 12 bits
  constexpr float kPiOver2C = 7.54978995489188216e-8f;
  // Nearest quadrant without calls or comparisons (floorf, or a float compare under the
  // default -ftrapping-math, keeps GCC from vectorizing the caller's loop): adding and
  // subtracting 1.5 * 2^23 rounds to an integer for |y| < 2^22. Only q mod 4 is needed, taken
  // in float so the int conversion is always in range.
  constexpr float kRound = 12582912.0f;
  const float y = x * kTwoOverPi;
  const float fq = (y + kRound) - kRound;
  const int q = static_cast<int>(fq - 4.0f * ((fq * 0.25f + kRound) - kRound));  // in [-2, 2]
  float r = ((x - fq * kPiOver2A) - fq * kPiOver2B) - fq * kPiOver2C;
  float r2 = r * r;
  float s = r + r * r2 * ((-1.9515295891e-4f * r2 + 8.3321608736e-3f) * r2 - 1.6666654611e-1f);
  float c =
      1.0f - 0.5f * r2 + r2 * r2 * ((2.443315711809948e-5f * r2 - 1.388731625493765e-3f) * r2 + 4.166664568298827e-2f);
  // Quadrant q: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
  bool swap = (q & 1) != 0;
  float sin_v = swap ? c : s;
  float cos_v = swap ? s : c;
  *sin_out = (q & 2) != 0 ? -sin_v : sin_v;
  *cos_out = ((q + 1) & 2) != 0 ? -cos_v : cos_v;
}

// floor(x) for |x| < 2^22 without a library call (the same bits on every back end).
CUGYM_HD CUGYM_FORCEINLINE float FloorF(float x) {
  constexpr float kRound = 12582912.0f;   // 1.5 * 2^23
  const float r = (x + kRound) - kRound;  // x rounded to an integer
  return r > x ? r - 1.0f : r;
}

// min(max(x, low), high), as NumPy's clip and Gymnasium's bound. Two flat selects rather than
// nested ones, which GCC does not if-convert (the caller's loop would not vectorize).
CUGYM_HD CUGYM_FORCEINLINE float Clip(float x, float low, float high) {
  x = x < low ? low : x;
  return x > high ? high : x;
}

// log2(x) and 2^y in double with the same bits on every back end, for the few places where a
// floor of a power must agree between CPU and GPU (CUDA's pow and glibc's are each within an ulp
// or so, but not the same ulp, which moves floor(pow(...)) at integer boundaries). Only +, -, *,
// / and bit operations, so with contraction off (cugym_strict_fp) they round identically.
// Relative error about 2e-16 (a few ulps); exact at powers of two.

// x must be a positive normal double.
CUGYM_HD inline double Log2(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // mantissa in [1, 2)
  double f;
  std::memcpy(&f, &bits, sizeof f);
  if (f > 1.4142135623730951) {  // into [sqrt(1/2), sqrt(2)): |s| below 0.172
    f *= 0.5;
    ++exponent;
  }
  // ln f = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (f - 1) / (f + 1); s^22 < 2e-17.
  const double s = (f - 1.0) / (f + 1.0), s2 = s * s;
  double series = 1.0 / 21.0;
  for (int k = 9; k >= 0; --k) series = 1.0 / (2 * k + 1) + s2 * series;
  constexpr double kTwoOverLn2 = 2.8853900817779268;  // 2 / ln 2
  return static_cast<double>(exponent) + kTwoOverLn2 * s * series;
}

// |y| must stay below 1022.
CUGYM_HD inline double Exp2(double y) {
  const int k = static_cast<int>(y + (y >= 0.0 ? 0.5 : -0.5));         // nearest integer
  const double t = (y - static_cast<double>(k)) * 0.6931471805599453;  // |t| <= ln(2) / 2
  // e^t by Taylor to t^16 / 16!: the first term left out is below 1e-20.
  double e = 1.0;
  for (int j = 16; j >= 1; --j) e = 1.0 + t * e / static_cast<double>(j);
  const uint64_t scale_bits = static_cast<uint64_t>(k + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return e * scale;
}

}  // namespace cugym
