// Where frames are drawn: an offscreen image (no display needed) or a window. Both hand out a
// Canvas with a movable viewport, so several envs can be tiled in one frame. No SDL types here.
#pragma once

#include <memory>
#include <string>

#include "core/canvas.h"
#include "render/image.h"

namespace cugym {

class OffscreenSurface {
 public:
  // A width x height RGB frame, white until drawn on. `hud_font_size` > 0 loads a font for
  // Canvas::Text when SDL2_ttf and a font are available.
  OffscreenSurface(int width, int height, int hud_font_size = 0);
  ~OffscreenSurface();
  OffscreenSurface(const OffscreenSurface&) = delete;
  OffscreenSurface& operator=(const OffscreenSurface&) = delete;

  Canvas& canvas();
  // Drawing goes to the w x h rectangle whose top-left pixel is (x, y).
  void SetViewport(int x, int y, int w, int h);
  Image Read() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What the user asked for in the window since the last poll.
struct WindowInput {
  bool quit = false;          // window closed, q or Esc
  bool toggle_pause = false;  // space
  bool single_step = false;   // right arrow
  bool reset = false;         // r
  int speed_change = 0;       // +1 per '+', -1 per '-'
};

class Window {
 public:
  // Throws std::runtime_error with a one-line reason when no display is available.
  Window(const std::string& title, int width, int height, int hud_font_size);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  Canvas& canvas();
  void SetViewport(int x, int y, int w, int h);
  // Whether Canvas::Text draws (SDL2_ttf and a font); otherwise put the HUD in the title.
  bool has_text() const;
  void SetTitle(const std::string& title);
  void Present();
  WindowInput Poll();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cugym
