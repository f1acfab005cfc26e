// CPU instantiation of the built-in envs (host compiler, Thrust's OMP system).
#include "envs/backend_cpu.h"
#include "envs/classic/cartpole.h"

namespace cugym {

template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<CartPole>(int64_t);

}  // namespace cugym
