// A trained model acting greedily: the Q network from a model file (cugym train's
// model.safetensors or a checkpoint), checked against the env it is to act in.
#pragma once

#include <memory>
#include <string>

#include "core/memory.h"
#include "core/registry.h"
#include "nn/backend.h"
#include "nn/mlp.h"

namespace cugym::agent {

class GreedyPolicy {
 public:
  // Loads `model_path` for `env_id` ("" = the env named in the model's metadata) for up to
  // max_batch observations at a time. Throws std::invalid_argument for a missing or damaged
  // file, a model naming no env, an env with a Box action space, or layer sizes that do not fit
  // the env's observation and action sizes.
  GreedyPolicy(const Registry& registry, const std::string& model_path, const std::string& env_id, int64_t max_batch,
               Device device);

  const std::string& env_id() const { return env_id_; }
  // actions[i] = argmax_a Q(obs_i, a) for n rows of obs [n x obs_dim], device pointers.
  void Act(const float* obs, int32_t* actions, int64_t n);
  // The stream Act queues on (nn::Backend::native_stream()), for kernels that use its actions.
  void* native_stream() const { return backend_->native_stream(); }

 private:
  std::string env_id_;
  int obs_dim_;
  Device device_;
  std::shared_ptr<nn::Backend> backend_;
  std::unique_ptr<nn::Mlp> net_;
  bool dueling_ = false;  // a dueling head (model metadata cugym.head): Q from V and A
  Buffer<float> q_;       // dueling: the aggregated Q values
};

}  // namespace cugym::agent
