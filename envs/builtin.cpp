// Registration of the built-in environments: one explicit list, no static initializers.
#include "envs/builtin.h"

#include "envs/batched_env.h"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/pendulum.h"

#ifdef CUGYM_HAVE_BOX2D
#include "envs/box2d/lunar_lander.h"
#endif

namespace cugym {

void RegisterBuiltinEnvs(Registry& registry) {
  registry.Register(MakeEnvEntry<CartPole>());
  registry.Register(MakeEnvEntry<MountainCar>());
  registry.Register(MakeEnvEntry<MountainCarContinuous>());
  registry.Register(MakeEnvEntry<Acrobot>());
  registry.Register(MakeEnvEntry<Pendulum>());
#ifdef CUGYM_HAVE_BOX2D
  RegisterBox2dEnvs(registry);
#else
  const char* why =
      "needs Box2D, which this cugym was built without: install it (Debian/Ubuntu: apt-get install libbox2d-dev, "
      "or bash scripts/setup.sh), then rebuild cugym (Python: pip install . again)";
  registry.NoteMissing("LunarLander-v3", why);
  registry.NoteMissing("LunarLanderContinuous-v3", why);
#endif
}

}  // namespace cugym
