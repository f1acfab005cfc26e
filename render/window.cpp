// Window: an SDL window showing an OffscreenSurface's pixels through a streaming texture, with
// the heads-up text drawn by SDL2_ttf (when built in and a font is found).
#include "render/window.h"

#include <SDL.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "render/surface.h"

#ifdef CUGYM_HAVE_SDL2_TTF
#include <SDL_ttf.h>
#else
typedef struct _TTF_Font TTF_Font;
#endif

namespace cugym {
namespace {

// Opens the first font found (CUGYM_FONT, then DejaVu Sans in the usual places) at `size`
// points, or returns null when SDL2_ttf was not built in or no font is found.
TTF_Font* OpenHudFont(int size) {
#ifdef CUGYM_HAVE_SDL2_TTF
  if (TTF_WasInit() == 0 && TTF_Init() != 0) return nullptr;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CUGYM_FONT")) candidates.push_back(env);
  for (const char* path : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf",
                           "/usr/share/fonts/dejavu/DejaVuSans.ttf"}) {
    candidates.push_back(path);
  }
  for (const std::string& path : candidates) {
    if (TTF_Font* font = TTF_OpenFont(path.c_str(), size)) return font;
  }
  return nullptr;
#else
  (void)size;
  return nullptr;
#endif
}

void CloseHudFont(TTF_Font* font) {
#ifdef CUGYM_HAVE_SDL2_TTF
  if (font != nullptr) TTF_CloseFont(font);
#else
  (void)font;
#endif
}

struct TextItem {
  int x, y;  // the baseline's left end, in window pixels from the top-left
  std::string text;
  Color color;
};

// Forwards shapes to the offscreen canvas and keeps text for Present().
class WindowCanvas final : public Canvas {
 public:
  explicit WindowCanvas(OffscreenSurface* surface) : surface_(surface) {}

  void SetViewport(int x, int y, int w, int h) {
    surface_->SetViewport(x, y, w, h);
    view_x_ = x;
    view_y_ = y;
  }
  std::vector<TextItem>& texts() { return texts_; }

  int width() const override { return surface_->canvas().width(); }
  int height() const override { return surface_->canvas().height(); }
  void Clear(Color color) override { surface_->canvas().Clear(color); }
  void FillPolygon(const Vec2* points, int count, Color color) override {
    surface_->canvas().FillPolygon(points, count, color);
  }
  void Line(Vec2 from, Vec2 to, Color color) override { surface_->canvas().Line(from, to, color); }
  void FillCircle(Vec2 center, float radius, Color color) override {
    surface_->canvas().FillCircle(center, radius, color);
  }
  void Text(Vec2 at, const std::string& text, Color color) override {
    texts_.push_back({view_x_ + static_cast<int>(at.x), view_y_ + static_cast<int>(height() - 1 - at.y), text, color});
  }

 private:
  OffscreenSurface* surface_;
  int view_x_ = 0, view_y_ = 0;
  std::vector<TextItem> texts_;
};

}  // namespace

struct Window::Impl {
  SDL_Window* window = nullptr;
  SDL_Renderer* renderer = nullptr;
  SDL_Texture* texture = nullptr;
  TTF_Font* font = nullptr;
  std::unique_ptr<OffscreenSurface> surface;
  std::unique_ptr<WindowCanvas> canvas;
};

Window::Window(const std::string& title, int width, int height, int hud_font_size) : impl_(std::make_unique<Impl>()) {
  impl_->surface = std::make_unique<OffscreenSurface>(width, height);
  impl_->canvas = std::make_unique<WindowCanvas>(impl_->surface.get());
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((display == nullptr || *display == '\0') && (wayland == nullptr || *wayland == '\0'))
    throw std::runtime_error("no display (DISPLAY is not set); use `cugym record` to render to files instead");
  if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0)
    throw std::runtime_error(std::string("cannot open a window (") + SDL_GetError() +
                             "); use `cugym record` to render to files instead");
  impl_->window = SDL_CreateWindow(title.c_str(), SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, width, height, 0);
  if (impl_->window != nullptr) impl_->renderer = SDL_CreateRenderer(impl_->window, -1, 0);
  if (impl_->renderer != nullptr)
    impl_->texture =
        SDL_CreateTexture(impl_->renderer, SDL_PIXELFORMAT_RGB24, SDL_TEXTUREACCESS_STREAMING, width, height);
  if (impl_->texture == nullptr) {
    std::string error = SDL_GetError();
    if (impl_->renderer != nullptr) SDL_DestroyRenderer(impl_->renderer);
    if (impl_->window != nullptr) SDL_DestroyWindow(impl_->window);
    SDL_QuitSubSystem(SDL_INIT_VIDEO);
    throw std::runtime_error("cannot open a window (" + error + "); use `cugym record` to render to files instead");
  }
  if (hud_font_size > 0) impl_->font = OpenHudFont(hud_font_size);
}

Window::~Window() {
  CloseHudFont(impl_->font);
  SDL_DestroyTexture(impl_->texture);
  SDL_DestroyRenderer(impl_->renderer);
  SDL_DestroyWindow(impl_->window);
  SDL_QuitSubSystem(SDL_INIT_VIDEO);
}

Canvas& Window::canvas() { return *impl_->canvas; }
void Window::SetViewport(int x, int y, int w, int h) { impl_->canvas->SetViewport(x, y, w, h); }
bool Window::has_text() const { return impl_->font != nullptr; }
void Window::SetTitle(const std::string& title) { SDL_SetWindowTitle(impl_->window, title.c_str()); }

void Window::Present() {
  const Image& image = impl_->surface->image();
  SDL_UpdateTexture(impl_->texture, nullptr, image.rgb.data(), image.width * 3);
  SDL_RenderCopy(impl_->renderer, impl_->texture, nullptr, nullptr);
#ifdef CUGYM_HAVE_SDL2_TTF
  for (const TextItem& item : impl_->canvas->texts()) {
    if (impl_->font == nullptr || item.text.empty()) continue;
    const Color c = item.color;
    SDL_Surface* text = TTF_RenderUTF8_Blended(impl_->font, item.text.c_str(), SDL_Color{c.r, c.g, c.b, 255});
    if (text == nullptr) continue;
    if (SDL_Texture* texture = SDL_CreateTextureFromSurface(impl_->renderer, text)) {
      SDL_Rect dst{item.x, item.y - text->h, text->w, text->h};
      SDL_RenderCopy(impl_->renderer, texture, nullptr, &dst);
      SDL_DestroyTexture(texture);
    }
    SDL_FreeSurface(text);
  }
#endif
  impl_->canvas->texts().clear();
  SDL_RenderPresent(impl_->renderer);
}

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
