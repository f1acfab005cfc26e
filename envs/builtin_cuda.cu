// CUDA instantiation of the built-in envs (nvcc, Thrust's CUDA system). Kept to one file: each
// .cu with Thrust costs about a minute of build time on a small machine.
#include "envs/backend_cuda.cuh"
#include "envs/classic/acrobot.h"
#include "envs/classic/cartpole.h"
#include "envs/classic/mountain_car.h"
#include "envs/classic/pendulum.h"

namespace cugym {

template std::unique_ptr<VectorEnv> MakeCudaVectorEnv<CartPole>(int64_t);
template std::unique_ptr<VectorEnv> MakeCudaVectorEnv<MountainCar>(int64_t);
template std::unique_ptr<VectorEnv> MakeCudaVectorEnv<MountainCarContinuous>(int64_t);
template std::unique_ptr<VectorEnv> MakeCudaVectorEnv<Acrobot>(int64_t);
template std::unique_ptr<VectorEnv> MakeCudaVectorEnv<Pendulum>(int64_t);

}  // namespace cugym
