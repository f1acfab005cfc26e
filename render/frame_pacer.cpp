// Frame pacing on std::chrono's steady clock.
#include "render/frame_pacer.h"

#include <stdexcept>
#include <string>
#include <thread>

namespace cugym {

FramePacer::FramePacer(double fps) : next_(Clock::now()) { set_fps(fps); }

void FramePacer::set_fps(double fps) {
  if (!(fps > 0)) throw std::invalid_argument("fps must be positive, got " + std::to_string(fps));
  fps_ = fps;
}

void FramePacer::Wait() {
  next_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / fps_));
  const Clock::time_point now = Clock::now();
  if (next_ > now) {
    std::this_thread::sleep_until(next_);
  } else {
    next_ = now;
  }
}

}  // namespace cugym
