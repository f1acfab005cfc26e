// CPU rasterizer for Canvas (see raster_canvas.h). Canvas coordinates have y up; the viewport's
// row r holds y = height - 1 - r. Every loop below runs over viewport pixels (view_w_ x view_h_),
// and Put offsets them into the image.
#include "core/raster_canvas.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace cugym {

RasterCanvas::RasterCanvas(uint8_t* rgb, int width, int height)
    : rgb_(rgb), image_w_(width), image_h_(height), view_w_(width), view_h_(height) {
  if (rgb == nullptr || width <= 0 || height <= 0)
    throw std::invalid_argument("RasterCanvas: bad image " + std::to_string(width) + "x" + std::to_string(height));
}

void RasterCanvas::SetViewport(int x, int y, int w, int h) {
  if (x < 0 || y < 0 || w <= 0 || h <= 0 || x + w > image_w_ || y + h > image_h_)
    throw std::invalid_argument("RasterCanvas: viewport " + std::to_string(w) + "x" + std::to_string(h) + " at (" +
                                std::to_string(x) + ", " + std::to_string(y) + ") is outside the " +
                                std::to_string(image_w_) + "x" + std::to_string(image_h_) + " image");
  view_x_ = x;
  view_y_ = y;
  view_w_ = w;
  view_h_ = h;
}

void RasterCanvas::Put(int col, int row, Color color) {
  if (col < 0 || row < 0 || col >= view_w_ || row >= view_h_) return;
  uint8_t* p = rgb_ + (static_cast<std::size_t>(view_y_ + row) * image_w_ + view_x_ + col) * 3;
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void RasterCanvas::Clear(Color color) {
  for (int row = 0; row < view_h_; ++row)
    for (int col = 0; col < view_w_; ++col) Put(col, row, color);
}

// A pixel is inside when its centre lies on the inner side of every edge (either winding).
void RasterCanvas::FillPolygon(const Vec2* points, int count, Color color) {
  if (count < 3) return;
  float x0 = points[0].x, x1 = x0, y0 = points[0].y, y1 = y0;
  for (int k = 1; k < count; ++k) {
    x0 = std::min(x0, points[k].x);
    x1 = std::max(x1, points[k].x);
    y0 = std::min(y0, points[k].y);
    y1 = std::max(y1, points[k].y);
  }
  // Pixel (col, row) has its centre at canvas (col + 0.5, height - 1 - row - 0.5).
  const int col0 = std::max(0, static_cast<int>(std::floor(x0))),
            col1 = std::min(view_w_ - 1, static_cast<int>(std::ceil(x1)));
  const int row0 = std::max(0, static_cast<int>(std::floor(view_h_ - 1 - y1))),
            row1 = std::min(view_h_ - 1, static_cast<int>(std::ceil(view_h_ - 1 - y0)));
  float area = 0;
  for (int k = 0; k < count; ++k) {
    const Vec2 a = points[k], b = points[(k + 1) % count];
    area += a.x * b.y - b.x * a.y;
  }
  if (area == 0) return;
  const float sign = area > 0 ? 1.0f : -1.0f;
  for (int row = row0; row <= row1; ++row) {
    const float y = static_cast<float>(view_h_ - 1 - row) - 0.5f;
    for (int col = col0; col <= col1; ++col) {
      const float x = static_cast<float>(col) + 0.5f;
      bool inside = true;
      for (int k = 0; k < count && inside; ++k) {
        const Vec2 a = points[k], b = points[(k + 1) % count];
        inside = sign * ((b.x - a.x) * (y - a.y) - (b.y - a.y) * (x - a.x)) >= 0;
      }
      if (inside) Put(col, row, color);
    }
  }
}

// One pixel wide, a pixel per step along the longer axis.
void RasterCanvas::Line(Vec2 from, Vec2 to, Color color) {
  const float dx = to.x - from.x, dy = to.y - from.y;
  const int steps = std::max(1, static_cast<int>(std::ceil(std::max(std::fabs(dx), std::fabs(dy)))));
  for (int k = 0; k <= steps; ++k) {
    const float t = static_cast<float>(k) / static_cast<float>(steps);
    const float x = from.x + t * dx, y = from.y + t * dy;
    Put(static_cast<int>(std::floor(x)), static_cast<int>(std::floor(static_cast<float>(view_h_ - 1) - y)), color);
  }
}

void RasterCanvas::FillCircle(Vec2 center, float radius, Color color) {
  const int col0 = std::max(0, static_cast<int>(std::floor(center.x - radius)));
  const int col1 = std::min(view_w_ - 1, static_cast<int>(std::ceil(center.x + radius)));
  const float row_c = static_cast<float>(view_h_ - 1) - center.y;
  const int row0 = std::max(0, static_cast<int>(std::floor(row_c - radius)));
  const int row1 = std::min(view_h_ - 1, static_cast<int>(std::ceil(row_c + radius)));
  for (int row = row0; row <= row1; ++row) {
    const float y = static_cast<float>(view_h_ - 1 - row) - 0.5f;
    for (int col = col0; col <= col1; ++col) {
      const float x = static_cast<float>(col) + 0.5f;
      if ((x - center.x) * (x - center.x) + (y - center.y) * (y - center.y) <= radius * radius) Put(col, row, color);
    }
  }
}

}  // namespace cugym
