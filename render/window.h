// The window of `cugym watch`, the only part of cugym that uses SDL (built where SDL2 is found).
// Frames are drawn on an OffscreenSurface, the same canvas as `cugym record` and Python's
// render(), and each Present() blits its pixels into the window; only the heads-up text is drawn
// by SDL2_ttf, on top. No SDL types here.
#pragma once

#include <memory>
#include <string>

#include "core/canvas.h"

namespace cugym {

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

  // Shapes go to the offscreen frame; Text is kept for Present() (when has_text()).
  Canvas& canvas();
  void SetViewport(int x, int y, int w, int h);
  // Whether Canvas::Text draws (SDL2_ttf and a font); otherwise put the HUD in the title.
  bool has_text() const;
  void SetTitle(const std::string& title);
  // Shows the frame, then the text drawn since the last Present().
  void Present();
  WindowInput Poll();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cugym
