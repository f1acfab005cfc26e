// The SAC ops' Thrust functors for agent_ops_cuda.cu (included there, inside its anonymous
// namespace): each runs one CUGYM_HD function of sac_kernels.h per element; the per-lane
// reductions are a thread per lane looping over its rows in order, as the CPU does.
#pragma once

struct SacSampleFunctor {
  SacHead head;
  const float* outputs;
  int64_t rows;
  SacKey key;
  bool random;
  SacSample out;
  __device__ void operator()(int64_t e) const { SacSampleRow(head, outputs, rows, key, random, out, e); }
};

struct SacJoinFunctor {
  const float* obs;
  int obs_dim;
  const float* actions;
  int dims;
  float* out;
  __device__ void operator()(int64_t r) const { SacJoinRow(obs, obs_dim, actions, dims, out, r); }
};

struct SacCriticRowFunctor {
  SacCriticBatch b;
  __device__ void operator()(int64_t j) const { SacCriticRow(b, j); }
};

struct SacCriticReduceFunctor {
  SacCriticBatch b;
  __device__ void operator()(int64_t lane) const { SacCriticReduce(b, lane); }
};

struct SacActorPickFunctor {
  SacActorBatch b;
  __device__ void operator()(int64_t j) const { SacActorPickRow(b, j); }
};

struct SacActorGradFunctor {
  SacHead head;
  SacActorBatch b;
  __device__ void operator()(int64_t j) const { SacActorGradRow(head, b, j); }
};

struct SacActorReduceFunctor {
  SacActorBatch b;
  __device__ void operator()(int64_t lane) const { SacActorReduce(b, lane); }
};
