// LunarLander's frame offscreen: sky, ground, helipad flags, lander, legs and exhaust where
// Gymnasium's render() puts them (lunar_lander.py L667-789), drawn through the registry entry
// that `cugym watch` and `cugym record` use.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/registry.h"
#include "envs/box2d/lunar_lander.h"
#include "envs/builtin.h"
#include "render/image.h"
#include "render/surface.h"

namespace cugym {
namespace {

using namespace lunar_lander;

constexpr Color kWhite{255, 255, 255}, kBlack{0, 0, 0}, kBody{128, 102, 230}, kFlag{204, 204, 0};

int Row(double y) { return static_cast<int>(std::lround(399 - y)); }

bool Is(const Image& image, int x, int y, Color c) {
  const uint8_t* p = image.At(x, y);
  return p[0] == c.r && p[1] == c.g && p[2] == c.b;
}

// A flat state with flat terrain at 2 m (60 px, the pad at 3.3 m = 99 px) and the lander hovering
// upright at (10, 6) m = (300, 180) px with its legs hanging under it.
std::vector<float> Hovering(float main_power) {
  LunarLanderDraws draws;
  draws.heights.fill(2.0 / 0.99);  // smooth_y = 0.33 * 3 h = 2 m away from the pad
  LunarLanderWorld world;
  world.Reset(LunarLanderParams{}, draws);
  std::vector<float> flat(kStateDim);
  world.ToFlat(flat.data());
  const float lander[6] = {10.0f, 6.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  const float leg0[6] = {10.0f + 20.0f / 30, 6.0f - 18.0f / 30, 0.0f, 0.0f, 0.0f, 0.0f};
  const float leg1[6] = {10.0f - 20.0f / 30, 6.0f - 18.0f / 30, 0.0f, 0.0f, 0.0f, 0.0f};
  std::copy(lander, lander + 6, flat.begin() + kLander);
  std::copy(leg0, leg0 + 6, flat.begin() + kLeg0);
  std::copy(leg1, leg1 + 6, flat.begin() + kLeg1);
  flat[kMainPower] = main_power;
  flat[kSidePower] = 0.0f;
  return flat;
}

Image Draw(const std::vector<float>& flat) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  const EnvEntry& entry = registry.Get("LunarLander-v3");
  OffscreenSurface surface(entry.spec.render_width, entry.spec.render_height);
  entry.draw(flat.data(), surface.canvas());
  return surface.Read();
}

TEST(LunarLanderDraw, SkyGroundFlagsLanderAndLegs) {
  const Image image = Draw(Hovering(0.0f));
  ASSERT_EQ(image.width, 600);
  ASSERT_EQ(image.height, 400);
  EXPECT_TRUE(Is(image, 30, Row(390), kBlack));  // sky up to the top
  EXPECT_TRUE(Is(image, 30, Row(30), kWhite));   // ground under the 60 px terrain
  EXPECT_TRUE(Is(image, 30, Row(70), kBlack));
  EXPECT_TRUE(Is(image, 300, Row(90), kWhite));  // under the pad (99 px)
  EXPECT_TRUE(Is(image, 300, Row(110), kBlack));
  EXPECT_TRUE(Is(image, 240, Row(125), kWhite));  // flag poles at 240 and 360 px, 100..150 px
  EXPECT_TRUE(Is(image, 360, Row(125), kWhite));
  EXPECT_TRUE(Is(image, 245, Row(145), kFlag));  // flags: (x, 150) (x, 140) (x + 25, 145)
  EXPECT_TRUE(Is(image, 365, Row(145), kFlag));
  EXPECT_TRUE(Is(image, 300, Row(185), kBody));   // the hull: -17..17 x -10..17 px about (300, 180)
  EXPECT_TRUE(Is(image, 300, Row(165), kBlack));  // below it, no engine
  EXPECT_TRUE(Is(image, 320, Row(162), kBody));   // legs: 4 x 16 px boxes 20 px out, 18 px down
  EXPECT_TRUE(Is(image, 280, Row(162), kBody));
  EXPECT_TRUE(Is(image, 326, Row(162), kBlack));
}

TEST(LunarLanderDraw, MainEngineExhaustBelowTheNozzle) {
  const Image image = Draw(Hovering(1.0f));
  const uint8_t* p = image.At(300, Row(163));
  EXPECT_GT(p[0], 100);  // a particle in Gymnasium's reddish colours, (255,108,108) fading
  EXPECT_LT(2 * p[1], p[0]);
  EXPECT_EQ(p[1], p[2]);
  EXPECT_TRUE(Is(image, 300, Row(185), kBody));
}

}  // namespace
}  // namespace cugym
