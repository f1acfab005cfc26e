// The one offscreen Canvas: rasterizes into an RGB image in memory on the CPU, with no graphics
// library. Python's render(), `cugym record` (render/surface.h) and the window of `cugym watch`
// (which shows these pixels) all draw with it, so every front end gets the same pixels. Pixel
// centres are sampled (no anti-aliasing). It lives in core/ because it needs nothing, so the Python
// module and envs' tests use it without linking render/.
#pragma once

#include <cstdint>

#include "core/canvas.h"

namespace cugym {

class RasterCanvas final : public Canvas {
 public:
  // Draws into `rgb`: width * height * 3 bytes, rows top to bottom (Gymnasium's rgb_array
  // layout). Does not own it; starts with whatever is there (call Clear).
  RasterCanvas(uint8_t* rgb, int width, int height);

  // Later drawing goes to the w x h rectangle whose top-left pixel is (x, y) (the canvas origin is
  // its bottom-left) and is clipped to it, so several envs can be tiled in one image. The initial
  // viewport is the whole image. Throws std::invalid_argument for a rectangle outside the image.
  void SetViewport(int x, int y, int w, int h);

  int width() const override { return view_w_; }
  int height() const override { return view_h_; }
  void Clear(Color color) override;
  void FillPolygon(const Vec2* points, int count, Color color) override;
  void Line(Vec2 from, Vec2 to, Color color) override;
  void FillCircle(Vec2 center, float radius, Color color) override;

 private:
  // (col, row) in the viewport, row 0 at its top; outside it nothing is drawn.
  void Put(int col, int row, Color color);

  uint8_t* rgb_;
  int image_w_, image_h_;
  int view_x_ = 0, view_y_ = 0, view_w_, view_h_;
};

}  // namespace cugym
