// The games the MinAtar test harness knows: ONE list for the step-by-step replay (minatar_replay,
// whose --list feeds oracle_replay.py) and the plugin tests. X(Type, "oracle name") per game; a new
// game adds its header and one line here.
#pragma once

#include "plugins/minatar/asterix.h"
#include "plugins/minatar/breakout.h"
#include "plugins/minatar/freeway.h"
#include "plugins/minatar/seaquest.h"
#include "plugins/minatar/space_invaders.h"

#define CUGYM_MINATAR_GAMES(X)       \
  X(Breakout, "breakout")            \
  X(Freeway, "freeway")              \
  X(SpaceInvaders, "space_invaders") \
  X(Asterix, "asterix")              \
  X(Seaquest, "seaquest")
