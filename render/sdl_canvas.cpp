// Canvas on an SDL_Renderer: polygons and circles as triangle fans (SDL_RenderGeometry).
#include "render/sdl_canvas.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#ifdef CUGYM_HAVE_SDL2_TTF
#include <SDL_ttf.h>
#endif

namespace cugym {

SdlCanvas::SdlCanvas(SDL_Renderer* renderer, int width, int height, TTF_Font* font)
    : renderer_(renderer), font_(font), view_w_(width), view_h_(height) {}

void SdlCanvas::SetViewport(int x, int y, int w, int h) {
  view_x_ = x;
  view_y_ = y;
  view_w_ = w;
  view_h_ = h;
}

void SdlCanvas::Clear(Color color) {
  SDL_SetRenderDrawColor(renderer_, color.r, color.g, color.b, 255);
  SDL_Rect rect{view_x_, view_y_, view_w_, view_h_};
  SDL_RenderFillRect(renderer_, &rect);
}

void SdlCanvas::FillPolygon(const Vec2* points, int count, Color color) {
  if (count < 3) return;
  const SDL_Color c{color.r, color.g, color.b, 255};
  std::vector<SDL_Vertex> vertices;
  vertices.reserve(3 * (count - 2));
  const SDL_FPoint first = ToPixels(points[0]);
  for (int k = 1; k + 1 < count; ++k) {
    vertices.push_back({first, c, {0, 0}});
    vertices.push_back({ToPixels(points[k]), c, {0, 0}});
    vertices.push_back({ToPixels(points[k + 1]), c, {0, 0}});
  }
  SDL_RenderGeometry(renderer_, nullptr, vertices.data(), static_cast<int>(vertices.size()), nullptr, 0);
}

void SdlCanvas::Line(Vec2 from, Vec2 to, Color color) {
  SDL_SetRenderDrawColor(renderer_, color.r, color.g, color.b, 255);
  const SDL_FPoint a = ToPixels(from), b = ToPixels(to);
  SDL_RenderDrawLineF(renderer_, a.x, a.y, b.x, b.y);
}

void SdlCanvas::FillCircle(Vec2 center, float radius, Color color) {
  constexpr int kSegments = 32;
  Vec2 points[kSegments];
  for (int k = 0; k < kSegments; ++k) {
    const float angle = 6.28318530718f * static_cast<float>(k) / kSegments;
    points[k] = {center.x + radius * std::cos(angle), center.y + radius * std::sin(angle)};
  }
  FillPolygon(points, kSegments, color);
}

void SdlCanvas::Text(Vec2 at, const std::string& text, Color color) {
#ifdef CUGYM_HAVE_SDL2_TTF
  if (font_ == nullptr || text.empty()) return;
  SDL_Surface* surface = TTF_RenderUTF8_Blended(font_, text.c_str(), SDL_Color{color.r, color.g, color.b, 255});
  if (surface == nullptr) return;
  if (SDL_Texture* texture = SDL_CreateTextureFromSurface(renderer_, surface)) {
    const SDL_FPoint p = ToPixels(at);
    SDL_Rect dst{static_cast<int>(p.x), static_cast<int>(p.y) - surface->h, surface->w, surface->h};
    SDL_RenderCopy(renderer_, texture, nullptr, &dst);
    SDL_DestroyTexture(texture);
  }
  SDL_FreeSurface(surface);
#else
  (void)at;
  (void)text;
  (void)color;
#endif
}

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

}  // namespace cugym
