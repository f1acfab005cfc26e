// The Catch-v0 plugin: everything beyond the env itself is this one line.
#include "envs/plugin.h"
#include "catch_env.h"

CUGYM_PLUGIN_ENVS(Catch)
