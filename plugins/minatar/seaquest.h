// MinAtar Seaquest, following the behaviour of the `minatar` 1.0.15 PyPI package,
// minatar/environments/seaquest.py (GPL-3.0 like the rest of plugins/minatar/).
// The sub shoots fish and enemy subs, rescues divers and must surface with a diver before its oxygen
// runs out; each surfacing makes enemies spawn and move faster when ramping is on.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace cugym::minatar {

struct Seaquest {
  static constexpr const char* kName = "Seaquest";
  static constexpr int kChannels = 10;  // sub_front, sub_back, friendly_bullet, trail, enemy_bullet,
                                        // enemy_fish, enemy_sub, oxygen_gauge, diver_gauge, diver
  static constexpr int kNumMinimal = 6;

  CUGYM_HD static int MinimalToFull(int a) { return a; }

  // One entity of any kind. Fields a kind does not use stay 0, so comparing all five fields is the
  // oracle's list equality ([x, y, dir] bullets, [x, y, dir, move] fish and divers, [x, y, dir,
  // move, shot] subs), which its remove-by-value relies on.
  struct Item {
    int8_t x, y, right, move, shot;
  };

  // An ordered list with the oracle's semantics: append at the end, remove the first equal item.
  //
  // Capacities, from the rules (one act = one `Act`):
  // - An enemy's move countdown never exceeds 5 (the move interval only shrinks), so it moves at
  //   least every 6 acts, first within 5 acts of spawning; its 10th move, at most 59 acts after the
  //   spawn act, takes it off the grid. At most one enemy spawns per act, so fish + subs <= 60.
  // - A sub shoots every 11 acts; a bullet leaves the grid within 9 acts of the act it was fired in.
  //   Bullets in the list during an act were fired in the last 10 acts, each by a different sub
  //   alive then, i.e. spawned in the last 69 acts: enemy bullets <= 69.
  // - The player fires at most every 5 acts and its bullet also leaves within 9 acts: <= 2.
  // - Divers spawn every 30 acts and leave within 59: <= 2.
  template <int N>
  struct List {
    int32_t n;
    Item v[N];
  };
  static constexpr int kMaxEnemies = 64;
  static constexpr int kMaxEnemyBullets = 72;
  static constexpr int kMaxBullets = 4;
  static constexpr int kMaxDivers = 4;

  struct State {
    int8_t sub_x, sub_y, sub_right;
    int8_t surfaced;
    int32_t oxygen;
    int32_t carried;  // divers on board; -1, -2, ... after 6-diver surfacings (oracle quirk)
    int32_t spawn_interval, spawn_countdown, diver_countdown, move_interval, shot_cooldown, ramp_index;
    List<kMaxBullets> bullets;  // friendly
    List<kMaxEnemyBullets> enemy_bullets;
    List<kMaxEnemies> fish;
    List<kMaxEnemies> subs;
    List<kMaxDivers> divers;
  };

  // Flat state (host): the 12 scalars, then each list as its count and one float per slot, the
  // item's fields packed 5 bits each (offset by 16) plus the direction bit, which floats hold exactly.
  // Slots past the count are written as 0.
  static constexpr int kStateDim = 12 + 5 + kMaxBullets + kMaxEnemyBullets + 2 * kMaxEnemies + kMaxDivers;
  static void ToFlat(const State& s, float* flat) {
    const int32_t scalars[12] = {s.sub_x,           s.sub_y,         s.sub_right,      s.surfaced,
                                 s.oxygen,          s.carried,       s.spawn_interval, s.spawn_countdown,
                                 s.diver_countdown, s.move_interval, s.shot_cooldown,  s.ramp_index};
    for (int k = 0; k < 12; ++k) *flat++ = static_cast<float>(scalars[k]);
    flat = ListToFlat(s.bullets, flat);
    flat = ListToFlat(s.enemy_bullets, flat);
    flat = ListToFlat(s.fish, flat);
    flat = ListToFlat(s.subs, flat);
    ListToFlat(s.divers, flat);
  }
  static void FromFlat(const float* flat, State& s) {
    int32_t k[12];
    for (int i = 0; i < 12; ++i) k[i] = static_cast<int32_t>(*flat++);
    s.sub_x = static_cast<int8_t>(k[0]);
    s.sub_y = static_cast<int8_t>(k[1]);
    s.sub_right = static_cast<int8_t>(k[2]);
    s.surfaced = static_cast<int8_t>(k[3]);
    s.oxygen = k[4];
    s.carried = k[5];
    s.spawn_interval = k[6];
    s.spawn_countdown = k[7];
    s.diver_countdown = k[8];
    s.move_interval = k[9];
    s.shot_cooldown = k[10];
    s.ramp_index = k[11];
    flat = ListFromFlat(flat, s.bullets);
    flat = ListFromFlat(flat, s.enemy_bullets);
    flat = ListFromFlat(flat, s.fish);
    flat = ListFromFlat(flat, s.subs);
    ListFromFlat(flat, s.divers);
  }

  template <class D>
  CUGYM_HD static void Reset(State& s, bool /*ramping*/, D& /*draws*/) {
    s = State{};  // free slots are kept zero, so equal games have equal bytes
    s.sub_x = 5;
    s.sub_y = 0;
    s.sub_right = 0;
    s.surfaced = 1;
    s.oxygen = kMaxOxygen;
    s.carried = 0;
    s.spawn_interval = s.spawn_countdown = 20;
    s.diver_countdown = kDiverSpawnInterval;
    s.move_interval = 5;
    s.shot_cooldown = 0;
    s.ramp_index = 0;
  }

  template <class D>
  CUGYM_HD static int Act(State& s, int action, bool ramping, D& draws, bool* terminal) {
    int reward = 0;
    bool term = false;
    if (s.spawn_countdown == 0) {
      SpawnEnemy(s, draws);
      s.spawn_countdown = s.spawn_interval;
    }
    if (s.diver_countdown == 0) {
      SpawnDiver(s, draws);
      s.diver_countdown = kDiverSpawnInterval;
    }
    if (action == 5) {
      if (s.shot_cooldown == 0) {
        Append(s.bullets, Item{s.sub_x, s.sub_y, s.sub_right, 0, 0});
        s.shot_cooldown = 5;
      }
    } else if (action == 1) {
      if (s.sub_x > 0) s.sub_x--;
      s.sub_right = 0;
    } else if (action == 3) {
      if (s.sub_x < 9) s.sub_x++;
      s.sub_right = 1;
    } else if (action == 2) {
      if (s.sub_y > 0) s.sub_y--;
    } else if (action == 4) {
      if (s.sub_y < 8) s.sub_y++;
    }

    // Each loop walks its list newest first the way Python's reversed() does: an index that stops
    // once it falls outside the (possibly shrunken) list, so a remove-by-value that takes an
    // earlier equal item can make the loop visit the current item again.
    for (int i = s.bullets.n - 1; i >= 0 && i < s.bullets.n;) {
      Cursor<kMaxBullets> b{s.bullets, s.bullets.v[i], i};
      --i;
      b.it.x += b.it.right ? 1 : -1;
      b.Sync();
      if (OffGrid(b.it)) {
        b.RemoveSelf();
        continue;
      }
      int k = FindCell(s.fish, b.it.x, b.it.y);
      if (k >= 0) {
        RemoveAt(s.fish, k);
      } else {
        k = FindCell(s.subs, b.it.x, b.it.y);
        if (k < 0) continue;
        RemoveAt(s.subs, k);
      }
      b.RemoveSelf();
      ++reward;
    }

    for (int i = s.divers.n - 1; i >= 0 && i < s.divers.n;) {
      Cursor<kMaxDivers> d{s.divers, s.divers.v[i], i};
      --i;
      if (OnSub(s, d.it) && s.carried < 6) {
        d.RemoveSelf();
        s.carried++;
      } else if (d.it.move == 0) {
        d.it.move = kDiverMoveInterval;
        d.it.x += d.it.right ? 1 : -1;
        d.Sync();
        if (OffGrid(d.it)) {
          d.RemoveSelf();
        } else if (OnSub(s, d.it) && s.carried < 6) {
          d.RemoveSelf();
          s.carried++;
        }
      } else {
        d.it.move--;
        d.Sync();
      }
    }

    for (int i = s.subs.n - 1; i >= 0 && i < s.subs.n;) {
      Cursor<kMaxEnemies> e{s.subs, s.subs.v[i], i};
      --i;
      reward += MoveEnemy(s, e, &term);
      // A sub shoots on schedule even when it was removed a moment ago (oracle behaviour); the
      // bullet starts on the sub's cell, which may be just off the grid.
      if (e.it.shot == 0) {
        e.it.shot = kEnemyShotInterval;
        Append(s.enemy_bullets, Item{e.it.x, e.it.y, e.it.right, 0, 0});
      } else {
        e.it.shot--;
      }
      e.Sync();
    }

    for (int i = s.enemy_bullets.n - 1; i >= 0 && i < s.enemy_bullets.n;) {
      Cursor<kMaxEnemyBullets> b{s.enemy_bullets, s.enemy_bullets.v[i], i};
      --i;
      if (OnSub(s, b.it)) term = true;
      b.it.x += b.it.right ? 1 : -1;
      b.Sync();
      if (OffGrid(b.it)) {
        b.RemoveSelf();
      } else if (OnSub(s, b.it)) {
        term = true;
      }
    }

    for (int i = s.fish.n - 1; i >= 0 && i < s.fish.n;) {
      Cursor<kMaxEnemies> e{s.fish, s.fish.v[i], i};
      --i;
      reward += MoveEnemy(s, e, &term);
    }

    if (s.spawn_countdown > 0) s.spawn_countdown--;
    if (s.diver_countdown > 0) s.diver_countdown--;
    if (s.shot_cooldown > 0) s.shot_cooldown--;
    // The oxygen check comes before this act's use, so an empty tank ends the act after it empties.
    if (s.oxygen <= 0) term = true;
    if (s.sub_y > 0) {
      s.oxygen--;
      s.surfaced = 0;
    } else if (!s.surfaced) {
      if (s.carried == 0) {
        term = true;
      } else {
        s.surfaced = 1;
        if (s.carried == 6) {
          s.carried = 0;
          reward += s.oxygen * 10 / kMaxOxygen;
        }
        s.oxygen = kMaxOxygen;
        s.carried--;  // after a 6-diver surfacing too, leaving -1 (oracle quirk)
        if (ramping && (s.spawn_interval > 1 || s.move_interval > 2)) {
          if (s.move_interval > 2 && (s.ramp_index & 1)) s.move_interval--;
          if (s.spawn_interval > 1) s.spawn_interval--;
          s.ramp_index++;
        }
      }
    }
    *terminal = term;
    return reward;
  }

  CUGYM_HD static void Observe(const State& s, float* obs) {
    for (int i = 0; i < 10 * 10 * kChannels; ++i) obs[i] = 0.0f;
    Set(obs, s.sub_x, s.sub_y, 0);
    // The back cell is always on the grid: the sub can only face right after moving right.
    Set(obs, s.sub_right ? s.sub_x - 1 : s.sub_x + 1, s.sub_y, 1);
    const int oxygen_cells = (s.oxygen > 0 ? s.oxygen : 0) * 10 / kMaxOxygen;
    for (int x = 0; x < oxygen_cells; ++x) Set(obs, x, 9, 7);
    for (int x = 9 - s.carried; x < 9; ++x) Set(obs, x, 9, 8);
    for (int i = 0; i < s.bullets.n; ++i) Set(obs, s.bullets.v[i].x, s.bullets.v[i].y, 2);
    for (int i = 0; i < s.enemy_bullets.n; ++i) Set(obs, s.enemy_bullets.v[i].x, s.enemy_bullets.v[i].y, 4);
    for (int i = 0; i < s.fish.n; ++i) SetWithTrail(obs, s.fish.v[i], 5);
    for (int i = 0; i < s.subs.n; ++i) SetWithTrail(obs, s.subs.v[i], 6);
    for (int i = 0; i < s.divers.n; ++i) SetWithTrail(obs, s.divers.v[i], 9);
  }

 private:
  static constexpr int kMaxOxygen = 200;
  static constexpr int kDiverSpawnInterval = 30;
  static constexpr int kDiverMoveInterval = 5;
  static constexpr int kEnemyShotInterval = 10;

  // The item being visited, tracked like the Python object: its value and where it sits in the
  // list (-1 once it has been removed; it can still be changed, as a removed sub still shoots).
  template <int N>
  struct Cursor {
    List<N>& list;
    Item it;
    int pos;
    CUGYM_HD void Sync() {
      if (pos >= 0) list.v[pos] = it;
    }
    // list.remove(item): drops the first equal item, which is this one or an equal one before it.
    CUGYM_HD void RemoveSelf() {
      const int q = FindEqual(list, it);
      RemoveAt(list, q);
      pos = q == pos ? -1 : pos - 1;
    }
  };

  CUGYM_HD static bool Equal(const Item& a, const Item& b) {
    return a.x == b.x && a.y == b.y && a.right == b.right && a.move == b.move && a.shot == b.shot;
  }
  template <int N>
  CUGYM_HD static int FindEqual(const List<N>& l, const Item& it) {
    for (int i = 0; i < l.n; ++i) {
      if (Equal(l.v[i], it)) return i;
    }
    return -1;
  }
  template <int N>
  CUGYM_HD static int FindCell(const List<N>& l, int x, int y) {
    for (int i = 0; i < l.n; ++i) {
      if (l.v[i].x == x && l.v[i].y == y) return i;
    }
    return -1;
  }
  template <int N>
  CUGYM_HD static void RemoveAt(List<N>& l, int i) {
    for (int j = i + 1; j < l.n; ++j) l.v[j - 1] = l.v[j];
    l.v[--l.n] = Item{};  // free slots stay zero (see Reset)
  }
  // The capacities above are upper bounds, so the guard never drops an item; it only keeps a
  // broken invariant from writing out of bounds.
  template <int N>
  CUGYM_HD static void Append(List<N>& l, const Item& it) {
    if (l.n < N) l.v[l.n++] = it;
  }
  CUGYM_HD static bool OffGrid(const Item& it) { return it.x < 0 || it.x > 9; }
  CUGYM_HD static bool OnSub(const State& s, const Item& it) { return it.x == s.sub_x && it.y == s.sub_y; }

  // One fish or enemy sub's turn, without the sub's shot; returns the reward.
  template <int N>
  CUGYM_HD static int MoveEnemy(State& s, Cursor<N>& e, bool* term) {
    if (OnSub(s, e.it)) *term = true;
    if (e.it.move != 0) {
      e.it.move--;
      e.Sync();
      return 0;
    }
    e.it.move = static_cast<int8_t>(s.move_interval);
    e.it.x += e.it.right ? 1 : -1;
    e.Sync();
    if (OffGrid(e.it)) {
      e.RemoveSelf();
    } else if (OnSub(s, e.it)) {
      *term = true;
    } else {
      const int k = FindCell(s.bullets, e.it.x, e.it.y);
      if (k >= 0) {
        e.RemoveSelf();
        RemoveAt(s.bullets, k);
        return 1;
      }
    }
    return 0;
  }

  // Side, type and row are drawn before the row check, so a cancelled spawn still uses them.
  template <class D>
  CUGYM_HD static void SpawnEnemy(State& s, D& draws) {
    const bool right = draws.Uniform() < 0.5;
    const bool sub = draws.Uniform() < 1.0 / 3.0;
    const int y = draws.Int(1, 9);
    // No spawn into a row where an enemy moves the other way.
    for (int i = 0; i < s.subs.n; ++i) {
      if (s.subs.v[i].y == y && s.subs.v[i].right != right) return;
    }
    for (int i = 0; i < s.fish.n; ++i) {
      if (s.fish.v[i].y == y && s.fish.v[i].right != right) return;
    }
    const Item it{static_cast<int8_t>(right ? 0 : 9), static_cast<int8_t>(y), right,
                  static_cast<int8_t>(s.move_interval), static_cast<int8_t>(sub ? kEnemyShotInterval : 0)};
    Append(sub ? s.subs : s.fish, it);
  }

  template <class D>
  CUGYM_HD static void SpawnDiver(State& s, D& draws) {
    const bool right = draws.Uniform() < 0.5;
    const int y = draws.Int(1, 9);
    Append(s.divers, Item{static_cast<int8_t>(right ? 0 : 9), static_cast<int8_t>(y), right, kDiverMoveInterval, 0});
  }

  template <int N>
  static float* ListToFlat(const List<N>& l, float* flat) {
    *flat++ = static_cast<float>(l.n);
    for (int i = 0; i < N; ++i) {
      const Item& it = l.v[i];
      const int32_t packed = i >= l.n ? 0
                                      : (it.x + 16) | (it.y + 16) << 5 | (it.move + 16) << 10 | (it.shot + 16) << 15 |
                                            (it.right ? 1 : 0) << 20;
      *flat++ = static_cast<float>(packed);
    }
    return flat;
  }
  template <int N>
  static const float* ListFromFlat(const float* flat, List<N>& l) {
    l.n = static_cast<int32_t>(*flat++);
    for (int i = 0; i < N; ++i) {
      const int32_t p = static_cast<int32_t>(*flat++);
      const auto field = [p](int shift) { return static_cast<int8_t>(((p >> shift) & 31) - 16); };
      l.v[i] = p == 0 ? Item{0, 0, 0, 0, 0}
                      : Item{field(0), field(5), static_cast<int8_t>((p >> 20) & 1), field(10), field(15)};
    }
    return flat;
  }

  CUGYM_HD static void Set(float* obs, int x, int y, int c) { obs[(y * 10 + x) * kChannels + c] = 1.0f; }
  CUGYM_HD static void SetWithTrail(float* obs, const Item& it, int c) {
    Set(obs, it.x, it.y, c);
    const int back = it.right ? it.x - 1 : it.x + 1;
    if (back >= 0 && back <= 9) Set(obs, back, it.y, 3);
  }
};

}  // namespace cugym::minatar
