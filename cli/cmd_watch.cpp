// `cugym watch`: plays K envs of a batch in a window, in real time at the env's render fps.
#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/viewer.h"
#include "render/frame_pacer.h"
#include "render/window.h"

namespace cugym::cli {

int RunWatch(const Registry& registry, int argc, char** argv) {
  Args args("cugym watch",
            {{"--env", "ID", "env id (default: the model's env, else CartPole-v1)", ""},
             {"--model", "FILE",
              "act greedily with this model (cugym train's model.safetensors, DQN, PQN or PPO); else at random", ""},
             {"--num-envs", "K", "envs tiled in the window (1..64)", "1"},
             {"--fps", "F", "frames per second (default: the env's render fps)", ""},
             {"--episodes", "E", "quit after E finished episodes (0: until closed)", "0"},
             {"--max-frames", "M", "quit after M frames (0: no limit)", "0"},
             {"--seed", "S", "seed", "0"},
             {"--device", "D", kDeviceHelp, "auto"}},
            argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Opens a window and plays the env in real time. Keys: space pause, right arrow\n"
        "single step while paused, r reset, + and - speed, q or Esc quit.");
    return 0;
  }
  const int64_t episodes = args.Int("--episodes");
  const int64_t max_frames = args.Int("--max-frames");
  if (episodes < 0 || max_frames < 0) throw std::invalid_argument("--episodes and --max-frames must be >= 0");
  const std::string id = args.String("--env");
  if (!id.empty()) registry.Get(id);
  const Device device = PickDevice(args.String("--device"));
  Viewer viewer(registry, id, args.String("--model"), args.Int("--num-envs"), device, args.Seed("--seed"));
  const double fps = args.Has("--fps") ? args.Double("--fps") : viewer.spec().render_fps;
  if (!(fps > 0)) throw std::invalid_argument("--fps must be positive");
  FramePacer pacer(fps);

  const std::string title = "cugym watch " + viewer.spec().id;
  Window window(title, viewer.frame_width(), viewer.frame_height(), 16);
  auto set_viewport = [&](int x, int y, int w, int h) { window.SetViewport(x, y, w, h); };
  bool paused = false;
  int64_t frames = 0;
  while (true) {
    viewer.Draw(window.canvas(), set_viewport, window.has_text());
    window.Present();
    if (!window.has_text()) {
      window.SetTitle(title + (paused ? " (paused)" : "") + ": " + viewer.Status(0));
    }
    ++frames;
    if (max_frames > 0 && frames >= max_frames) break;
    if (episodes > 0 && viewer.finished_episodes() >= episodes) break;
    pacer.Wait();
    const WindowInput input = window.Poll();
    if (input.quit) break;
    if (input.toggle_pause) paused = !paused;
    if (input.speed_change > 0) pacer.set_fps(std::min(pacer.fps() * (1 << input.speed_change), 1000.0));
    if (input.speed_change < 0) pacer.set_fps(std::max(pacer.fps() / (1 << -input.speed_change), 1.0));
    if (input.reset) {
      viewer.Reset();
      continue;
    }
    if (!paused || input.single_step) viewer.Step();
  }
  std::cout << "watched " << frames << " frames, " << viewer.finished_episodes() << " finished episodes\n";
  return 0;
}

}  // namespace cugym::cli
