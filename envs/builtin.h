// The built-in environments.
#pragma once

#include "core/registry.h"

namespace cugym {

// Registers every built-in env (CartPole-v1, ...) in `registry`. Call once.
void RegisterBuiltinEnvs(Registry& registry);

}  // namespace cugym
