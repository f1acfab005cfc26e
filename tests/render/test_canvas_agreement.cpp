// The two offscreen paths agree pixel for pixel: a `cugym record` frame (envs tiled on an
// OffscreenSurface through viewports, as cli/viewer.cpp draws them, then written as PNG) holds in
// each tile exactly the frame Python's render() returns for that env (a RasterCanvas of the env's
// size, as python/src/vector_env.cpp draws it), for every built-in env that draws, over several
// random steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "core/raster_canvas.h"
#include "core/registry.h"
#include "envs/builtin.h"
#include "render/image.h"
#include "render/surface.h"

namespace cugym {
namespace {

namespace fs = std::filesystem;

// Python's render(i): a fresh (h, w, 3) frame drawn by the env alone.
std::vector<uint8_t> PythonFrame(const EnvEntry& entry, const float* state) {
  const int w = entry.spec.render_width, h = entry.spec.render_height;
  std::vector<uint8_t> rgb(static_cast<std::size_t>(w) * h * 3, 0);
  RasterCanvas canvas(rgb.data(), w, h);
  entry.draw(state, canvas);
  return rgb;
}

std::vector<uint8_t> Tile(const Image& image, int x, int y, int w, int h) {
  std::vector<uint8_t> rgb;
  for (int row = y; row < y + h; ++row) rgb.insert(rgb.end(), image.At(x, row), image.At(x, row) + w * 3);
  return rgb;
}

TEST(CanvasAgreement, RecordTilesEqualPythonRenderFrames) {
  Registry registry;
  RegisterBuiltinEnvs(registry);
  const fs::path dir = fs::temp_directory_path() / "cugym_canvas_agreement";
  fs::remove_all(dir);
  fs::create_directories(dir);
  constexpr int kEnvs = 3, kColumns = 2, kRows = 2;  // cugym record --num-envs 3: a 2 x 2 grid
  int checked = 0;
  for (const EnvEntry& entry : registry.entries()) {
    if (!entry.draw) continue;
    const EnvSpec& spec = entry.spec;
    const int w = spec.render_width, h = spec.render_height;
    auto env = MakeVectorEnv(registry, spec.id, kEnvs, Device::kCpu);
    env->set_autoreset(false);
    env->Reset(5);
    OffscreenSurface surface(kColumns * w, kRows * h);
    for (int frame = 0; frame < 4; ++frame) {
      if (frame > 0) env->StepRandom(1);
      const std::vector<float> states = env->GetStates(0, kEnvs);
      for (int i = 0; i < kEnvs; ++i) {
        surface.SetViewport((i % kColumns) * w, (i / kColumns) * h, w, h);
        entry.draw(states.data() + i * spec.state_dim, surface.canvas());
      }
      Image recorded = surface.Read();
      if (CanReadPng()) {  // through the PNG file too, as record writes it
        const std::string path = (dir / (spec.id + ".png")).string();
        WritePng(path, recorded);
        recorded = ReadPng(path);
      }
      for (int i = 0; i < kEnvs; ++i) {
        const std::vector<uint8_t> python = PythonFrame(entry, states.data() + i * spec.state_dim);
        ASSERT_EQ(Tile(recorded, (i % kColumns) * w, (i / kColumns) * h, w, h), python)
            << spec.id << " env " << i << " frame " << frame;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 5 * 4 * kEnvs);  // the classic envs at least
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cugym
