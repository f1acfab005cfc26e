// One repeated piece of the DQN loop's device work as a CUDA graph, with the whole policy around
// it (the idea of tiny-cuda-nn's CudaGraph): warm-up, capture, replay, and the fallback to eager
// launches when capture fails.
#pragma once

#include <functional>
#include <memory>

#include "nn/backend.h"

namespace cugym::agent {

class CudaGraph {
 public:
  // Runs `work` (backend calls that queue work and read nothing on the host) on the back end's
  // stream. The first call runs it eagerly, so lazy module loading, cuBLAS's first-call set-up
  // and scratch allocations happen outside the capture; the second captures it into a graph and
  // replays that; later calls replay it, one launch each, so everything that changes between
  // calls must live on the device. Should capture fail, the work runs eagerly now and on every
  // later call, and one line goes to stderr ("cugym train: CUDA graph capture failed (...);
  // running updates eagerly", which scripts/gpu-check.sh counts as a failure). On the CPU the
  // "graph" is the work called again (nn's Graph), which tests use to check the scheduling.
  void Run(nn::Backend& backend, const std::function<void()>& work);

  // Forgets the graph and its warm-up: the next Run warms up again and the one after captures. A
  // graph replays the pointers and host values of its capture, so whoever replaces them (loading
  // a checkpoint) drops it. A failed capture stays failed.
  void Drop();

  bool replaying() const { return graph_ != nullptr; }
  bool failed() const { return failed_; }

 private:
  std::unique_ptr<nn::Graph> graph_;
  bool warmed_up_ = false;  // the work ran eagerly once
  bool failed_ = false;     // a capture failed: the work runs eagerly from then on
};

}  // namespace cugym::agent
