// The BallDrop-v0 plugin: a host env, batched by cugym's HostBatchedEnv over a thread pool.
#include "ball_drop_env.h"
#include "envs/plugin.h"

CUGYM_PLUGIN_HOST_ENVS(BallDrop)
CUGYM_PLUGIN_LICENSE("MIT")
