// LunarLander's frame as Gymnasium 1.4.0's render() draws it (gymnasium/envs/box2d/lunar_lander.py
// L667-789 in the gymnasium 1.4.0 wheel): 600x400, white ground under a black sky, the lander and
// its legs in (128,102,230) outlined in (77,77,128), the helipad flags. Gymnasium's particles are
// Box2D bodies, absent from the flat state; the engines that fired in the last step are drawn as
// a short trail of particles in Gymnasium's fresh-particle colours instead.
#include <cmath>

#include "envs/box2d/lunar_lander.h"

namespace cugym::lunar_lander {
namespace {

constexpr Color kWhite{255, 255, 255}, kBlack{0, 0, 0};
constexpr Color kBodyFill{128, 102, 230}, kBodyOutline{77, 77, 128}, kFlag{204, 204, 0};
constexpr float kLanderPoly[6][2] = {{-14, 17}, {-17, 0}, {-17, -10}, {17, -10}, {17, 0}, {14, 17}};

// A body's pose from the flat state, mapping body-local pixels to frame pixels.
struct Pose {
  float x, y, c, s;  // origin in pixels, cos and sin of the angle
  explicit Pose(const float* body)
      : x(body[0] * static_cast<float>(kScale)),
        y(body[1] * static_cast<float>(kScale)),
        c(std::cos(body[2])),
        s(std::sin(body[2])) {}
  Vec2 operator()(float lx, float ly) const { return {x + c * lx - s * ly, y + s * lx + c * ly}; }
};

void Outlined(Canvas& canvas, const Vec2* points, int count) {
  canvas.FillPolygon(points, count, kBodyFill);
  for (int k = 0; k < count; ++k) canvas.Line(points[k], points[(k + 1) % count], kBodyOutline);
}

// Particles fading from a fresh one's colour (ttl 0.85: (255,108,108)) as they move away from
// the nozzle at `from` along `dir` (pixels per particle).
void Exhaust(Canvas& canvas, Vec2 from, Vec2 dir, float power) {
  for (int k = 0; k < 4; ++k) {
    const float ttl = 0.85f - 0.15f * k;
    const Color color{static_cast<uint8_t>(255 * std::fmax(0.2f, 0.15f + ttl)),
                      static_cast<uint8_t>(255 * std::fmax(0.2f, 0.5f * ttl)),
                      static_cast<uint8_t>(255 * std::fmax(0.2f, 0.5f * ttl))};
    const float t = static_cast<float>(k) + 1.0f;
    canvas.FillCircle({from.x + dir.x * t, from.y + dir.y * t}, 2.0f + 1.5f * power, color);
  }
}

}  // namespace

void Draw(const float* flat, Canvas& canvas) {
  canvas.Clear(kWhite);
  const float h = static_cast<float>(kWorldH * kScale);
  for (int i = 0; i < kChunks - 1; ++i) {  // sky_polys: each terrain segment closed up to the top
    const float x1 = static_cast<float>(kWorldW / (kChunks - 1) * i * kScale);
    const float x2 = static_cast<float>(kWorldW / (kChunks - 1) * (i + 1) * kScale);
    const Vec2 sky[4] = {{x1, flat[kTerrain + i] * static_cast<float>(kScale)},
                         {x2, flat[kTerrain + i + 1] * static_cast<float>(kScale)},
                         {x2, h},
                         {x1, h}};
    canvas.FillPolygon(sky, 4, kBlack);
  }

  const Pose lander(flat + kLander);
  const float main_power = flat[kMainPower], side_power = flat[kSidePower];
  if (main_power > 0.0f) {  // the nozzle 4 px below the origin, exhaust pointing away from the tip
    Exhaust(canvas, lander(0.0f, -4.0f), {lander.s * 4.0f, -lander.c * 4.0f}, main_power);
  }
  if (side_power != 0.0f) {  // L596: 12 px to the side, up by 14 px along y and 17 px along x
    const float dir = side_power > 0.0f ? 1.0f : -1.0f;
    const Vec2 nozzle{lander.x - lander.c * dir * 12.0f - lander.s * 17.0f,
                      lander.y - lander.s * dir * 12.0f + lander.c * 14.0f};
    Exhaust(canvas, nozzle, {-lander.c * dir * 4.0f, -lander.s * dir * 4.0f}, std::fabs(side_power));
  }

  Vec2 hull[6];
  for (int k = 0; k < 6; ++k) hull[k] = lander(kLanderPoly[k][0], kLanderPoly[k][1]);
  Outlined(canvas, hull, 6);
  for (int leg = 0; leg < 2; ++leg) {
    const Pose pose(flat + (leg == 0 ? kLeg0 : kLeg1));
    const float w = static_cast<float>(kLegW), hh = static_cast<float>(kLegH);
    const Vec2 box[4] = {pose(-w, -hh), pose(w, -hh), pose(w, hh), pose(-w, hh)};
    Outlined(canvas, box, 4);
  }

  for (double pad_x : {kWorldW / (kChunks - 1) * (kChunks / 2 - 1), kWorldW / (kChunks - 1) * (kChunks / 2 + 1)}) {
    const float x = static_cast<float>(pad_x * kScale);
    const float y1 = static_cast<float>(kHelipadY * kScale), y2 = y1 + 50.0f;
    canvas.Line({x, y1}, {x, y2}, kWhite);
    const Vec2 flag[3] = {{x, y2}, {x, y2 - 10.0f}, {x + 25.0f, y2 - 5.0f}};
    canvas.FillPolygon(flag, 3, kFlag);
  }
}

}  // namespace cugym::lunar_lander
