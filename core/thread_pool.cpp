// The persistent worker pool of host-stepped envs.
#include "core/thread_pool.h"

#include <algorithm>

namespace cugym {

ThreadPool::ThreadPool(int threads) {
  for (int t = 1; t < std::max(threads, 1); ++t) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::ParallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (workers_.empty() || count <= grain) {
    fn(0, count);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    count_ = count;
    grain_ = grain;
    next_ = 0;
    error_ = nullptr;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  RunPieces();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  fn_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

// Takes pieces until none is left. Pieces are taken under the mutex: a piece is at least one env
// step (tens of microseconds), so the lock is never the bottleneck.
void ThreadPool::RunPieces() {
  for (;;) {
    int64_t begin;
    const std::function<void(int64_t, int64_t)>* fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= count_ || error_) return;
      begin = next_;
      next_ = std::min(count_, next_ + grain_);
      fn = fn_;
    }
    try {
      (*fn)(begin, std::min(count_, begin + grain_));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    RunPieces();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

}  // namespace cugym
