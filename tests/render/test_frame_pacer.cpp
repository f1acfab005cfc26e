// Frame pacing: frames come at the asked rate, a stall is not followed by a burst, the rate can
// change, and a rate that is not positive is refused. Only lower bounds that hold however late
// the sleeps return are checked, so a busy machine cannot make these fail.
#include "render/frame_pacer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace cugym {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsFor(FramePacer& pacer, int frames) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < frames; ++i) pacer.Wait();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(FramePacer, WaitsOneFrameTimePerFrame) {
  FramePacer pacer(300.0);
  // 3.33 ms a frame, not rounded down to whole ms: at least the 99 frame times between the first
  // frame and the last (the first is due 3.33 ms after the pacer was made, maybe already).
  EXPECT_GE(SecondsFor(pacer, 100), 0.329);
}

TEST(FramePacer, AStallIsNotFollowedByABurst) {
  FramePacer pacer(50.0);
  pacer.Wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // 10 frame times lost
  // The first frame is overdue and comes at once; the 4 after it are paced again, not rushed.
  EXPECT_GE(SecondsFor(pacer, 5), 0.079);
}

TEST(FramePacer, RateChangesAndMustBePositive) {
  FramePacer pacer(1000.0);
  pacer.set_fps(40.0);
  EXPECT_EQ(pacer.fps(), 40.0);
  pacer.Wait();
  // At least the 25 ms between the two frames; not 50: if the Wait above overslept (a busy
  // machine), the first of the two is due sooner after it.
  EXPECT_GE(SecondsFor(pacer, 2), 0.0245);
  EXPECT_THROW(pacer.set_fps(0.0), std::invalid_argument);
  EXPECT_THROW(FramePacer(-1.0), std::invalid_argument);
  EXPECT_THROW(FramePacer(std::nan("")), std::invalid_argument);
}

}  // namespace
}  // namespace cugym
