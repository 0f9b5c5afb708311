// A small thread pool: fire-and-forget work items with flush(), and parallel_for over an index range that
// also runs on the calling thread. Errors thrown by work are carried back to the caller, never std::terminate.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <condition_variable>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace tperf::util {

// The threads a `-j N` option asks for: N, or one per core for 0 (at least one).
inline unsigned job_count(unsigned jobs) { return jobs ? jobs : std::max(1u, std::thread::hardware_concurrency()); }

struct WorkQueueOptions {
  // Pin worker i to cpus[i % cpus.size()]; a worker whose pinning fails (offline CPU) runs unpinned.
  bool pin = false;
  // CPUs to pin to; empty means the CPUs of this process's affinity mask.
  std::vector<int> cpus;
  // Workers are named name + "/" + i (the name part is cut so the whole fits Linux's 15 characters).
  std::string name = "tperf-wq";
};

// nr_threads counts the calling thread: parallel_for runs on nr_threads - 1 workers plus the caller, so
// WorkQueue(1) starts no thread at all and runs everything inline. If the system refuses to start a thread,
// the queue keeps the workers it got (possibly none); nothing is lost, only parallelism.
//
// Destruction runs everything already queued (it does not discard work), then joins the workers. An error
// no flush() collected is dropped then: call flush() before destruction to see it. A WorkQueue must not be
// destroyed by one of its own work items.
class WorkQueue {
 public:
  using Options = WorkQueueOptions;

  // nr_threads: total parallelism including the caller; 0 = the number of CPUs this process may run on.
  explicit WorkQueue(unsigned nr_threads = 0, Options options = {});
  // Runs all queued work, then joins the workers.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Runs fn on a worker, in queue order; with no workers it runs fn inline. An exception is kept for flush().
  void queue_work(std::function<void()> fn);
  // Waits until every item queued before this call has run, then rethrows the first uncollected exception of
  // queue_work items. Throws std::logic_error when called from a work item of this queue (it would wait for
  // itself).
  void flush();
  // Calls body(i) for every i in [begin, end), or body(chunk_begin, chunk_end) if body takes two size_t, on
  // the workers and the calling thread; returns when all of it ran. Chunks are contiguous and hold at least
  // `grain` indices (except the one that ends the range); they start large and shrink towards grain to
  // balance the load. Once a chunk throws, chunks that have not started are skipped, and the first exception
  // is rethrown here after the running ones finish. Called from inside this queue's work it runs inline.
  template <class F>
  void parallel_for(size_t begin, size_t end, F&& body, size_t grain = 1);

  // Total parallelism of parallel_for: started workers + the calling thread.
  unsigned nr_threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // How many workers pinning succeeded for (0 unless Options::pin).
  unsigned nr_pinned() const { return nr_pinned_; }

  // The CPUs of this process's affinity mask, in increasing order (empty if the kernel does not say).
  static std::vector<int> allowed_cpus();

 private:
  struct ForJob;
  struct Item {
    uint64_t seq;
    std::function<void()> fn;
  };
  using ChunkFn = void (*)(void* ctx, size_t begin, size_t end);
  static constexpr uint64_t kIdle = UINT64_MAX;

  void run_chunks(size_t begin, size_t end, size_t grain, ChunkFn fn, void* ctx);
  void worker_main(size_t index);
  uint64_t oldest_incomplete_locked() const;
  void keep_error_locked(std::exception_ptr e);

  std::vector<std::thread> workers_;
  unsigned nr_pinned_ = 0;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // workers wait for items or shutdown
  std::condition_variable flush_cv_;  // flush() waits for its items to complete
  std::deque<std::shared_ptr<ForJob>> jobs_;  // parallel_for helpers, served before items_
  std::deque<Item> items_;                    // queue_work items, in seq order
  std::vector<uint64_t> running_seq_;         // per worker: seq of the item it runs, or kIdle
  std::multiset<uint64_t> flush_targets_;     // the seq each waiting flush() needs completed
  uint64_t next_seq_ = 1;
  unsigned idle_workers_ = 0;
  bool stopping_ = false;
  std::exception_ptr first_error_;
};

template <class F>
void WorkQueue::parallel_for(size_t begin, size_t end, F&& body, size_t grain) {
  if (end <= begin) return;
  auto chunk = [&body](size_t b, size_t e) {
    if constexpr (std::is_invocable_v<F&, size_t, size_t>) {
      body(b, e);
    } else {
      for (size_t i = b; i < e; ++i) body(i);
    }
  };
  run_chunks(
      begin, end, grain, [](void* ctx, size_t b, size_t e) { (*static_cast<decltype(chunk)*>(ctx))(b, e); },
      &chunk);
}

}  // namespace tperf::util
