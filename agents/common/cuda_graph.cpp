// The CUDA graph helper's policy: warm up, capture, replay, fall back.
#include "agents/common/cuda_graph.h"

#include <cstdio>
#include <exception>

namespace cugym::agent {

void CudaGraph::Run(nn::Backend& backend, const std::function<void()>& work) {
  if (!graph_ && warmed_up_ && !failed_) {
    try {
      graph_ = backend.Capture(work);
    } catch (const std::exception& e) {
      failed_ = true;
      std::fprintf(stderr, "cugym train: CUDA graph capture failed (%s); running updates eagerly\n", e.what());
    }
  }
  if (graph_) {
    graph_->Replay();
    return;
  }
  work();
  warmed_up_ = true;
}

void CudaGraph::Drop() {
  graph_.reset();
  warmed_up_ = false;
}

}  // namespace cugym::agent
