// Seaquest rules that random play rarely reaches, checked on hand-built states. The expected values
// were read off the oracle (minatar 1.0.15, minatar/environments/seaquest.py) started from the same
// states.
#include <gtest/gtest.h>

#include <vector>

#include "plugins/minatar/common.h"
#include "plugins/minatar/seaquest.h"
#include "plugins/minatar/tests/fixed_draws.h"

namespace cugym::minatar {
namespace {

using testing::FixedDraws;

// A state with no spawn due on the next act.
Seaquest::State Quiet() {
  Seaquest::State s;
  FixedDraws d;
  Seaquest::Reset(s, true, d);
  s.spawn_countdown = 5;
  s.diver_countdown = 5;
  return s;
}

Seaquest::Item Bullet(int x, int y, bool right) { return {int8_t(x), int8_t(y), int8_t(right), 0, 0}; }

bool ObsAt(const float* obs, int x, int y, int c) { return obs[(y * 10 + x) * Seaquest::kChannels + c] != 0.0f; }

TEST(SeaquestRules, DivingWithoutSurfacingRunsOutOfOxygenOnAct201) {
  Seaquest::State s;
  FixedDraws d;  // enemies and divers all spawn in row 1, far above the sub
  Seaquest::Reset(s, true, d);
  bool terminal = false;
  int act = 0;
  while (!terminal && act < 300) {
    ++act;
    const int uniforms = d.uniforms, ints = d.ints;
    Seaquest::Act(s, s.sub_y < 8 ? kDown : kNoop, true, d, &terminal);
    // Enemy spawn ticks (2 uniforms, 1 int) on acts 21, 41, ...; diver ticks (1 + 1) on 31, 61, ...
    const int want_u = (act % 20 == 1 && act > 1 ? 2 : 0) + (act % 30 == 1 && act > 1 ? 1 : 0);
    const int want_i = (act % 20 == 1 && act > 1 ? 1 : 0) + (act % 30 == 1 && act > 1 ? 1 : 0);
    ASSERT_EQ(d.uniforms - uniforms, want_u) << "act " << act;
    ASSERT_EQ(d.ints - ints, want_i) << "act " << act;
  }
  EXPECT_EQ(act, 201);
}

TEST(SeaquestRules, SixDiverSurfacingLeavesMinusOneAndLaterSurfacingsPayNothing) {
  Seaquest::State s = Quiet();
  s.sub_y = 1;
  s.surfaced = 0;
  s.carried = 6;
  s.oxygen = 150;
  FixedDraws d;
  // (action, reward, carried, oxygen, spawn interval, move interval, ramp index), from the oracle.
  const int want[5][7] = {{kUp, 7, -1, 200, 19, 5, 1},
                          {kDown, 0, -1, 199, 19, 5, 1},
                          {kUp, 0, -2, 200, 18, 4, 2},
                          {kDown, 0, -2, 199, 18, 4, 2},
                          {kUp, 0, -3, 200, 17, 4, 3}};
  for (const auto& w : want) {
    bool terminal = true;
    EXPECT_EQ(Seaquest::Act(s, w[0], true, d, &terminal), w[1]);
    EXPECT_FALSE(terminal);
    EXPECT_EQ(s.carried, w[2]);
    EXPECT_EQ(s.oxygen, w[3]);
    EXPECT_EQ(s.spawn_interval, w[4]);
    EXPECT_EQ(s.move_interval, w[5]);
    EXPECT_EQ(s.ramp_index, w[6]);
  }
  float obs[10 * 10 * Seaquest::kChannels];
  Seaquest::Observe(s, obs);
  for (int x = 0; x < 10; ++x) EXPECT_FALSE(ObsAt(obs, x, 9, 8)) << "diver gauge empty while carried <= 0";
  for (int x = 0; x < 10; ++x) EXPECT_TRUE(ObsAt(obs, x, 9, 7)) << "full oxygen gauge";
}

TEST(SeaquestRules, SurfacingWithoutDiversIsTerminalButRampingOffKeepsSpeeds) {
  Seaquest::State s = Quiet();
  s.sub_y = 1;
  s.surfaced = 0;
  FixedDraws d;
  bool terminal = false;
  Seaquest::Act(s, kUp, true, d, &terminal);
  EXPECT_TRUE(terminal);

  s = Quiet();
  s.sub_y = 1;
  s.surfaced = 0;
  s.carried = 2;
  Seaquest::Act(s, kUp, false, d, &terminal);
  EXPECT_FALSE(terminal);
  EXPECT_EQ(s.carried, 1);
  EXPECT_EQ(s.spawn_interval, 20);
  EXPECT_EQ(s.ramp_index, 0);
}

TEST(SeaquestRules, SubShootsOnTheActItIsShot) {
  Seaquest::State s = Quiet();
  s.sub_x = 0;
  s.sub_y = 8;
  s.bullets.n = 1;
  s.bullets.v[0] = Bullet(5, 4, false);
  s.subs.n = 1;
  s.subs.v[0] = {3, 4, 1, 0, 0};  // moves onto the bullet this act, and its shot is due
  FixedDraws d;
  bool terminal = false;
  EXPECT_EQ(Seaquest::Act(s, kNoop, true, d, &terminal), 1);
  EXPECT_EQ(s.subs.n, 0);
  EXPECT_EQ(s.bullets.n, 0);
  ASSERT_EQ(s.enemy_bullets.n, 1);  // fired from (4, 4), then moved
  EXPECT_EQ(s.enemy_bullets.v[0].x, 5);
  EXPECT_EQ(s.enemy_bullets.v[0].y, 4);
  EXPECT_EQ(s.enemy_bullets.v[0].right, 1);
}

TEST(SeaquestRules, CancelledSpawnStillDrawsSideTypeAndRow) {
  Seaquest::State s = Quiet();
  s.spawn_countdown = 0;
  s.sub_y = 8;
  s.fish.n = 1;
  s.fish.v[0] = {2, 3, 1, 4, 0};  // row 3, moving right
  // Left-moving sub in row 3: cancelled by the fish.
  const std::vector<RecordedDraw> draws = {{kUniformDraw, 0, 0, 0.9}, {kUniformDraw, 0, 0, 0.1}, {kIntDraw, 1, 9, 3}};
  RecordedDraws rec;
  rec.draws = draws.data();
  rec.count = static_cast<int64_t>(draws.size());
  bool terminal = false;
  Seaquest::Act(s, kNoop, true, rec, &terminal);
  EXPECT_FALSE(rec.failed());
  EXPECT_EQ(rec.next, 3);
  EXPECT_EQ(s.subs.n, 0);
  EXPECT_EQ(s.fish.n, 1);
  EXPECT_EQ(s.spawn_countdown, 19) << "the countdown restarts even though nothing spawned";
}

// A bullet hitting a fish is removed by value: here the first equal bullet is an older one not yet
// moved, so the older one goes, and the loop meets the hitting bullet again and moves it once more.
// The oracle ends with [(3, 3), (6, 3)]; removing the hitting bullet itself would give [(6, 3), (3, 3)].
TEST(SeaquestRules, RemoveByValueTakesTheFirstEqualItemAndRevisits) {
  Seaquest::State s = Quiet();
  s.sub_x = 5;
  s.sub_y = 7;
  s.bullets.n = 3;
  s.bullets.v[0] = Bullet(5, 3, true);
  s.bullets.v[1] = Bullet(2, 3, true);
  s.bullets.v[2] = Bullet(4, 3, true);
  s.fish.n = 1;
  s.fish.v[0] = {5, 3, 0, 3, 0};
  FixedDraws d;
  bool terminal = false;
  EXPECT_EQ(Seaquest::Act(s, kNoop, true, d, &terminal), 1);
  EXPECT_EQ(s.fish.n, 0);
  ASSERT_EQ(s.bullets.n, 2);
  EXPECT_EQ(s.bullets.v[0].x, 3);
  EXPECT_EQ(s.bullets.v[1].x, 6);
}

TEST(SeaquestRules, FlatStateRoundTripKeepsTheGame) {
  Seaquest::State s;
  FixedDraws d;
  Seaquest::Reset(s, true, d);
  bool terminal = false;
  const int actions[] = {kDown, kDown, kFire, kRight, kDown, kNoop, kFire, kLeft};
  for (int k = 0; k < 45; ++k) Seaquest::Act(s, actions[k % 8], true, d, &terminal);
  ASSERT_FALSE(terminal);
  ASSERT_GT(s.fish.n + s.subs.n + s.divers.n, 0);
  std::vector<float> flat(Seaquest::kStateDim);
  Seaquest::ToFlat(s, flat.data());
  Seaquest::State t;
  Seaquest::FromFlat(flat.data(), t);
  std::vector<float> flat2(Seaquest::kStateDim);
  Seaquest::ToFlat(t, flat2.data());
  EXPECT_EQ(flat, flat2);
  for (int k = 0; k < 60; ++k) {
    bool ta = false, tb = false;
    FixedDraws da, db;
    ASSERT_EQ(Seaquest::Act(s, actions[k % 8], true, da, &ta), Seaquest::Act(t, actions[k % 8], true, db, &tb));
    ASSERT_EQ(ta, tb);
    float oa[10 * 10 * Seaquest::kChannels], ob[10 * 10 * Seaquest::kChannels];
    Seaquest::Observe(s, oa);
    Seaquest::Observe(t, ob);
    ASSERT_EQ(std::vector<float>(oa, oa + 1000), std::vector<float>(ob, ob + 1000));
    if (ta) break;
  }
}

}  // namespace
}  // namespace cugym::minatar
