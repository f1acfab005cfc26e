// The BallDrop-v0 plugin: a host env, batched by cugym's HostBatchedEnv over a thread pool.
#include "envs/plugin.h"
#include "ball_drop_env.h"

CUGYM_PLUGIN_HOST_ENVS(BallDrop)
