// WorkQueue: one mutex-protected FIFO of items plus a FIFO of parallel_for helpers that workers serve first,
// because a parallel_for caller is blocked while an item producer is not.
#include "util/workqueue.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace tperf::util {
namespace {

struct ThreadState {
  const WorkQueue* worker_of = nullptr;  // the queue this thread is a worker of
  const WorkQueue* running = nullptr;    // the queue whose work this thread is executing right now
};
thread_local ThreadState tls;

// Marks the calling thread as executing work of `queue`, so a nested parallel_for runs inline.
class RunningGuard {
 public:
  explicit RunningGuard(const WorkQueue* queue) : saved_(tls.running) { tls.running = queue; }
  ~RunningGuard() { tls.running = saved_; }
  RunningGuard(const RunningGuard&) = delete;
  RunningGuard& operator=(const RunningGuard&) = delete;

 private:
  const WorkQueue* saved_;
};

// Kernels are built for at most 8192 CPUs; anything far beyond cannot be online, and refusing it here keeps
// CPU_ALLOC from allocating for absurd numbers.
constexpr int kMaxCpu = 1 << 16;

bool pin_thread(pthread_t thread, int cpu) {
  if (cpu < 0 || cpu >= kMaxCpu) return false;
  cpu_set_t* set = CPU_ALLOC(cpu + 1);
  if (set == nullptr) return false;
  size_t size = CPU_ALLOC_SIZE(cpu + 1);
  CPU_ZERO_S(size, set);
  CPU_SET_S(cpu, size, set);
  int rc = pthread_setaffinity_np(thread, size, set);
  CPU_FREE(set);
  return rc == 0;
}

void name_thread(pthread_t thread, const std::string& name, unsigned index) {
  // Linux keeps 15 characters of a thread name; cut the name, not the index that tells workers apart.
  constexpr size_t kMaxName = 15;
  std::string suffix = "/" + std::to_string(index);
  std::string full = name.substr(0, kMaxName - std::min(kMaxName, suffix.size())) + suffix;
  pthread_setname_np(thread, full.substr(0, kMaxName).c_str());  // cosmetic: a failure changes nothing
}

}  // namespace

struct WorkQueue::ForJob {
  ForJob(size_t b, size_t e, size_t g, size_t p, ChunkFn f, void* c)
      : begin(b), end(e), grain(g), parts(p), fn(f), ctx(c), next(b) {}

  // Claims and runs chunks until none is left. Guided self-scheduling: a claim takes a share of what is left,
  // so early chunks are big (few atomic operations) and the last ones are `grain` long (good balance).
  void work() {
    size_t cur = next.load(std::memory_order_relaxed);
    for (;;) {
      size_t take;
      do {
        if (cur >= end) return;
        size_t remaining = end - cur;
        take = std::min(remaining, std::max(grain, remaining / (2 * parts)));
      } while (!next.compare_exchange_weak(cur, cur + take, std::memory_order_relaxed));
      if (!failed.load(std::memory_order_relaxed)) {
        try {
          fn(ctx, cur, cur + take);
        } catch (...) {
          std::lock_guard lk(error_mu);
          if (!error) error = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
      // Release: the caller's acquire of the final count makes every chunk's writes visible to it. After the
      // last increment the caller may return, so fn/ctx must not be touched past this point.
      if (done.fetch_add(take, std::memory_order_acq_rel) + take == end - begin) done.notify_all();
      cur = next.load(std::memory_order_relaxed);
    }
  }

  // Waits until every index has been run or skipped.
  void wait() {
    size_t total = end - begin;
    size_t d = done.load(std::memory_order_acquire);
    while (d != total) {
      done.wait(d, std::memory_order_acquire);
      d = done.load(std::memory_order_acquire);
    }
  }

  const size_t begin, end, grain, parts;
  const ChunkFn fn;
  void* const ctx;
  std::atomic<size_t> next;
  std::atomic<size_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::exception_ptr error;
};

std::vector<int> WorkQueue::allowed_cpus() {
  // The mask may be wider than cpu_set_t on big machines: grow until the kernel accepts the size.
  for (int n = 1024; n <= kMaxCpu; n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) break;
    size_t size = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(getpid(), size, set) == 0) {
      std::vector<int> cpus;
      for (int cpu = 0; cpu < n; ++cpu) {
        if (CPU_ISSET_S(cpu, size, set)) cpus.push_back(cpu);
      }
      CPU_FREE(set);
      return cpus;
    }
    int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) break;
  }
  return {};
}

WorkQueue::WorkQueue(unsigned requested, Options options) {
  if (requested == 0) {
    size_t allowed = allowed_cpus().size();
    requested = allowed != 0 ? static_cast<unsigned>(allowed) : std::thread::hardware_concurrency();
    if (requested == 0) requested = 1;
  }
  std::vector<int> pin_cpus;
  if (options.pin) pin_cpus = options.cpus.empty() ? allowed_cpus() : options.cpus;

  for (unsigned i = 0; i + 1 < requested; ++i) {
    try {
      {
        std::lock_guard lk(mu_);
        running_seq_.push_back(kIdle);
      }
      workers_.emplace_back([this, i] { worker_main(i); });
    } catch (...) {
      // Out of threads or memory: run with the workers we have rather than fail.
      std::lock_guard lk(mu_);
      running_seq_.resize(workers_.size());
      break;
    }
    // Nothing can be queued before the constructor returns, so each worker is pinned before its first item.
    pthread_t handle = workers_.back().native_handle();
    name_thread(handle, options.name, i);
    if (!pin_cpus.empty() && pin_thread(handle, pin_cpus[i % pin_cpus.size()])) ++nr_pinned_;
  }
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkQueue::queue_work(std::function<void()> fn) {
  if (!fn) throw std::invalid_argument("WorkQueue::queue_work: empty function");
  if (workers_.empty()) {
    RunningGuard guard(this);
    try {
      fn();
    } catch (...) {
      std::lock_guard lk(mu_);
      keep_error_locked(std::current_exception());
    }
    return;
  }
  bool wake;
  {
    std::lock_guard lk(mu_);
    items_.push_back(Item{next_seq_++, std::move(fn)});
    wake = idle_workers_ > 0;
  }
  if (wake) work_cv_.notify_one();
}

void WorkQueue::flush() {
  if (tls.worker_of == this) throw std::logic_error("WorkQueue::flush called from one of its own work items");
  std::unique_lock lk(mu_);
  // Items get increasing seqs and leave the FIFO in order, so "everything up to target ran" is "the oldest
  // item still queued or running is younger than target": later items cannot keep this flush waiting.
  uint64_t target = next_seq_ - 1;
  if (oldest_incomplete_locked() <= target) {
    auto it = flush_targets_.insert(target);
    flush_cv_.wait(lk, [&] { return oldest_incomplete_locked() > target; });
    flush_targets_.erase(it);
  }
  if (first_error_) {
    std::exception_ptr e = std::exchange(first_error_, nullptr);
    lk.unlock();
    std::rethrow_exception(e);
  }
}

void WorkQueue::run_chunks(size_t begin, size_t end, size_t grain, ChunkFn fn, void* ctx) {
  grain = std::max<size_t>(grain, 1);
  size_t n = end - begin;
  // Nested calls run inline: the outer level already keeps every thread busy, and helpers queued for the inner
  // level would only wait behind it. (Waiting is safe either way: a caller never needs helpers to progress.)
  if (workers_.empty() || n <= grain || tls.running == this) {
    fn(ctx, begin, end);
    return;
  }
  size_t max_chunks = n / grain + (n % grain != 0);
  size_t helpers = std::min(workers_.size(), max_chunks - 1);
  auto job = std::make_shared<ForJob>(begin, end, grain, helpers + 1, fn, ctx);
  {
    std::lock_guard lk(mu_);
    for (size_t h = 0; h < helpers; ++h) jobs_.push_back(job);
  }
  for (size_t h = 0; h < helpers; ++h) work_cv_.notify_one();
  {
    RunningGuard guard(this);
    job->work();
  }
  {
    // Every chunk is claimed: helpers not started yet have nothing to do, so take them back.
    std::lock_guard lk(mu_);
    jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
  }
  job->wait();  // chunks claimed by helpers may still run, and they use the caller's body
  if (job->failed.load(std::memory_order_relaxed)) {
    // Taken out of the job, not copied: a helper may drop the job's last reference later, and the exception
    // must then belong to this thread alone (its reference count lives in uninstrumented libstdc++ code).
    std::exception_ptr e;
    {
      std::lock_guard lk(job->error_mu);
      e = std::exchange(job->error, nullptr);
    }
    std::rethrow_exception(e);
  }
}

void WorkQueue::worker_main(size_t index) {
  tls.worker_of = this;
  tls.running = this;
  std::unique_lock lk(mu_);
  for (;;) {
    if (!jobs_.empty()) {
      std::shared_ptr<ForJob> job = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      job->work();
      job.reset();
      lk.lock();
      continue;
    }
    if (!items_.empty()) {
      Item item = std::move(items_.front());
      items_.pop_front();
      running_seq_[index] = item.seq;
      lk.unlock();
      std::exception_ptr error;
      try {
        item.fn();
      } catch (...) {
        error = std::current_exception();
      }
      item.fn = nullptr;  // the item's captures are gone by the time flush() returns
      lk.lock();
      running_seq_[index] = kIdle;
      if (error) keep_error_locked(std::move(error));
      if (!flush_targets_.empty() && item.seq <= *flush_targets_.rbegin() &&
          oldest_incomplete_locked() > *flush_targets_.begin()) {
        flush_cv_.notify_all();
      }
      continue;
    }
    if (stopping_) return;  // only once both queues are drained: destruction runs queued work
    ++idle_workers_;
    work_cv_.wait(lk, [this] { return stopping_ || !jobs_.empty() || !items_.empty(); });
    --idle_workers_;
  }
}

uint64_t WorkQueue::oldest_incomplete_locked() const {
  uint64_t oldest = items_.empty() ? next_seq_ : items_.front().seq;
  for (uint64_t seq : running_seq_) oldest = std::min(oldest, seq);
  return oldest;
}

void WorkQueue::keep_error_locked(std::exception_ptr e) {
  if (!first_error_) first_error_ = std::move(e);
}

}  // namespace tperf::util
