// `cugym record`: renders K envs offscreen (no display and no SDL needed) to PNG frames, a PNG, a
// GIF or an MP4, on the canvas Python's render() draws with (render/surface.h).
#include <iostream>
#include <stdexcept>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/viewer.h"
#include "render/frame_writer.h"
#include "render/surface.h"

namespace cugym::cli {

int RunRecord(const Registry& registry, int argc, char** argv) {
  Args args(
      "cugym record",
      {{"--env", "ID", "env id (default: the model's env, else CartPole-v1)", ""},
       {"--model", "FILE",
        "act greedily with this model (cugym train's model.safetensors, DQN, PQN or PPO); else at random", ""},
       {"--out", "PATH", "a folder (frame_00000.png ...), a .png (one frame), a .gif or an .mp4", ""},
       {"--episodes", "E", "stop after E finished episodes (default 1, or no limit when --max-frames is given)", ""},
       {"--max-frames", "M", "stop after M frames", "1000"},
       {"--num-envs", "K", "envs tiled in each frame (1..64)", "1"},
       {"--fps", "F", "frame rate of a GIF or MP4 (default: the env's render fps)", ""},
       {"--seed", "S", "seed", "0"},
       {"--device", "D", kDeviceHelp, "auto"},
       {"--force", "", "overwrite existing output", ""}},
      argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Renders episodes offscreen and writes the frames. GIF and MP4 are encoded by\n"
        "ffmpeg, which must be on the PATH. The first frame is the reset state.");
    return 0;
  }
  const std::string out = args.Required("--out");
  // 0: no limit on episodes.
  const int64_t episodes = args.Has("--episodes") ? args.Int("--episodes") : args.Has("--max-frames") ? 0 : 1;
  int64_t max_frames = args.Int("--max-frames");
  if (episodes < 0 || (args.Has("--episodes") && episodes == 0) || max_frames <= 0)
    throw std::invalid_argument("--episodes and --max-frames must be positive");
  const std::string id = args.String("--env");
  if (!id.empty()) registry.Get(id);
  const Device device = PickDevice(args.String("--device"));
  Viewer viewer(registry, id, args.String("--model"), args.Int("--num-envs"), device, args.Seed("--seed"));
  const double fps = args.Has("--fps") ? args.Double("--fps") : viewer.spec().render_fps;
  if (!(fps > 0)) throw std::invalid_argument("--fps must be positive");

  OffscreenSurface surface(viewer.frame_width(), viewer.frame_height());
  std::unique_ptr<FrameWriter> writer = OpenFrameWriter(out, args.Switch("--force"), static_cast<int>(fps + 0.5),
                                                        viewer.frame_width(), viewer.frame_height());
  max_frames = std::min(max_frames, writer->max_frames());
  auto set_viewport = [&](int x, int y, int w, int h) { surface.SetViewport(x, y, w, h); };
  for (int64_t frame = 0; frame < max_frames; ++frame) {
    if (frame > 0) viewer.Step();
    viewer.Draw(surface.canvas(), set_viewport, false);
    writer->Write(surface.image());
    if (episodes > 0 && viewer.finished_episodes() >= episodes) break;
  }
  writer->Finish();
  std::cout << "recorded " << writer->Describe() << "\n";
  return 0;
}

}  // namespace cugym::cli
