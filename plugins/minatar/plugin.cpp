// The MinAtar plugin: every game as MinAtar-<Name>-v1 (minimal action set) and -v0 (all six actions).
#include "envs/plugin.h"
#include "plugins/minatar/asterix.h"
#include "plugins/minatar/breakout.h"
#include "plugins/minatar/common.h"
#include "plugins/minatar/freeway.h"
#include "plugins/minatar/seaquest.h"
#include "plugins/minatar/space_invaders.h"

// A game joins with its header above and V1<Game>, V0<Game> in the list below.
using namespace cugym::minatar;  // NOLINT: this file only lists the games
template <class Game>
using V1 = MinAtarEnv<Game, true>;
template <class Game>
using V0 = MinAtarEnv<Game, false>;

CUGYM_PLUGIN_ENVS(V1<Breakout>, V0<Breakout>, V1<Freeway>, V0<Freeway>, V1<SpaceInvaders>, V0<SpaceInvaders>,
                  V1<Asterix>, V0<Asterix>, V1<Seaquest>, V0<Seaquest>)
