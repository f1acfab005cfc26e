// sin and cos in float32 with the same bits on every back end.
//
// Library sinf/cosf differ between glibc and CUDA (and between CPU code paths), which would
// make CPU and GPU trajectories drift apart. These use only +, -, *, floor and conversions,
// so with FMA contraction off (cugym_strict_fp) they round identically everywhere, and they
// vectorize. Cody-Waite reduction by pi/2 in three parts, then Cephes' single-precision
// minimax polynomials on [-pi/4, pi/4]: about 1 ulp for |x| < 1e4 (envs stay far below);
// meaningless beyond |x| ~ 6e6.
#pragma once

#include "core/macros.h"

namespace cugym {

CUGYM_HD CUGYM_FORCEINLINE void SinCos(float x, float* sin_out, float* cos_out) {
  constexpr float kTwoOverPi = 0.636619772367581343f;
  constexpr float kPiOver2A = 1.5703125f;               // exact in 9 bits
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
  float c = 1.0f - 0.5f * r2 +
            r2 * r2 * ((2.443315711809948e-5f * r2 - 1.388731625493765e-3f) * r2 + 4.166664568298827e-2f);
  // Quadrant q: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
  bool swap = (q & 1) != 0;
  float sin_v = swap ? c : s;
  float cos_v = swap ? s : c;
  *sin_out = (q & 2) != 0 ? -sin_v : sin_v;
  *cos_out = ((q + 1) & 2) != 0 ? -cos_v : cos_v;
}

// floor(x) for |x| < 2^22 without a library call (the same bits on every back end).
CUGYM_HD CUGYM_FORCEINLINE float FloorF(float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float r = (x + kRound) - kRound;  // x rounded to an integer
  return r > x ? r - 1.0f : r;
}

// min(max(x, low), high), as NumPy's clip and Gymnasium's bound. Two flat selects rather than
// nested ones, which GCC does not if-convert (the caller's loop would not vectorize).
CUGYM_HD CUGYM_FORCEINLINE float Clip(float x, float low, float high) {
  x = x < low ? low : x;
  return x > high ? high : x;
}

}  // namespace cugym
