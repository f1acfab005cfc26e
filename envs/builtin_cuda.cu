// CUDA instantiation of the built-in envs (nvcc, Thrust's CUDA system). Kept to one file: each
// .cu with Thrust costs about a minute of build time on a small machine.
#include "envs/backend_cuda.cuh"
#include "envs/classic/cartpole.h"

namespace cugym {

template std::unique_ptr<VectorEnv> MakeCudaVectorEnv<CartPole>(int64_t);

}  // namespace cugym
