// CPU instantiation of CartPole (host compiler, Thrust's OMP system).
// One env header per translation unit, as a plugin is built: each step loop gets the compiler's
// whole inlining budget (sharing one unit, GCC ran out of it and Acrobot's loop stopped
// vectorizing). `-fopt-info-vec` on this file shows whether the loop vectorized.
#include "envs/classic/cartpole.h"
#include "envs/backend_cpu.h"

namespace cugym {

template std::unique_ptr<VectorEnv> MakeCpuVectorEnv<CartPole>(int64_t);

}  // namespace cugym
