// MinAtar Breakout: a paddle on the bottom row bounces a ball into three rows of bricks, +1 per
// brick; missing the ball ends the episode. Rules of minatar 1.0.15
// (minatar/environments/breakout.py), quirks included: a brick hit on the act after another lets the ball into the
// brick's cell without breaking it, and cleared bricks come back only when the ball reaches row 9.
#pragma once

#include <cstdint>

#include "plugins/minatar/common.h"

namespace cugym::minatar {

struct Breakout {
  static constexpr const char* kName = "Breakout";
  static constexpr int kChannels = 4;  // paddle, ball, trail, brick
  static constexpr int kNumMinimal = 3;
  static constexpr int32_t kFullRow = (1 << kGrid) - 1;
  static constexpr int kFirstBrickRow = 1;  // bricks fill rows 1..3
  static constexpr int kBrickRows = 3;

  CUGYM_HD static int MinimalToFull(int a) { return a == 1 ? kLeft : a == 2 ? kRight : kNoop; }

  struct State {
    int32_t ball_x, ball_y;
    int32_t ball_dir;            // 0 up-left, 1 up-right, 2 down-right, 3 down-left
    int32_t last_x, last_y;      // the ball's previous cell (the trail)
    int32_t paddle_x;            // the paddle sits in row 9
    int32_t strike;              // a brick was hit on the previous act
    int32_t bricks[kBrickRows];  // bit x of bricks[r]: a brick at (row kFirstBrickRow + r, column x)
  };

  CUGYM_HD static bool BrickAt(const State& s, int x, int y) {
    const int r = y - kFirstBrickRow;
    return r >= 0 && r < kBrickRows && ((s.bricks[r] >> x) & 1) != 0;
  }

  template <class D>
  CUGYM_HD static void Reset(State& s, bool /*ramping: Breakout has none*/, D& draws) {
    const int side = draws.Int(0, 2);
    s.ball_y = 3;
    s.ball_x = side == 0 ? 0 : kGrid - 1;
    s.ball_dir = side == 0 ? 2 : 3;
    s.last_x = s.ball_x;
    s.last_y = s.ball_y;
    s.paddle_x = 4;
    s.strike = 0;
    for (int r = 0; r < kBrickRows; ++r) s.bricks[r] = kFullRow;
  }

  template <class D>
  CUGYM_HD static int Act(State& s, int action, bool /*ramping*/, D& /*draws: none during play*/, bool* terminal) {
    // Direction flips as tables over 0 up-left, 1 up-right, 2 down-right, 3 down-left.
    constexpr int kFlipX[4] = {1, 0, 3, 2};
    constexpr int kFlipY[4] = {3, 2, 1, 0};
    constexpr int kReverse[4] = {2, 3, 0, 1};
    int reward = 0;
    if (action == kLeft) s.paddle_x = s.paddle_x > 0 ? s.paddle_x - 1 : 0;
    if (action == kRight) s.paddle_x = s.paddle_x < kGrid - 1 ? s.paddle_x + 1 : kGrid - 1;
    s.last_x = s.ball_x;
    s.last_y = s.ball_y;
    int dir = s.ball_dir;
    int x = s.ball_x + ((dir == 0 || dir == 3) ? -1 : 1);
    int y = s.ball_y + (dir < 2 ? -1 : 1);
    if (x < 0 || x > kGrid - 1) {
      x = x < 0 ? 0 : kGrid - 1;
      dir = kFlipX[dir];
    }
    bool hit_brick = false;
    if (y < 0) {
      y = 0;
      dir = kFlipY[dir];
    } else if (BrickAt(s, x, y)) {
      hit_brick = true;
      if (s.strike == 0) {
        reward += 1;
        s.bricks[y - kFirstBrickRow] &= ~(1 << x);
        y = s.last_y;
        dir = kFlipY[dir];
      }
      s.strike = 1;
    } else if (y == kGrid - 1) {
      bool any = false;
      for (int r = 0; r < kBrickRows; ++r) any |= s.bricks[r] != 0;
      if (!any)
        for (int r = 0; r < kBrickRows; ++r) s.bricks[r] = kFullRow;
      if (s.last_x == s.paddle_x) {
        dir = kFlipY[dir];
        y = s.last_y;
      } else if (x == s.paddle_x) {
        dir = kReverse[dir];
        y = s.last_y;
      } else {
        *terminal = true;
      }
    }
    if (!hit_brick) s.strike = 0;
    s.ball_x = x;
    s.ball_y = y;
    s.ball_dir = dir;
    return reward;
  }

  CUGYM_HD static void Observe(const State& s, float* obs) {
    for (int k = 0; k < kGrid * kGrid * kChannels; ++k) obs[k] = 0.0f;
    auto at = [&](int y, int x, int c) -> float& { return obs[(y * kGrid + x) * kChannels + c]; };
    at(kGrid - 1, s.paddle_x, 0) = 1.0f;
    at(s.ball_y, s.ball_x, 1) = 1.0f;
    at(s.last_y, s.last_x, 2) = 1.0f;
    for (int r = 0; r < kBrickRows; ++r)
      for (int x = 0; x < kGrid; ++x)
        if ((s.bricks[r] >> x) & 1) at(kFirstBrickRow + r, x, 3) = 1.0f;
  }
};

}  // namespace cugym::minatar
