// Registration of the Box2D envs (built when CMake finds Box2D): LunarLander-v3 and
// LunarLanderContinuous-v3 on HostBatchedEnv, one Box2D world per env.
#include <box2d/box2d.h>

#include "envs/box2d/lunar_lander.h"
#include "envs/host_batched_env.h"

namespace cugym {

void RegisterBox2dEnvs(Registry& registry) {
  // A world holds its b2World (with a 100 KiB stack allocator inside) plus Box2D's block
  // allocator chunks (16 KiB each, one per size class in use: bodies, fixtures, contacts, joints,
  // shapes); measured about 250 KiB of resident memory per env at N = 4096.
  constexpr int64_t kWorldBytes = 256 * 1024;
  registry.Register(MakeHostEnvEntry<LunarLander>(kWorldBytes));
  registry.Register(MakeHostEnvEntry<LunarLanderContinuous>(kWorldBytes));
}

}  // namespace cugym
