// The MinAtar plugin: every game as MinAtar-<Name>-v1 (minimal action set) and its variant
// MinAtar-<Name>-v1:full_action_space (all six actions; core/registry.h's variants). The old ids
// MinAtar-<Name>-v0 still load as the full set (core/plugin.cpp's NoteShippedEnvs).
#include "envs/plugin.h"
#include "plugins/minatar/asterix.h"
#include "plugins/minatar/breakout.h"
#include "plugins/minatar/common.h"
#include "plugins/minatar/freeway.h"
#include "plugins/minatar/seaquest.h"
#include "plugins/minatar/space_invaders.h"

// A game joins with its header above and V1<Game>, Full<Game> in the list below.
using namespace cugym::minatar;  // NOLINT: this file only lists the games
template <class Game>
using V1 = MinAtarEnv<Game, true>;
template <class Game>
using Full = MinAtarEnv<Game, false>;

CUGYM_PLUGIN_ENVS(V1<Breakout>, Full<Breakout>, V1<Freeway>, Full<Freeway>, V1<SpaceInvaders>, Full<SpaceInvaders>,
                  V1<Asterix>, Full<Asterix>, V1<Seaquest>, Full<Seaquest>)
// This folder reproduces MinAtar's behaviour, which is GPL version 3 (LICENSE here).
CUGYM_PLUGIN_LICENSE("GPL-3.0-only")
