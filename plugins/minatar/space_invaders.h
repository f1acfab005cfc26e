// MinAtar Space Invaders: a cannon on the bottom row shoots a block of aliens that marches sideways and
// down and shoots back, +1 per alien; a new, faster wave follows each cleared one. Rules of minatar
// 1.0.15 (minatar/environments/space_invaders.py); no randomness at all.
#pragma once

#include <cstdint>

#include "plugins/minatar/common.h"

namespace cugym::minatar {

struct SpaceInvaders {
  static constexpr const char* kName = "SpaceInvaders";
  static constexpr int kChannels = 6;  // cannon, alien, alien_left, alien_right, friendly_bullet, enemy_bullet
  static constexpr int kNumMinimal = 4;
  static constexpr int kShotCooldown = 5;        // acts between two cannon shots
  static constexpr int kAlienShotInterval = 10;  // acts between two alien shots
  static constexpr int kMoveInterval = 12;       // acts between alien moves at the start
  static constexpr int kFastestInterval = 6;     // ramping stops here
  static constexpr int32_t kWaveRow = 0x0FC;     // columns 2..7 of rows 0..3 hold a new wave

  CUGYM_HD static int MinimalToFull(int a) { return a == 1 ? kLeft : a == 2 ? kRight : a == 3 ? kFire : kNoop; }

  // Maps as one 10-bit row mask per row: bit x is column x.
  struct State {
    int32_t cannon_x;
    int32_t aliens[kGrid];
    int32_t friendly[kGrid];  // friendly bullets
    int32_t enemy[kGrid];     // enemy bullets
    int32_t alien_dir;        // -1 left, +1 right
    int32_t move_interval;
    int32_t move_countdown;
    int32_t shot_countdown;  // aliens' next shot
    int32_t cooldown;        // cannon's next shot
    int32_t ramp_index;
  };

  CUGYM_HD static bool Bit(int32_t row, int x) { return ((row >> x) & 1) != 0; }
  CUGYM_HD static int CountAliens(const State& s) {
    int n = 0;
    for (int y = 0; y < kGrid; ++y) n += Popcount(s.aliens[y]);
    return n;
  }
  CUGYM_HD static void NewWave(State& s) {
    for (int y = 0; y < kGrid; ++y) s.aliens[y] = y < 4 ? kWaveRow : 0;
  }

  template <class D>
  CUGYM_HD static void Reset(State& s, bool /*ramping*/, D& /*draws: none*/) {
    s.cannon_x = 5;
    NewWave(s);
    for (int y = 0; y < kGrid; ++y) s.friendly[y] = s.enemy[y] = 0;
    s.alien_dir = -1;
    s.move_interval = kMoveInterval;
    s.move_countdown = kMoveInterval;
    s.shot_countdown = kAlienShotInterval;
    s.cooldown = 0;
    s.ramp_index = 0;
  }

  template <class D>
  CUGYM_HD static int Act(State& s, int action, bool ramping, D& /*draws*/, bool* terminal) {
    int reward = 0;
    if (action == kFire && s.cooldown == 0) {
      s.friendly[kGrid - 1] |= 1 << s.cannon_x;
      s.cooldown = kShotCooldown;
    } else if (action == kLeft) {
      s.cannon_x = s.cannon_x > 0 ? s.cannon_x - 1 : 0;
    } else if (action == kRight) {
      s.cannon_x = s.cannon_x < kGrid - 1 ? s.cannon_x + 1 : kGrid - 1;
    }
    for (int y = 0; y < kGrid - 1; ++y) s.friendly[y] = s.friendly[y + 1];
    s.friendly[kGrid - 1] = 0;
    for (int y = kGrid - 1; y > 0; --y) s.enemy[y] = s.enemy[y - 1];
    s.enemy[0] = 0;
    if (Bit(s.enemy[kGrid - 1], s.cannon_x)) *terminal = true;
    if (Bit(s.aliens[kGrid - 1], s.cannon_x)) *terminal = true;

    if (s.move_countdown == 0) {
      const int count = CountAliens(s);
      s.move_countdown = count < s.move_interval ? count : s.move_interval;
      int32_t any = 0;
      for (int y = 0; y < kGrid; ++y) any |= s.aliens[y];
      const bool at_wall = s.alien_dir < 0 ? Bit(any, 0) : Bit(any, kGrid - 1);
      if (at_wall) {
        s.alien_dir = -s.alien_dir;
        if (s.aliens[kGrid - 1] != 0) *terminal = true;
        for (int y = kGrid - 1; y > 0; --y) s.aliens[y] = s.aliens[y - 1];
        s.aliens[0] = 0;
      } else {
        for (int y = 0; y < kGrid; ++y) s.aliens[y] = s.alien_dir < 0 ? s.aliens[y] >> 1 : s.aliens[y] << 1;
      }
      if (Bit(s.aliens[kGrid - 1], s.cannon_x)) *terminal = true;
    }

    if (s.shot_countdown == 0) {
      s.shot_countdown = kAlienShotInterval;
      // The non-empty column nearest the cannon (the lower index on a tie), its lowest alien.
      int best_x = -1;
      int32_t columns = 0;
      for (int y = 0; y < kGrid; ++y) columns |= s.aliens[y];
      for (int d = 0; d < kGrid && best_x < 0; ++d) {
        if (s.cannon_x - d >= 0 && Bit(columns, s.cannon_x - d))
          best_x = s.cannon_x - d;
        else if (s.cannon_x + d < kGrid && Bit(columns, s.cannon_x + d))
          best_x = s.cannon_x + d;
      }
      if (best_x >= 0) {
        int lowest = 0;
        for (int y = 0; y < kGrid; ++y) lowest = Bit(s.aliens[y], best_x) ? y : lowest;
        s.enemy[lowest] |= 1 << best_x;
      }
    }

    for (int y = 0; y < kGrid; ++y) {
      const int32_t hit = s.aliens[y] & s.friendly[y];
      reward += Popcount(hit);
      s.aliens[y] &= ~hit;
      s.friendly[y] &= ~hit;
    }

    if (s.cooldown > 0) s.cooldown -= 1;
    s.move_countdown -= 1;
    s.shot_countdown -= 1;

    if (CountAliens(s) == 0) {
      if (ramping && s.move_interval > kFastestInterval) {
        s.move_interval -= 1;
        s.ramp_index += 1;
      }
      NewWave(s);
    }
    return reward;
  }

  CUGYM_HD static void Observe(const State& s, float* obs) {
    for (int k = 0; k < kGrid * kGrid * kChannels; ++k) obs[k] = 0.0f;
    const int side = s.alien_dir < 0 ? 2 : 3;
    for (int y = 0; y < kGrid; ++y) {
      for (int x = 0; x < kGrid; ++x) {
        float* cell = obs + (y * kGrid + x) * kChannels;
        const float alien = Bit(s.aliens[y], x) ? 1.0f : 0.0f;
        cell[1] = alien;
        cell[side] = alien;
        cell[4] = Bit(s.friendly[y], x) ? 1.0f : 0.0f;
        cell[5] = Bit(s.enemy[y], x) ? 1.0f : 0.0f;
      }
    }
    obs[((kGrid - 1) * kGrid + s.cannon_x) * kChannels + 0] = 1.0f;
  }
};

}  // namespace cugym::minatar
