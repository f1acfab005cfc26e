// Registration of the built-in environments: one explicit list, no static initializers.
#include "envs/builtin.h"

#include "envs/batched_env.h"
#include "envs/classic/cartpole.h"

namespace cugym {

void RegisterBuiltinEnvs(Registry& registry) { registry.Register(MakeEnvEntry<CartPole>()); }

}  // namespace cugym
