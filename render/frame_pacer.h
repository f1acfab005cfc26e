// Real-time frame pacing for `cugym watch`: the steady clock and a sleep, so callers need no SDL.
#pragma once

#include <chrono>

namespace cugym {

// Hands out frame times at `fps`. When drawing falls behind (a slow frame, a window drag), the
// schedule restarts from now rather than rushing through the missed frames to catch up.
class FramePacer {
 public:
  // Throws std::invalid_argument unless fps > 0.
  explicit FramePacer(double fps);

  double fps() const { return fps_; }
  // Takes effect from the next frame on; throws std::invalid_argument unless fps > 0.
  void set_fps(double fps);
  // Sleeps until the next frame is due (returns at once when it is overdue).
  void Wait();

 private:
  using Clock = std::chrono::steady_clock;
  double fps_ = 0;
  Clock::time_point next_;
};

}  // namespace cugym
