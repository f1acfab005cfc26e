// Details of the classic-control envs that their Gymnasium traces may not reach often enough:
// Acrobot's angle wrap far from [-pi, pi] and MountainCar's stop at the left wall.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "envs/classic/acrobot.h"
#include "envs/classic/mountain_car.h"

namespace cugym {
namespace {

// Gymnasium's wrap as written there: subtract or add 2 pi while outside [-pi, pi].
float LoopWrap(float x) {
  while (x > Acrobot::kPi) x -= 2 * Acrobot::kPi;
  while (x < -Acrobot::kPi) x += 2 * Acrobot::kPi;
  return x;
}

TEST(Acrobot, WrapEqualsGymnasiumsLoopWithinSeventeenPi) {
  for (float x = -16.9f * Acrobot::kPi; x <= 16.9f * Acrobot::kPi; x += 0.0123f)
    ASSERT_EQ(Acrobot::Wrap(x), LoopWrap(x)) << x;
  for (float x : {Acrobot::kPi, -Acrobot::kPi, 0.0f, 3 * Acrobot::kPi + 1e-3f, -11 * Acrobot::kPi - 1e-3f})
    EXPECT_EQ(Acrobot::Wrap(x), LoopWrap(x)) << x;
  // Far outside, inf and nan: a value comes back, nothing hangs.
  EXPECT_TRUE(std::isfinite(Acrobot::Wrap(1e6f)));
  EXPECT_TRUE(std::isinf(Acrobot::Wrap(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(Acrobot::Wrap(std::numeric_limits<float>::quiet_NaN())));
}

TEST(MountainCar, StopsAtTheLeftWallOnlyWhenMovingLeft) {
  const MountainCar::Params p;
  Rng rng(0, 0, 0);
  const int32_t left = 0, right = 2;
  mountain_car::State s{-1.19f, -0.05f};
  MountainCar::Step(p, s, &left, rng);
  EXPECT_EQ(s.position, mountain_car::kMinPosition);
  EXPECT_EQ(s.velocity, 0.0f);
  // At the wall, pushing right: the velocity it gains is kept.
  MountainCar::Step(p, s, &right, rng);
  EXPECT_GT(s.velocity, 0.0f);
  // Away from the wall a leftward velocity is kept, clipped to the speed limit.
  mountain_car::State fast{-0.5f, -0.0699f};
  MountainCar::Step(p, fast, &left, rng);
  EXPECT_EQ(fast.velocity, -mountain_car::kMaxSpeed);
  EXPECT_FLOAT_EQ(fast.position, -0.5f - mountain_car::kMaxSpeed);
}

}  // namespace
}  // namespace cugym
