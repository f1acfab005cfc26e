// The offscreen frame `cugym record` draws on: an RGB image and the one offscreen Canvas
// (core/raster_canvas.h, the rasterizer Python's render() uses too), with a movable viewport so
// several envs can be tiled in one frame. Needs no SDL and no display.
#pragma once

#include <memory>

#include "core/canvas.h"
#include "core/raster_canvas.h"
#include "render/image.h"

namespace cugym {

class OffscreenSurface {
 public:
  // A width x height RGB frame, white until drawn on. Throws std::invalid_argument unless both
  // are positive.
  OffscreenSurface(int width, int height);
  OffscreenSurface(const OffscreenSurface&) = delete;
  OffscreenSurface& operator=(const OffscreenSurface&) = delete;

  Canvas& canvas() { return *canvas_; }
  // Drawing goes to the w x h rectangle whose top-left pixel is (x, y).
  void SetViewport(int x, int y, int w, int h) { canvas_->SetViewport(x, y, w, h); }
  // The frame as drawn so far (a view: valid while the surface lives, changed by later drawing).
  const Image& image() const { return image_; }
  // A copy of the frame.
  Image Read() const { return image_; }

 private:
  Image image_;
  std::unique_ptr<RasterCanvas> canvas_;  // draws into image_.rgb, which never reallocates
};

}  // namespace cugym
