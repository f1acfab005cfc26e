// MinAtar Asterix, following the behaviour of the `minatar` 1.0.15 PyPI package,
// minatar/environments/asterix.py (GPL-3.0 like the rest of plugins/minatar/).
// The player dodges enemies and collects gold that cross the rows 1..8 from the sides; spawning and
// movement speed up every 102 acts when ramping is on.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace cugym::minatar {

struct Asterix {
  static constexpr const char* kName = "Asterix";
  static constexpr int kChannels = 4;  // player, enemy, trail, gold
  static constexpr int kNumMinimal = 5;
  static constexpr int kSlots = 8;  // one entity slot per row 1..8 (slot i lives in row i + 1)

  // Minimal set n, l, u, r, d is the first five full-set actions.
  CUGYM_HD static int MinimalToFull(int a) { return a; }

  struct State {
    int32_t player_x, player_y;
    // Slot i: occupied, column, moving right, gold (else enemy). Slots keep the oracle's
    // None-or-entity list, so its free-slot order (ascending) is preserved.
    int32_t used[kSlots], x[kSlots], right[kSlots], gold[kSlots];
    int32_t spawn_interval, spawn_countdown;
    int32_t move_interval, move_countdown;
    int32_t ramp_countdown, ramp_index;
  };

  template <class D>
  CUGYM_HD static void Reset(State& s, bool /*ramping*/, D& /*draws*/) {
    s.player_x = 5;
    s.player_y = 5;
    for (int i = 0; i < kSlots; ++i) s.used[i] = s.x[i] = s.right[i] = s.gold[i] = 0;
    s.spawn_interval = s.spawn_countdown = 10;
    s.move_interval = s.move_countdown = 5;
    s.ramp_countdown = 100;
    s.ramp_index = 0;
  }

  template <class D>
  CUGYM_HD static int Act(State& s, int action, bool ramping, D& draws, bool* terminal) {
    int reward = 0;
    *terminal = false;
    if (s.spawn_countdown == 0) {
      Spawn(s, draws);
      s.spawn_countdown = s.spawn_interval;
    }
    if (action == 1 && s.player_x > 0) s.player_x--;
    if (action == 3 && s.player_x < 9) s.player_x++;
    if (action == 2 && s.player_y > 1) s.player_y--;
    if (action == 4 && s.player_y < 8) s.player_y++;
    for (int i = 0; i < kSlots; ++i) Touch(s, i, &reward, terminal);
    if (s.move_countdown == 0) {
      s.move_countdown = s.move_interval;
      for (int i = 0; i < kSlots; ++i) {
        if (!s.used[i]) continue;
        s.x[i] += s.right[i] ? 1 : -1;
        if (s.x[i] < 0 || s.x[i] > 9) s.used[i] = 0;
        Touch(s, i, &reward, terminal);
      }
    }
    s.spawn_countdown--;
    s.move_countdown--;
    if (ramping && (s.spawn_interval > 1 || s.move_interval > 1)) {
      // The countdown runs down to -1 before a ramp, so ramps come every 102 acts.
      if (s.ramp_countdown >= 0) {
        s.ramp_countdown--;
      } else {
        if (s.move_interval > 1 && (s.ramp_index & 1)) s.move_interval--;
        if (s.spawn_interval > 1) s.spawn_interval--;
        s.ramp_index++;
        s.ramp_countdown = 100;
      }
    }
    return reward;
  }

  CUGYM_HD static void Observe(const State& s, float* obs) {
    for (int i = 0; i < 10 * 10 * kChannels; ++i) obs[i] = 0.0f;
    obs[(s.player_y * 10 + s.player_x) * kChannels + 0] = 1.0f;
    for (int i = 0; i < kSlots; ++i) {
      if (!s.used[i]) continue;
      const int row = i + 1;
      obs[(row * 10 + s.x[i]) * kChannels + (s.gold[i] ? 3 : 1)] = 1.0f;
      const int back = s.right[i] ? s.x[i] - 1 : s.x[i] + 1;
      if (back >= 0 && back <= 9) obs[(row * 10 + back) * kChannels + 2] = 1.0f;
    }
  }

 private:
  // Side and type are drawn even when every slot is taken; the slot draw only when one is free.
  template <class D>
  CUGYM_HD static void Spawn(State& s, D& draws) {
    const bool right = draws.Uniform() < 0.5;
    const bool gold = draws.Uniform() < 1.0 / 3.0;
    int num_free = 0;
    for (int i = 0; i < kSlots; ++i) num_free += !s.used[i];
    if (num_free == 0) return;
    int pick = draws.Int(0, num_free);
    for (int i = 0; i < kSlots; ++i) {
      if (s.used[i]) continue;
      if (pick-- == 0) {
        s.used[i] = 1;
        s.x[i] = right ? 0 : 9;
        s.right[i] = right;
        s.gold[i] = gold;
        return;
      }
    }
  }

  // An entity on the player's cell: gold is collected (+1), an enemy ends the episode (and stays).
  CUGYM_HD static void Touch(State& s, int i, int* reward, bool* terminal) {
    if (!s.used[i] || s.x[i] != s.player_x || i + 1 != s.player_y) return;
    if (s.gold[i]) {
      s.used[i] = 0;
      ++*reward;
    } else {
      *terminal = true;
    }
  }
};

}  // namespace cugym::minatar
