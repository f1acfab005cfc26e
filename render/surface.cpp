// OffscreenSurface (SDL software renderer on a surface) and Window (SDL window and renderer).
#include "render/surface.h"

#include <SDL.h>

#include <cstdlib>
#include <stdexcept>

#include "render/sdl_canvas.h"

namespace cugym {

struct OffscreenSurface::Impl {
  SDL_Surface* surface = nullptr;
  SDL_Renderer* renderer = nullptr;
  TTF_Font* font = nullptr;
  std::unique_ptr<SdlCanvas> canvas;
};

OffscreenSurface::OffscreenSurface(int width, int height, int hud_font_size) : impl_(std::make_unique<Impl>()) {
  if (width <= 0 || height <= 0) throw std::invalid_argument("offscreen frame needs a positive size");
  impl_->surface = SDL_CreateRGBSurfaceWithFormat(0, width, height, 32, SDL_PIXELFORMAT_RGBA32);
  if (impl_->surface == nullptr) throw std::runtime_error(std::string("SDL_CreateRGBSurface: ") + SDL_GetError());
  impl_->renderer = SDL_CreateSoftwareRenderer(impl_->surface);
  if (impl_->renderer == nullptr) {
    SDL_FreeSurface(impl_->surface);
    throw std::runtime_error(std::string("SDL_CreateSoftwareRenderer: ") + SDL_GetError());
  }
  if (hud_font_size > 0) impl_->font = OpenHudFont(hud_font_size);
  impl_->canvas = std::make_unique<SdlCanvas>(impl_->renderer, width, height, impl_->font);
  impl_->canvas->Clear({255, 255, 255});
}

OffscreenSurface::~OffscreenSurface() {
  CloseHudFont(impl_->font);
  SDL_DestroyRenderer(impl_->renderer);
  SDL_FreeSurface(impl_->surface);
}

Canvas& OffscreenSurface::canvas() { return *impl_->canvas; }

void OffscreenSurface::SetViewport(int x, int y, int w, int h) { impl_->canvas->SetViewport(x, y, w, h); }

Image OffscreenSurface::Read() const {
  SDL_RenderFlush(impl_->renderer);
  const SDL_Surface* s = impl_->surface;
  Image image;
  image.width = s->w;
  image.height = s->h;
  image.rgb.resize(static_cast<std::size_t>(s->w) * s->h * 3);
  for (int y = 0; y < s->h; ++y) {
    const uint8_t* row = static_cast<const uint8_t*>(s->pixels) + static_cast<std::size_t>(y) * s->pitch;
    for (int x = 0; x < s->w; ++x) {
      for (int c = 0; c < 3; ++c) image.rgb[(static_cast<std::size_t>(y) * s->w + x) * 3 + c] = row[x * 4 + c];
    }
  }
  return image;
}

struct Window::Impl {
  SDL_Window* window = nullptr;
  SDL_Renderer* renderer = nullptr;
  TTF_Font* font = nullptr;
  std::unique_ptr<SdlCanvas> canvas;
};

Window::Window(const std::string& title, int width, int height, int hud_font_size) : impl_(std::make_unique<Impl>()) {
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((display == nullptr || *display == '\0') && (wayland == nullptr || *wayland == '\0'))
    throw std::runtime_error("no display (DISPLAY is not set); use `cugym record` to render to files instead");
  if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0)
    throw std::runtime_error(std::string("cannot open a window (") + SDL_GetError() +
                             "); use `cugym record` to render to files instead");
  impl_->window = SDL_CreateWindow(title.c_str(), SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, width, height, 0);
  if (impl_->window != nullptr) impl_->renderer = SDL_CreateRenderer(impl_->window, -1, 0);
  if (impl_->renderer == nullptr) {
    std::string error = SDL_GetError();
    if (impl_->window != nullptr) SDL_DestroyWindow(impl_->window);
    SDL_QuitSubSystem(SDL_INIT_VIDEO);
    throw std::runtime_error("cannot open a window (" + error + "); use `cugym record` to render to files instead");
  }
  if (hud_font_size > 0) impl_->font = OpenHudFont(hud_font_size);
  impl_->canvas = std::make_unique<SdlCanvas>(impl_->renderer, width, height, impl_->font);
}

Window::~Window() {
  CloseHudFont(impl_->font);
  SDL_DestroyRenderer(impl_->renderer);
  SDL_DestroyWindow(impl_->window);
  SDL_QuitSubSystem(SDL_INIT_VIDEO);
}

Canvas& Window::canvas() { return *impl_->canvas; }
void Window::SetViewport(int x, int y, int w, int h) { impl_->canvas->SetViewport(x, y, w, h); }
bool Window::has_text() const { return impl_->font != nullptr; }
void Window::SetTitle(const std::string& title) { SDL_SetWindowTitle(impl_->window, title.c_str()); }
void Window::Present() { SDL_RenderPresent(impl_->renderer); }

WindowInput Window::Poll() {
  WindowInput input;
  SDL_Event event;
  while (SDL_PollEvent(&event)) {
    if (event.type == SDL_QUIT) input.quit = true;
    if (event.type == SDL_WINDOWEVENT && event.window.event == SDL_WINDOWEVENT_CLOSE) input.quit = true;
    if (event.type != SDL_KEYDOWN) continue;
    switch (event.key.keysym.sym) {
      case SDLK_q:
      case SDLK_ESCAPE:
        input.quit = true;
        break;
      case SDLK_SPACE:
        input.toggle_pause = !input.toggle_pause;
        break;
      case SDLK_RIGHT:
        input.single_step = true;
        break;
      case SDLK_r:
        input.reset = true;
        break;
      case SDLK_PLUS:
      case SDLK_EQUALS:
      case SDLK_KP_PLUS:
        input.speed_change += 1;
        break;
      case SDLK_MINUS:
      case SDLK_KP_MINUS:
        input.speed_change -= 1;
        break;
      default:
        break;
    }
  }
  return input;
}

}  // namespace cugym
