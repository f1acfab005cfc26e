// The drawing interface envs render through: envs never see SDL (render/ implements it), as
// Box2D's debug-draw callbacks keep its physics free of graphics.
//
// Coordinates are pixels with y up and the origin at the bottom-left of the env's frame
// (spec.render_width x spec.render_height), as Gymnasium's pygame code draws before it flips the
// surface: pixel row = height - 1 - y.
#pragma once

#include <cstdint>
#include <string>

namespace cugym {

struct Color {
  uint8_t r, g, b;
};

struct Vec2 {
  float x, y;
};

class Canvas {
 public:
  virtual ~Canvas() = default;
  virtual int width() const = 0;
  virtual int height() const = 0;
  virtual void Clear(Color color) = 0;
  // A filled convex polygon.
  virtual void FillPolygon(const Vec2* points, int count, Color color) = 0;
  virtual void Line(Vec2 from, Vec2 to, Color color) = 0;
  virtual void FillCircle(Vec2 center, float radius, Color color) = 0;
  // Text with its baseline's left end at `at`; a canvas without fonts draws nothing.
  virtual void Text(Vec2 at, const std::string& text, Color color) {
    (void)at;
    (void)text;
    (void)color;
  }
};

}  // namespace cugym
