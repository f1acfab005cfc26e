// Canvas on an SDL_Renderer (a window's or an offscreen surface's), with a viewport so several
// envs can be tiled in one frame. Internal to render/: the public classes hide SDL.
#pragma once

#include <SDL.h>

#include <string>

#include "core/canvas.h"

typedef struct _TTF_Font TTF_Font;

namespace cugym {

class SdlCanvas final : public Canvas {
 public:
  // Does not own the renderer or the font (null: no text).
  SdlCanvas(SDL_Renderer* renderer, int width, int height, TTF_Font* font);

  // Later drawing goes to the rectangle at pixel (x, y) (from the top-left) of size w x h,
  // whose bottom-left is the canvas origin.
  void SetViewport(int x, int y, int w, int h);

  int width() const override { return view_w_; }
  int height() const override { return view_h_; }
  void Clear(Color color) override;
  void FillPolygon(const Vec2* points, int count, Color color) override;
  void Line(Vec2 from, Vec2 to, Color color) override;
  void FillCircle(Vec2 center, float radius, Color color) override;
  void Text(Vec2 at, const std::string& text, Color color) override;

 private:
  SDL_FPoint ToPixels(Vec2 p) const { return {view_x_ + p.x, view_y_ + static_cast<float>(view_h_ - 1) - p.y}; }

  SDL_Renderer* renderer_;
  TTF_Font* font_;
  int view_x_ = 0, view_y_ = 0, view_w_, view_h_;
};

// Opens the first font found (CUGYM_FONT, then DejaVu Sans in the usual places) at `size`
// points, or returns null when SDL2_ttf was not built in or no font is found.
TTF_Font* OpenHudFont(int size);
void CloseHudFont(TTF_Font* font);

}  // namespace cugym
