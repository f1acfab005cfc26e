// A Canvas that rasterizes into an RGB image in memory on the CPU, with no graphics library:
// what render() of the Python package draws with, where SDL2 may not be installed. Pixel centres
// are sampled (no anti-aliasing), as SDL's renderer fills geometry.
#pragma once

#include <cstdint>

#include "core/canvas.h"

namespace cugym {

class RasterCanvas final : public Canvas {
 public:
  // Draws into `rgb`: width * height * 3 bytes, rows top to bottom (Gymnasium's rgb_array
  // layout). Does not own it; starts with whatever is there (call Clear).
  RasterCanvas(uint8_t* rgb, int width, int height);

  int width() const override { return width_; }
  int height() const override { return height_; }
  void Clear(Color color) override;
  void FillPolygon(const Vec2* points, int count, Color color) override;
  void Line(Vec2 from, Vec2 to, Color color) override;
  void FillCircle(Vec2 center, float radius, Color color) override;

 private:
  void Put(int col, int row, Color color);

  uint8_t* rgb_;
  int width_, height_;
};

}  // namespace cugym
