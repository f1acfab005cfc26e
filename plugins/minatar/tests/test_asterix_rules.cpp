// Asterix rules on hand-built states and long scripted runs: spawn and move timing, the ramp
// schedule, the draws made when every slot is taken (minatar 1.0.15, minatar/environments/asterix.py).
#include <gtest/gtest.h>

#include <vector>

#include "plugins/minatar/asterix.h"
#include "plugins/minatar/common.h"
#include "plugins/minatar/tests/fixed_draws.h"

namespace cugym::minatar {
namespace {

using testing::FixedDraws;

bool ObsAt(const float* obs, int x, int y, int c) { return obs[(y * 10 + x) * Asterix::kChannels + c] != 0.0f; }

TEST(AsterixRules, SpawnAndMoveTimingAndRampSchedule) {
  Asterix::State s;
  FixedDraws d;  // every spawn: right side (x = 9) moving left, an enemy, first free slot
  Asterix::Reset(s, true, d);
  // (spawn, move) intervals after ramps 1..9 (acts 102, 204, ..., 918), then no more ramps.
  const int want[9][2] = {{9, 5}, {8, 4}, {7, 4}, {6, 3}, {5, 3}, {4, 2}, {3, 2}, {2, 1}, {1, 1}};
  bool terminal = false, hit = false;
  for (int act = 1; act <= 1200; ++act) {
    const int uniforms = d.uniforms;
    // The game keeps playing after the player is hit, which is all this schedule needs.
    Asterix::Act(s, kNoop, true, d, &terminal);
    hit = hit || terminal;
    if (act <= 101) {
      ASSERT_EQ(d.uniforms - uniforms, act % 10 == 1 && act > 1 ? 2 : 0) << "act " << act;
    }
    if (act == 11) {
      float obs[10 * 10 * Asterix::kChannels];
      Asterix::Observe(s, obs);
      EXPECT_TRUE(ObsAt(obs, 8, 1, 1)) << "spawned at x = 9 in slot 0 and moved on the same act";
      EXPECT_TRUE(ObsAt(obs, 9, 1, 2)) << "trail behind it";
    }
    if (act % 102 == 0 && act / 102 <= 9) {
      EXPECT_EQ(s.spawn_interval, want[act / 102 - 1][0]) << "act " << act;
      EXPECT_EQ(s.move_interval, want[act / 102 - 1][1]) << "act " << act;
    }
    if (act % 102 == 101 && act / 102 < 9) {
      EXPECT_EQ(s.ramp_index, act / 102) << "act " << act;
    }
  }
  EXPECT_EQ(s.ramp_index, 9);
  EXPECT_TRUE(hit) << "enemies fill row 5 once they spawn every act";

  Asterix::Reset(s, false, d);
  for (int act = 1; act <= 300; ++act) Asterix::Act(s, kNoop, false, d, &terminal);
  EXPECT_EQ(s.spawn_interval, 10);
  EXPECT_EQ(s.move_interval, 5);
}

TEST(AsterixRules, FullSlotsDrawSideAndTypeButNoSlot) {
  Asterix::State s;
  FixedDraws d;
  Asterix::Reset(s, true, d);
  for (int i = 0; i < Asterix::kSlots; ++i) {
    s.used[i] = 1;
    s.x[i] = 9;
    s.right[i] = 0;
    s.gold[i] = 1;
  }
  s.spawn_countdown = 0;
  const std::vector<RecordedDraw> draws = {{kUniformDraw, 0, 0, 0.2}, {kUniformDraw, 0, 0, 0.1}};
  RecordedDraws rec;
  rec.draws = draws.data();
  rec.count = static_cast<int64_t>(draws.size());
  bool terminal = false;
  Asterix::Act(s, kNoop, true, rec, &terminal);
  EXPECT_FALSE(rec.failed());
  EXPECT_EQ(rec.next, 2);
  for (int i = 0; i < Asterix::kSlots; ++i) EXPECT_EQ(s.x[i], 9) << "nothing replaced slot " << i;
}

TEST(AsterixRules, SlotDrawIndexesTheFreeSlotsInOrder) {
  Asterix::State s;
  FixedDraws d;
  Asterix::Reset(s, true, d);
  s.used[0] = s.used[2] = s.used[3] = 1;  // free: 1, 4, 5, 6, 7
  s.x[0] = s.x[2] = s.x[3] = 5;
  s.player_y = 8;
  s.player_x = 0;
  s.spawn_countdown = 0;
  // Left side (moving right), gold, third free slot = slot 5 (row 6).
  const std::vector<RecordedDraw> draws = {{kUniformDraw, 0, 0, 0.3}, {kUniformDraw, 0, 0, 0.2}, {kIntDraw, 0, 5, 2}};
  RecordedDraws rec;
  rec.draws = draws.data();
  rec.count = static_cast<int64_t>(draws.size());
  bool terminal = false;
  Asterix::Act(s, kNoop, true, rec, &terminal);
  EXPECT_FALSE(rec.failed());
  ASSERT_TRUE(s.used[5]);
  EXPECT_EQ(s.x[5], 0);
  EXPECT_TRUE(s.right[5]);
  EXPECT_TRUE(s.gold[5]);
}

TEST(AsterixRules, GoldPaysAndEnemyEndsOnTheActTheyArrive) {
  Asterix::State s;
  FixedDraws d;
  Asterix::Reset(s, true, d);
  s.move_countdown = 0;
  s.player_x = 4;
  s.player_y = 3;
  s.used[2] = 1;  // row 3: gold moving left onto the player
  s.x[2] = 5;
  s.right[2] = 0;
  s.gold[2] = 1;
  bool terminal = true;
  EXPECT_EQ(Asterix::Act(s, kNoop, true, d, &terminal), 1);
  EXPECT_FALSE(terminal);
  EXPECT_FALSE(s.used[2]);

  // Walking onto gold pays before the entities move; an enemy stepping onto the player ends the game
  // and stays on the board.
  s.move_countdown = 0;
  s.player_x = 4;
  s.player_y = 3;
  s.used[2] = 1;  // gold in row 2 (slot 1) at the cell the player walks into
  s.used[1] = 1;
  s.x[1] = 4;
  s.right[1] = 1;
  s.gold[1] = 1;
  s.x[2] = 3;  // slot 2 (row 3): enemy moving right, onto the player's old cell
  s.right[2] = 1;
  s.gold[2] = 0;
  EXPECT_EQ(Asterix::Act(s, kUp, true, d, &terminal), 1);
  EXPECT_FALSE(terminal);
  ASSERT_EQ(s.x[2], 4);
  s.player_x = 5;
  s.player_y = 3;
  s.move_countdown = 0;
  EXPECT_EQ(Asterix::Act(s, kNoop, true, d, &terminal), 0);
  EXPECT_TRUE(terminal);
  EXPECT_TRUE(s.used[2]);
  EXPECT_EQ(s.x[2], 5);
}

}  // namespace
}  // namespace cugym::minatar
