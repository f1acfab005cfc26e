// MinAtar (Young & Tian 2019, arXiv 1903.03176) for cugym: the pieces the five games share. The games
// follow the behaviour of the PyPI package minatar 1.0.15 (kenjyoung/MinAtar @4241f24: environment.py
// and environments/*.py), described in our own words; that package is GPL-3.0 and serves only as the test oracle. This
// folder is GPL-3.0 as well (plugins/minatar/LICENSE), kept apart from cugym's permissive core.
//
// ---- For game authors ----
// A game is one struct with kName, kChannels, kNumMinimal, MinimalToFull(a), a State of plain ints,
// Reset(State&, ramping, D& draws), Act(State&, full_action, ramping, D& draws, bool* terminal) -> reward
// and Observe(const State&, float* obs) (HWC, 10 x 10 x kChannels), all CUGYM_HD; D is a draw source
// below. See breakout.h for the smallest one.
// 1. Namespace: games, MinAtarEnv and the draw sources live in namespace cugym::minatar.
// 2. Flat state (VectorEnv::GetStates, snapshots, `cugym replay`): by default MinAtarEnv stores a
//    game's State as sizeof(State) / 4 floats, one per int32_t, so a game State made ONLY of int32_t
//    scalars and int32_t arrays (no int8/int16/bool, no padding) needs nothing more. A game whose State
//    holds other types instead declares all three of
//      static constexpr int kStateDim;                        // floats
//      static void ToFlat(const State&, float* flat);         // host; every int stored exactly
//      static void FromFlat(const float* flat, State& s);     // host
//    and MinAtarEnv uses those (detected at compile time).
// 3. The recorded-draw source for tests is RecordedDraws below (RecordedDraw entries, host or device);
//    it never aborts: on a kind/bounds mismatch or when it runs out it returns 0 and remembers the
//    first failure (failed(), failure_index, ...).
// 4. MinAtarEnv<G, kMinimal>::StepWith(params, state, action, draws) and ResetWith(params, draws) run
//    the env with any draw source; Step/Reset use PhiloxDraws over cugym's Rng.
// ---------------------------
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "core/canvas.h"
#include "envs/env.h"

namespace cugym::minatar {

// Full action set (v0) indices, the oracle's order.
enum FullAction : int { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
constexpr int kNumFullActions = 6;
constexpr int kGrid = 10;  // the board is kGrid x kGrid cells

// Set bits of a row mask, on either back end.
CUGYM_HD CUGYM_FORCEINLINE int Popcount(int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __popc(static_cast<unsigned>(bits));
#else
  return __builtin_popcount(static_cast<unsigned>(bits));
#endif
}

// ---- Draw sources: numpy RandomState's rand() and randint(lo, hi), in the oracle's call order ----

// cugym's counter-based Rng behind the draw interface. The float uniform (24 bits) widened to double
// stands in for rand(); Int is Lemire's multiply-shift over [lo, hi).
struct PhiloxDraws {
  Rng& rng;
  CUGYM_HD double Uniform() { return static_cast<double>(rng.Uniform()); }
  CUGYM_HD int Int(int lo, int hi) { return lo + static_cast<int>(rng.UniformInt(static_cast<uint32_t>(hi - lo))); }
};

// One value the oracle drew: kind kUniformDraw (rand()) or kIntDraw (randint(lo, hi)).
struct RecordedDraw {
  int32_t kind;
  int32_t lo, hi;  // kIntDraw only
  double value;    // the uniform, or the integer drawn
};
constexpr int32_t kUniformDraw = 0;
constexpr int32_t kIntDraw = 1;

// Replays recorded draws in order (step-by-step tests against the oracle). A call that does not match
// the next recorded draw's kind and bounds, or comes after the last one, is a failure: it returns 0,
// and the first failure is kept (what was asked, at which index) for the test to report.
struct RecordedDraws {
  const RecordedDraw* draws = nullptr;
  int64_t count = 0;
  int64_t next = 0;
  int64_t failure_index = -1;  // index of the first mismatching call; -1: none
  int32_t failure_kind = 0, failure_lo = 0, failure_hi = 0;

  CUGYM_HD bool failed() const { return failure_index >= 0; }
  CUGYM_HD double Uniform() {
    if (!Matches(kUniformDraw, 0, 0)) return 0.0;
    return draws[next++].value;
  }
  CUGYM_HD int Int(int lo, int hi) {
    if (!Matches(kIntDraw, lo, hi)) return 0;
    return static_cast<int>(draws[next++].value);
  }

 private:
  CUGYM_HD bool Matches(int32_t kind, int lo, int hi) {
    const bool ok = next < count && draws[next].kind == kind &&
                    (kind == kUniformDraw || (draws[next].lo == lo && draws[next].hi == hi));
    if (!ok && failure_index < 0) {
      failure_index = next;
      failure_kind = kind;
      failure_lo = lo;
      failure_hi = hi;
    }
    return ok;
  }
};

// ---- Flat state ----

namespace internal {
template <class Game, class = void>
struct HasOwnFlat : std::false_type {};
template <class Game>
struct HasOwnFlat<
    Game, std::void_t<decltype(Game::kStateDim),
                      decltype(Game::ToFlat(std::declval<const typename Game::State&>(), std::declval<float*>())),
                      decltype(Game::FromFlat(std::declval<const float*>(), std::declval<typename Game::State&>()))>>
    : std::true_type {};

template <class Game>
constexpr int GameStateDim() {
  if constexpr (HasOwnFlat<Game>::value) {
    return Game::kStateDim;
  } else {
    static_assert(
        sizeof(typename Game::State) % sizeof(int32_t) == 0 && alignof(typename Game::State) == alignof(int32_t),
        "a game State of int32_t fields only, or the game's own kStateDim/ToFlat/FromFlat");
    return static_cast<int>(sizeof(typename Game::State) / sizeof(int32_t));
  }
}
}  // namespace internal

// ---- Rendering: the oracle's palette (minatar.md section 4) ----

// Black, then seaborn's cubehelix palette of `channels` colours; null for an unknown count.
inline const Color* ChannelColors(int channels) {
  static const Color k4[] = {{22, 61, 78}, {84, 121, 47}, {208, 126, 147}, {193, 202, 243}};
  static const Color k6[] = {{26, 36, 65},    {27, 97, 69},    {105, 123, 48},
                             {200, 123, 124}, {205, 162, 224}, {198, 225, 241}};
  static const Color k7[] = {{27, 30, 59},    {22, 83, 76},    {68, 119, 49},  {161, 121, 74},
                             {212, 132, 169}, {198, 180, 238}, {203, 232, 240}};
  static const Color k10[] = {{25, 18, 43},    {23, 52, 76},    {24, 91, 72},    {60, 118, 50},   {126, 122, 54},
                              {188, 121, 103}, {212, 134, 175}, {202, 169, 231}, {194, 210, 243}, {214, 240, 239}};
  switch (channels) {
    case 4:
      return k4;
    case 6:
      return k6;
    case 7:
      return k7;
    case 10:
      return k10;
    default:
      return nullptr;
  }
}

// Paints an HWC observation: each cell in the colour of its highest active channel, black where none is.
// Canvas y is up and pixel row r has its centre at y = height - 1.5 - r (core/raster_canvas.cpp), so
// cell row y covers canvas y in [h - (y + 1) * cell - 1, h - y * cell - 1] to fill whole pixel rows.
inline void DrawCells(const float* obs, int channels, Canvas& canvas) {
  canvas.Clear({0, 0, 0});
  const Color* colors = ChannelColors(channels);
  if (colors == nullptr) return;
  const float cell_w = static_cast<float>(canvas.width()) / kGrid;
  const float cell_h = static_cast<float>(canvas.height()) / kGrid;
  const float top = static_cast<float>(canvas.height()) - 1.0f;
  for (int y = 0; y < kGrid; ++y) {
    for (int x = 0; x < kGrid; ++x) {
      int top_channel = -1;
      for (int c = 0; c < channels; ++c)
        if (obs[(y * kGrid + x) * channels + c] != 0.0f) top_channel = c;
      if (top_channel < 0) continue;
      const float x0 = x * cell_w, x1 = (x + 1) * cell_w;
      const float y1 = top - y * cell_h, y0 = top - (y + 1) * cell_h;
      const Vec2 rect[4] = {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}};
      canvas.FillPolygon(rect, 4, colors[top_channel]);
    }
  }
}

// ---- The cugym env around one game ----

// kMinimal: the game's minimal action set (id -v1), else all six actions (-v1:full_action_space,
// formerly -v0). Sticky actions live
// here, as in the oracle's Environment wrapper: every act first draws one uniform (even with p = 0 and
// even once terminal), and the executed action (a full-set index) is kept across episodes (CarryOver).
template <class Game, bool kMinimal>
struct MinAtarEnv {
  struct Params {
    float sticky_action_prob = 0.1f;  // chance that the previous executed action repeats
    bool difficulty_ramping = true;   // Asterix, Seaquest and Space Invaders speed up over time
  };
  struct State {
    typename Game::State game;
    int32_t last_action;  // full-set index of the last executed action
    int32_t terminal;     // the game ended; further acts change nothing
  };
  using Action = int32_t;
  static constexpr int kNumActions = kMinimal ? Game::kNumMinimal : kNumFullActions;
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = kGrid * kGrid * Game::kChannels;
  static constexpr int kGameStateDim = internal::GameStateDim<Game>();
  static constexpr int kStateDim = kGameStateDim + 2;

  static EnvSpec Spec() {
    EnvSpec spec;
    spec.id = std::string("MinAtar-") + Game::kName + (kMinimal ? "-v1" : "-v1:full_action_space");
    spec.observation_space = Space::UniformBox({kGrid, kGrid, Game::kChannels}, 0.0f, 1.0f);
    spec.action_space = Space::Discrete(kNumActions);
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 0;  // the oracle has no time limit (Freeway's own limit is a termination)
    spec.render_fps = 20;        // the oracle's display_time of 50 ms per frame
    spec.render_width = 320;     // 32 px per cell
    spec.render_height = 320;
    spec.reference = std::string("minatar 1.0.15 (kenjyoung/MinAtar @4241f24), ") + Game::kName +
                     ", Environment(sticky_action_prob=0.1, difficulty_ramping=True)" +
                     (kMinimal ? ", minimal action set" : ", all six actions");
    return spec;
  }

  template <class D>
  CUGYM_HD static State ResetWith(const Params& p, D& draws) {
    State s;
    Game::Reset(s.game, p.difficulty_ramping, draws);
    s.last_action = kNoop;
    s.terminal = 0;
    return s;
  }

  template <class D>
  CUGYM_HD static StepResult StepWith(const Params& p, State& s, Action action, D& draws) {
    int a = kMinimal ? Game::MinimalToFull(action) : action;
    if (draws.Uniform() < static_cast<double>(p.sticky_action_prob)) a = s.last_action;
    s.last_action = a;
    if (s.terminal != 0) return StepResult{0.0f, true};
    bool terminal = false;
    const int reward = Game::Act(s.game, a, p.difficulty_ramping, draws, &terminal);
    s.terminal = terminal ? 1 : 0;
    return StepResult{static_cast<float>(reward), terminal};
  }

  CUGYM_HD static State Reset(const Params& p, Rng& rng) {
    PhiloxDraws draws{rng};
    return ResetWith(p, draws);
  }
  CUGYM_HD static StepResult Step(const Params& p, State& s, const Action* action, Rng& rng) {
    PhiloxDraws draws{rng};
    return StepWith(p, s, *action, draws);
  }
  CUGYM_HD static void Observe(const Params&, const State& s, float* obs) { Game::Observe(s.game, obs); }

  // The oracle's reset() leaves the wrapper's last action alone: a new episode starts with the last
  // action of the one before (the runner calls this on every reset after the batch's first).
  CUGYM_HD static void CarryOver(const State& ended, State& fresh) { fresh.last_action = ended.last_action; }

  static void Draw(const Params& p, const State& s, Canvas& canvas) {
    float obs[kObsDim];
    Observe(p, s, obs);
    DrawCells(obs, Game::kChannels, canvas);
  }

  // The game's fields (each int exactly as a float), then last_action and terminal.
  static void ToFlat(const State& s, float* flat) {
    if constexpr (internal::HasOwnFlat<Game>::value) {
      Game::ToFlat(s.game, flat);
    } else {
      int32_t ints[kGameStateDim];
      std::memcpy(ints, &s.game, sizeof(ints));
      for (int k = 0; k < kGameStateDim; ++k) flat[k] = static_cast<float>(ints[k]);
    }
    flat[kGameStateDim] = static_cast<float>(s.last_action);
    flat[kGameStateDim + 1] = static_cast<float>(s.terminal);
  }
  static State FromFlat(const float* flat) {
    State s;
    if constexpr (internal::HasOwnFlat<Game>::value) {
      Game::FromFlat(flat, s.game);
    } else {
      int32_t ints[kGameStateDim];
      for (int k = 0; k < kGameStateDim; ++k) ints[k] = static_cast<int32_t>(flat[k]);
      std::memcpy(&s.game, ints, sizeof(ints));
    }
    s.last_action = static_cast<int32_t>(flat[kGameStateDim]);
    s.terminal = static_cast<int32_t>(flat[kGameStateDim + 1]);
    return s;
  }
};

}  // namespace cugym::minatar
