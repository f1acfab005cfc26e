// CPU instantiation of the built-in envs (host compiler, Thrust's OMP system).
#include "envs/backend_cpu.h"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/pendulum.h"

namespace cugym {

template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<CartPole>(int64_t);
template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<MountainCar>(int64_t);
template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<MountainCarContinuous>(int64_t);
template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<Acrobot>(int64_t);
template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<Pendulum>(int64_t);

}  // namespace cugym
