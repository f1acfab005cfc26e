// The CPU rasterizer: shapes land on the pixels whose centres they cover, y up, clipped.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/raster_canvas.h"
#include "core/registry.h"
#include "envs/builtin.h"

namespace cugym {
namespace {

constexpr Color kWhite{255, 255, 255}, kRed{255, 0, 0};

struct Frame {
  int w, h;
  std::vector<uint8_t> rgb;
  Frame(int w_, int h_) : w(w_), h(h_), rgb(static_cast<std::size_t>(w_) * h_ * 3, 7) {}
  bool Red(int col, int row) const {
    const uint8_t* p = &rgb[(static_cast<std::size_t>(row) * w + col) * 3];
    return p[0] == 255 && p[1] == 0 && p[2] == 0;
  }
  int CountRed() const {
    int n = 0;
    for (int r = 0; r < h; ++r)
      for (int c = 0; c < w; ++c) n += Red(c, r);
    return n;
  }
};

TEST(RasterCanvas, ClearFillsEveryPixel) {
  Frame f(5, 4);
  RasterCanvas canvas(f.rgb.data(), f.w, f.h);
  canvas.Clear(kWhite);
  for (uint8_t v : f.rgb) EXPECT_EQ(v, 255);
}

TEST(RasterCanvas, PolygonCoversPixelCentresWithYUp) {
  Frame f(10, 10);
  RasterCanvas canvas(f.rgb.data(), f.w, f.h);
  canvas.Clear(kWhite);
  // The square x in [2, 5], y in [0, 3] (either winding): 3 x 3 pixels. As Gymnasium flips, y maps
  // to the image row height - 1 - y, so y in [0, 3] covers rows 6..8 (row 9 lies below y = 0).
  const Vec2 square[] = {{2, 0}, {5, 0}, {5, 3}, {2, 3}};
  canvas.FillPolygon(square, 4, kRed);
  EXPECT_EQ(f.CountRed(), 9);
  EXPECT_TRUE(f.Red(2, 8));  // bottom-left pixel of the square
  EXPECT_TRUE(f.Red(4, 6));
  EXPECT_FALSE(f.Red(5, 8));
  EXPECT_FALSE(f.Red(2, 5));
  EXPECT_FALSE(f.Red(2, 9));
  const Vec2 clockwise[] = {{2, 3}, {5, 3}, {5, 0}, {2, 0}};
  Frame g(10, 10);
  RasterCanvas other(g.rgb.data(), g.w, g.h);
  other.Clear(kWhite);
  other.FillPolygon(clockwise, 4, kRed);
  EXPECT_EQ(g.rgb, f.rgb);
}

TEST(RasterCanvas, ShapesOffTheFrameAreClipped) {
  Frame f(8, 8);
  RasterCanvas canvas(f.rgb.data(), f.w, f.h);
  canvas.Clear(kWhite);
  const Vec2 big[] = {{-100, -100}, {100, -100}, {100, 100}, {-100, 100}};
  canvas.FillPolygon(big, 4, kRed);
  canvas.FillCircle({-50, -50}, 3, kWhite);
  canvas.Line({-10, 4}, {20, 4}, kWhite);
  EXPECT_EQ(f.CountRed(), 8 * 7);  // one row became the white line
}

TEST(RasterCanvas, ViewportsOffsetAndClip) {
  Frame f(10, 6);
  RasterCanvas canvas(f.rgb.data(), f.w, f.h);
  canvas.Clear(kWhite);
  canvas.SetViewport(6, 1, 3, 4);  // columns 6..8, rows 1..4
  EXPECT_EQ(canvas.width(), 3);
  EXPECT_EQ(canvas.height(), 4);
  const Vec2 big[] = {{-100, -100}, {100, -100}, {100, 100}, {-100, 100}};
  canvas.FillPolygon(big, 4, kRed);
  EXPECT_EQ(f.CountRed(), 12);
  EXPECT_TRUE(f.Red(6, 1));
  EXPECT_TRUE(f.Red(8, 4));
  EXPECT_FALSE(f.Red(5, 1));
  EXPECT_FALSE(f.Red(6, 5));
  canvas.Clear(kWhite);
  canvas.Line({0.5f, 0.5f}, {2.5f, 0.5f}, kRed);  // viewport row 3 - 0.5, floored: image row 1 + 2
  EXPECT_EQ(f.CountRed(), 3);
  EXPECT_TRUE(f.Red(6, 3) && f.Red(8, 3));
  EXPECT_THROW(canvas.SetViewport(8, 0, 3, 1), std::invalid_argument);
}

TEST(RasterCanvas, CircleAndLine) {
  Frame f(21, 21);
  RasterCanvas canvas(f.rgb.data(), f.w, f.h);
  canvas.Clear(kWhite);
  canvas.FillCircle({10.5f, 10.5f}, 5.0f, kRed);
  const int disc = f.CountRed();
  EXPECT_NEAR(disc, 3.14159 * 25, 8);
  EXPECT_TRUE(f.Red(10, 10));
  canvas.Clear(kWhite);
  canvas.Line({0.5f, 0.5f}, {20.5f, 0.5f}, kRed);
  EXPECT_EQ(f.CountRed(), 21);
  for (int c = 0; c < 21; ++c) EXPECT_TRUE(f.Red(c, 19));  // y = 0.5: row 20 - 0.5, floored
}

TEST(RasterCanvas, EveryBuiltinEnvDrawsSomething) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  for (const EnvEntry& entry : registry.entries()) {
    if (!entry.draw) continue;
    const EnvSpec& spec = entry.spec;
    auto env = MakeVectorEnv(registry, spec.id, 1, Device::kCpu);
    env->Reset(3);
    Frame f(spec.render_width, spec.render_height);
    RasterCanvas canvas(f.rgb.data(), f.w, f.h);
    entry.draw(env->GetStates(0, 1).data(), canvas);
    int colours = 0;
    for (std::size_t k = 0; k + 2 < f.rgb.size(); k += 3)
      colours += f.rgb[k] != f.rgb[0] || f.rgb[k + 1] != f.rgb[1] || f.rgb[k + 2] != f.rgb[2];
    EXPECT_GT(colours, 100) << spec.id;
  }
}

}  // namespace
}  // namespace cugym
