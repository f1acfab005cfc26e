// A persistent pool of worker threads, for envs that step on the host (envs/host_batched_env.h):
// the threads are started once and woken per call, so stepping a small batch costs a wake-up
// (a few microseconds), not a thread fork/join. The calling thread works too.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cugym {

class ThreadPool {
 public:
  // `threads` workers in all, the caller included (so threads - 1 are started); at least 1.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, count) in pieces of `grain` items, taken by whichever thread is
  // free (work varies per item: an env that resets costs more than one that steps). Returns when
  // every piece is done; rethrows the first exception a piece threw. Not reentrant.
  void ParallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop();
  void RunPieces();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // bumped per call; a worker runs each generation once
  bool stop_ = false;
  int busy_ = 0;  // workers still inside the current call
  // The current call, read by workers after they see a new generation.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t count_ = 0;
  int64_t grain_ = 1;
  int64_t next_ = 0;  // first item not yet taken (under mutex_)
  std::exception_ptr error_;
};

}  // namespace cugym
