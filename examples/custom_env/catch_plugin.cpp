// The Catch-v0 plugin: everything beyond the env itself is this one line.
#include "catch_env.h"
#include "envs/plugin.h"

CUGYM_PLUGIN_ENVS(Catch)
CUGYM_PLUGIN_LICENSE("MIT")  // the licence `cugym list` shows beside Catch-v0
