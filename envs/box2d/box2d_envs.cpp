// Registration of the Box2D envs (built when CMake finds Box2D): LunarLander-v3 and
// LunarLanderContinuous-v3 on HostBatchedEnv, one Box2D world per env.
#include "envs/box2d/lunar_lander.h"
#include "envs/host_batched_env.h"

namespace cugym {

void RegisterBox2dEnvs(Registry& registry) {
  registry.Register(MakeHostEnvEntry<LunarLander>());
  registry.Register(MakeHostEnvEntry<LunarLanderContinuous>());
}

}  // namespace cugym
