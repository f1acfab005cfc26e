// MinAtar Freeway: a chicken crosses ten rows of road, +1 per crossing; a car sends it back to the
// bottom; the episode ends after 2500 acts (act 2501 reports it, as a termination). Rules of minatar
// 1.0.15 (minatar/environments/freeway.py): a car with speed s moves every s + 1 acts,
// and the cars' speeds and directions are drawn again on each crossing.
#pragma once

#include <cstdint>

#include "plugins/minatar/common.h"

namespace cugym::minatar {

struct Freeway {
  static constexpr const char* kName = "Freeway";
  static constexpr int kChannels = 7;  // chicken, car, then the trail of a car of speed 1..5
  static constexpr int kNumMinimal = 3;
  static constexpr int kCars = 8;          // car i drives in row i + 1
  static constexpr int kChickenX = 4;      // the chicken's column
  static constexpr int kMoveCooldown = 3;  // acts between two chicken moves
  static constexpr int kTimeLimit = 2500;  // terminal once the counter drops below 0

  CUGYM_HD static int MinimalToFull(int a) { return a == 1 ? kUp : a == 2 ? kDown : kNoop; }

  struct State {
    int32_t chicken_y;
    int32_t cooldown;  // acts until the chicken may move again
    int32_t time_left;
    int32_t car_x[kCars];
    int32_t car_speed[kCars];      // 1..5: the car moves every speed + 1 acts
    int32_t car_dir[kCars];        // +1 right, -1 left (0 only for the oracle's sign(0.5 - 0.5))
    int32_t car_countdown[kCars];  // acts until the car's next move
  };

  // The oracle draws all eight speeds (randint(1, 6, size=8)), then all eight directions (rand(8)).
  template <class D>
  CUGYM_HD static void RandomizeCars(State& s, D& draws) {
    for (int i = 0; i < kCars; ++i) s.car_speed[i] = draws.Int(1, 6);
    for (int i = 0; i < kCars; ++i) {
      const double u = draws.Uniform();
      s.car_dir[i] = u < 0.5 ? -1 : (u > 0.5 ? 1 : 0);
      s.car_countdown[i] = s.car_speed[i];
    }
  }

  template <class D>
  CUGYM_HD static void Reset(State& s, bool /*ramping: Freeway has none*/, D& draws) {
    s.chicken_y = kGrid - 1;
    s.cooldown = kMoveCooldown;
    s.time_left = kTimeLimit;
    for (int i = 0; i < kCars; ++i) s.car_x[i] = 0;
    RandomizeCars(s, draws);
  }

  CUGYM_HD static int Wrap(int x) { return x < 0 ? x + kGrid : (x >= kGrid ? x - kGrid : x); }

  template <class D>
  CUGYM_HD static int Act(State& s, int action, bool /*ramping*/, D& draws, bool* terminal) {
    int reward = 0;
    if ((action == kUp || action == kDown) && s.cooldown == 0) {
      s.chicken_y += action == kUp ? -1 : 1;
      s.chicken_y = s.chicken_y < 0 ? 0 : (s.chicken_y > kGrid - 1 ? kGrid - 1 : s.chicken_y);
      s.cooldown = kMoveCooldown;
    }
    if (s.chicken_y == 0) {
      reward += 1;
      RandomizeCars(s, draws);
      s.chicken_y = kGrid - 1;
    }
    for (int i = 0; i < kCars; ++i) {
      const int row = i + 1;
      if (s.car_x[i] == kChickenX && row == s.chicken_y) s.chicken_y = kGrid - 1;
      if (s.car_countdown[i] == 0) {
        s.car_countdown[i] = s.car_speed[i];
        s.car_x[i] = Wrap(s.car_x[i] + s.car_dir[i]);
        if (s.car_x[i] == kChickenX && row == s.chicken_y) s.chicken_y = kGrid - 1;
      } else {
        s.car_countdown[i] -= 1;
      }
    }
    if (s.cooldown > 0) s.cooldown -= 1;
    s.time_left -= 1;
    if (s.time_left < 0) *terminal = true;
    return reward;
  }

  CUGYM_HD static void Observe(const State& s, float* obs) {
    for (int k = 0; k < kGrid * kGrid * kChannels; ++k) obs[k] = 0.0f;
    auto at = [&](int y, int x, int c) -> float& { return obs[(y * kGrid + x) * kChannels + c]; };
    at(s.chicken_y, kChickenX, 0) = 1.0f;
    for (int i = 0; i < kCars; ++i) {
      at(i + 1, s.car_x[i], 1) = 1.0f;
      at(i + 1, Wrap(s.car_x[i] - s.car_dir[i]), 1 + s.car_speed[i]) = 1.0f;
    }
  }
};

}  // namespace cugym::minatar
