// WorkQueue: parallel_for coverage over many shapes, flush, error propagation, shutdown, pinning, thread names,
// nesting and a many-producer stress run. Nothing here asserts on time; sleeps only widen race windows.
#include "util/workqueue.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tperf::util {
namespace {

// A one-shot gate work items can block on, so a test controls when they finish without timing.
class Gate {
 public:
  void open() {
    std::lock_guard lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// The CPUs this process may use, read with the raw syscall wrapper rather than WorkQueue::allowed_cpus.
std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string current_thread_name() {
  char buf[64] = {};
  pthread_getname_np(pthread_self(), buf, sizeof(buf));
  return buf;
}

TEST(WorkQueue, NrThreadsCountsTheCaller) {
  EXPECT_EQ(WorkQueue(1).nr_threads(), 1u);
  EXPECT_EQ(WorkQueue(2).nr_threads(), 2u);
  EXPECT_EQ(WorkQueue(5).nr_threads(), 5u);
  std::vector<int> cpus = affinity_cpus();
  if (!cpus.empty()) {
    EXPECT_EQ(WorkQueue(0).nr_threads(), cpus.size());
    EXPECT_EQ(WorkQueue::allowed_cpus(), cpus);
  } else {
    EXPECT_GE(WorkQueue(0).nr_threads(), 1u);
  }
}

TEST(WorkQueue, ParallelForVisitsEveryIndexExactlyOnce) {
  const std::vector<std::pair<size_t, size_t>> ranges = {{0, 0},   {0, 1},    {5, 6},      {0, 2},    {0, 7},
                                                          {3, 100}, {0, 1000}, {17, 20000}, {0, 100003}};
  const std::vector<size_t> grains = {0, 1, 2, 3, 7, 64, 1000, 1 << 20};
  for (unsigned threads : {1u, 2u, 3u, 4u, 8u}) {
    WorkQueue wq(threads);
    for (auto [begin, end] : ranges) {
      for (size_t grain : grains) {
        SCOPED_TRACE(testing::Message() << "threads=" << threads << " range=[" << begin << "," << end
                                        << ") grain=" << grain);
        std::vector<std::atomic<int>> seen(end + 1);
        wq.parallel_for(begin, end, [&](size_t i) { seen[i].fetch_add(1, std::memory_order_relaxed); }, grain);
        size_t wrong = 0;
        for (size_t i = 0; i <= end; ++i) {
          int expected = (i >= begin && i < end) ? 1 : 0;
          if (seen[i].load() != expected) ++wrong;
        }
        EXPECT_EQ(wrong, 0u);
      }
    }
  }
}

TEST(WorkQueue, ParallelForChunksTileTheRangeAndRespectGrain) {
  for (unsigned threads : {1u, 2u, 4u}) {
    WorkQueue wq(threads);
    for (size_t grain : {1u, 5u, 64u, 5000u}) {
      for (size_t end : {1u, 9u, 100u, 12345u}) {
        SCOPED_TRACE(testing::Message() << "threads=" << threads << " end=" << end << " grain=" << grain);
        std::mutex mu;
        std::vector<std::pair<size_t, size_t>> chunks;
        wq.parallel_for(
            0, end,
            [&](size_t b, size_t e) {
              std::lock_guard lk(mu);
              chunks.emplace_back(b, e);
            },
            grain);
        std::sort(chunks.begin(), chunks.end());
        ASSERT_FALSE(chunks.empty());
        EXPECT_EQ(chunks.front().first, 0u);
        EXPECT_EQ(chunks.back().second, end);
        for (size_t k = 0; k < chunks.size(); ++k) {
          EXPECT_LT(chunks[k].first, chunks[k].second);
          if (k + 1 < chunks.size()) {
            EXPECT_EQ(chunks[k].second, chunks[k + 1].first);
            EXPECT_GE(chunks[k].second - chunks[k].first, grain);  // only the chunk ending the range may be short
          }
        }
      }
    }
  }
}

TEST(WorkQueue, ParallelForEmptyOrReversedRangeCallsNothing) {
  WorkQueue wq(3);
  std::atomic<int> calls{0};
  wq.parallel_for(10, 10, [&](size_t) { ++calls; });
  wq.parallel_for(10, 3, [&](size_t) { ++calls; });
  EXPECT_EQ(calls.load(), 0);
}

TEST(WorkQueue, ParallelForWritesAreVisibleToTheCaller) {
  // Plain (non-atomic) writes: the caller must see them all when parallel_for returns (TSan checks the order).
  WorkQueue wq(4);
  std::vector<uint64_t> v(50000, 0);
  wq.parallel_for(0, v.size(), [&](size_t i) { v[i] = i * 3 + 1; });
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], i * 3 + 1) << i;
}

TEST(WorkQueue, ParallelForRunsOnWorkersAndTheCaller) {
  // With two threads and a chunk that blocks until the other side ran one, both must take part.
  WorkQueue wq(2);
  const std::thread::id caller = std::this_thread::get_id();
  Gate caller_ran, worker_ran;
  std::atomic<bool> caller_seen{false}, worker_seen{false};
  wq.parallel_for(0, 2, [&](size_t) {
    if (std::this_thread::get_id() == caller) {
      if (!caller_seen.exchange(true)) caller_ran.open();
      worker_ran.wait();
    } else {
      if (!worker_seen.exchange(true)) worker_ran.open();
      caller_ran.wait();
    }
  });
  EXPECT_TRUE(caller_seen.load());
  EXPECT_TRUE(worker_seen.load());
}

TEST(WorkQueue, ParallelForWaitsForChunksRunningOnWorkers) {
  // The caller's own chunk ends first (it only waits for the worker's chunk to start); parallel_for must still
  // wait for the worker's chunk, which is slow on purpose.
  WorkQueue wq(2);
  const std::thread::id caller = std::this_thread::get_id();
  Gate worker_started;
  std::atomic<int> worker_chunks_finished{0};
  wq.parallel_for(0, 2, [&](size_t) {
    if (std::this_thread::get_id() == caller) {
      worker_started.wait();
    } else {
      worker_started.open();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      worker_chunks_finished.fetch_add(1);
    }
  });
  EXPECT_EQ(worker_chunks_finished.load(), 1);
}

TEST(WorkQueue, SingleThreadRunsInlineOnTheCaller) {
  WorkQueue wq(1);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  wq.parallel_for(0, 1000, [&](size_t) { elsewhere += std::this_thread::get_id() != caller; });
  int ran = 0;
  wq.queue_work([&] {
    ++ran;
    elsewhere += std::this_thread::get_id() != caller;
  });
  EXPECT_EQ(ran, 1);  // inline: already done, no flush needed
  wq.flush();
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(WorkQueue, FlushWaitsForEverythingQueued) {
  for (unsigned threads : {1u, 2u, 4u}) {
    WorkQueue wq(threads);
    std::atomic<int> done{0};
    for (int i = 0; i < 200; ++i) {
      wq.queue_work([&done, i] {
        if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        done.fetch_add(1, std::memory_order_relaxed);
      });
    }
    wq.flush();
    EXPECT_EQ(done.load(), 200);
    wq.flush();  // nothing queued: returns at once
  }
}

TEST(WorkQueue, FlushBlocksOnARunningItem) {
  WorkQueue wq(3);
  Gate gate;
  std::atomic<bool> item_done{false}, flush_returned{false};
  wq.queue_work([&] {
    gate.wait();
    item_done = true;
  });
  std::thread flusher([&] {
    wq.flush();
    flush_returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // give a broken flush the chance to return
  EXPECT_FALSE(flush_returned.load());
  gate.open();
  flusher.join();
  EXPECT_TRUE(item_done.load());
  EXPECT_TRUE(flush_returned.load());
}

TEST(WorkQueue, QueueWorkExceptionIsRethrownByFlush) {
  for (unsigned threads : {1u, 2u, 4u}) {
    WorkQueue wq(threads);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) {
      wq.queue_work([&ran, i] {
        ran.fetch_add(1);
        if (i == 10 || i == 60) throw std::runtime_error("item " + std::to_string(i));
      });
    }
    try {
      wq.flush();
      ADD_FAILURE() << "flush did not throw";
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_TRUE(what == "item 10" || what == "item 60") << what;
    }
    EXPECT_EQ(ran.load(), 100);  // items are independent: one failing does not cancel the others
    EXPECT_NO_THROW(wq.flush());  // the error was collected
    wq.queue_work([&ran] { ran.fetch_add(1); });
    wq.flush();
    EXPECT_EQ(ran.load(), 101);
  }
}

TEST(WorkQueue, ParallelForExceptionIsRethrownInTheCaller) {
  for (unsigned threads : {1u, 2u, 4u}) {
    WorkQueue wq(threads);
    try {
      wq.parallel_for(0, 10000, [](size_t i) {
        if (i == 37) throw std::out_of_range("index 37");
      });
      ADD_FAILURE() << "parallel_for did not throw";
    } catch (const std::out_of_range& e) {
      EXPECT_STREQ(e.what(), "index 37");
    }
    // Several throwers: exactly one exception comes out, and it is one of theirs.
    try {
      wq.parallel_for(0, 1000, [](size_t i) {
        if (i % 100 == 0) throw std::runtime_error("index " + std::to_string(i));
      });
      ADD_FAILURE() << "parallel_for did not throw";
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_EQ(what.rfind("index ", 0), 0u) << what;
      EXPECT_EQ(std::stoul(what.substr(6)) % 100, 0u) << what;
    }
    // The queue is still fine afterwards, and parallel_for errors do not leak into flush().
    std::atomic<size_t> sum{0};
    wq.parallel_for(0, 100, [&](size_t i) { sum += i; });
    EXPECT_EQ(sum.load(), 4950u);
    EXPECT_NO_THROW(wq.flush());
  }
}

TEST(WorkQueue, DestructionRunsQueuedWork) {
  std::atomic<int> ran{0};
  Gate gate;
  {
    WorkQueue wq(2);  // one worker: everything after the blocker stays queued until the gate opens
    wq.queue_work([&] { gate.wait(); });
    for (int i = 0; i < 1000; ++i) wq.queue_work([&] { ran.fetch_add(1); });
    // Work queued by work during shutdown runs too.
    wq.queue_work([&] { wq.queue_work([&] { ran.fetch_add(1000); }); });
    gate.open();
  }
  EXPECT_EQ(ran.load(), 2000);
}

TEST(WorkQueue, DestructionWithUncollectedErrorDoesNotTerminate) {
  std::atomic<int> ran{0};
  {
    WorkQueue wq(3);
    for (int i = 0; i < 10; ++i) {
      wq.queue_work([&] {
        ran.fetch_add(1);
        throw std::runtime_error("never collected");
      });
    }
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(WorkQueue, FlushFromAWorkItemIsRefused) {
  WorkQueue wq(2);
  wq.queue_work([&] { wq.flush(); });
  EXPECT_THROW(wq.flush(), std::logic_error);
}

TEST(WorkQueue, EmptyFunctionIsRefused) {
  WorkQueue wq(2);
  EXPECT_THROW(wq.queue_work(std::function<void()>()), std::invalid_argument);
}

TEST(WorkQueue, PinnedWorkersRunOnTheirCpu) {
  std::vector<int> cpus = affinity_cpus();
  if (std::find(cpus.begin(), cpus.end(), 0) == cpus.end()) GTEST_SKIP() << "CPU 0 is not in the affinity mask";
  WorkQueue wq(3, {.pin = true, .cpus = {0}});
  EXPECT_EQ(wq.nr_pinned(), 2u);
  std::mutex mu;
  std::vector<int> observed;
  for (int i = 0; i < 64; ++i) {
    wq.queue_work([&] {
      int cpu = sched_getcpu();
      std::lock_guard lk(mu);
      observed.push_back(cpu);
    });
  }
  wq.flush();
  ASSERT_EQ(observed.size(), 64u);
  for (int cpu : observed) EXPECT_EQ(cpu, 0);
}

TEST(WorkQueue, PinningDefaultsToTheAffinityMask) {
  std::vector<int> cpus = affinity_cpus();
  if (cpus.empty()) GTEST_SKIP() << "no affinity mask";
  const unsigned workers = static_cast<unsigned>(cpus.size()) + 1;  // wraps around the CPU list
  WorkQueue wq(workers + 1, {.pin = true});
  EXPECT_EQ(wq.nr_pinned(), workers);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) wq.queue_work([&] { ran.fetch_add(1); });
  wq.flush();
  EXPECT_EQ(ran.load(), 100);
}

TEST(WorkQueue, PinningToAnUnusableCpuLeavesWorkersUnpinned) {
  std::vector<int> cpus = affinity_cpus();
  for (int bad : {4095, -1, 1 << 30}) {
    if (std::find(cpus.begin(), cpus.end(), bad) != cpus.end()) continue;
    SCOPED_TRACE(bad);
    WorkQueue wq(3, {.pin = true, .cpus = {bad}});
    EXPECT_EQ(wq.nr_pinned(), 0u);
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) wq.queue_work([&] { ran.fetch_add(1); });
    wq.parallel_for(0, 100, [&](size_t) { ran.fetch_add(1); });
    wq.flush();
    EXPECT_EQ(ran.load(), 200);
  }
}

TEST(WorkQueue, WorkersAreNamed) {
  {
    WorkQueue wq(2);
    std::string name;
    wq.queue_work([&] { name = current_thread_name(); });
    wq.flush();
    EXPECT_EQ(name, "tperf-wq/0");
  }
  {
    // Linux keeps 15 characters: the name is cut, the worker index survives.
    WorkQueue wq(2, {.name = "symbolize-by-process"});
    std::string name;
    wq.queue_work([&] { name = current_thread_name(); });
    wq.flush();
    EXPECT_EQ(name, "symbolize-by-/0");
  }
  {
    WorkQueue wq(13, {.name = "abcdefghijklmnopqrstuvwxyz"});
    std::mutex mu;
    std::vector<std::string> names;
    Gate gate;
    std::atomic<int> arrived{0};
    // 12 items that all wait until 12 have arrived: each runs on a different worker.
    for (int i = 0; i < 12; ++i) {
      wq.queue_work([&] {
        {
          std::lock_guard lk(mu);
          names.push_back(current_thread_name());
        }
        if (arrived.fetch_add(1) + 1 == 12) gate.open();
        gate.wait();
      });
    }
    wq.flush();
    std::vector<std::string> expected;
    for (int i = 0; i < 10; ++i) expected.push_back("abcdefghijklm/" + std::to_string(i));
    expected.push_back("abcdefghijkl/10");
    expected.push_back("abcdefghijkl/11");
    std::sort(names.begin(), names.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected);
  }
}

TEST(WorkQueue, NestedParallelForCompletes) {
  for (unsigned threads : {1u, 2u, 4u, 8u}) {
    WorkQueue wq(threads);
    std::vector<std::atomic<int>> seen(64 * 64);
    std::atomic<int> moved_thread{0};
    wq.parallel_for(0, 64, [&](size_t i) {
      const std::thread::id outer = std::this_thread::get_id();
      wq.parallel_for(0, 64, [&](size_t j) {
        seen[i * 64 + j].fetch_add(1);
        moved_thread += std::this_thread::get_id() != outer;  // nested work runs inline
      });
    });
    for (size_t k = 0; k < seen.size(); ++k) ASSERT_EQ(seen[k].load(), 1) << k;
    EXPECT_EQ(moved_thread.load(), 0);

    // Three levels, from queue_work items, with an exception from the innermost level.
    std::atomic<int> leaves{0};
    for (int item = 0; item < 8; ++item) {
      wq.queue_work([&] {
        wq.parallel_for(0, 8, [&](size_t) {
          wq.parallel_for(0, 8, [&](size_t) { wq.parallel_for(0, 8, [&](size_t) { leaves.fetch_add(1); }); });
        });
      });
    }
    wq.queue_work([&] { wq.parallel_for(0, 8, [](size_t i) { if (i == 5) throw std::runtime_error("deep"); }); });
    EXPECT_THROW(wq.flush(), std::runtime_error);
    EXPECT_EQ(leaves.load(), 8 * 8 * 8 * 8);
  }
}

TEST(WorkQueue, ParallelForOnAnotherQueueFromAWorker) {
  WorkQueue outer(3);
  WorkQueue inner(3);
  std::atomic<size_t> sum{0};
  outer.parallel_for(0, 10, [&](size_t) { inner.parallel_for(0, 1000, [&](size_t j) { sum += j; }); });
  EXPECT_EQ(sum.load(), 10u * 499500u);
}

TEST(WorkQueue, ConcurrentParallelForCallers) {
  WorkQueue wq(4);
  std::vector<std::thread> callers;
  std::vector<size_t> sums(6, 0);
  for (size_t c = 0; c < sums.size(); ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        std::atomic<size_t> sum{0};
        wq.parallel_for(0, 1000 + c, [&](size_t i) { sum.fetch_add(i, std::memory_order_relaxed); });
        sums[c] += sum.load();
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (size_t c = 0; c < sums.size(); ++c) {
    size_t n = 1000 + c;
    EXPECT_EQ(sums[c], 50 * (n * (n - 1) / 2)) << c;
  }
}

TEST(WorkQueue, StressManyProducers) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 25000;
  for (unsigned threads : {1u, 2u, 5u}) {
    WorkQueue wq(threads);
    std::atomic<uint64_t> count{0}, sum{0};
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        for (int i = 0; i < kPerProducer; ++i) {
          uint64_t v = static_cast<uint64_t>(p) * kPerProducer + i;
          wq.queue_work([&count, &sum, v] {
            count.fetch_add(1, std::memory_order_relaxed);
            sum.fetch_add(v, std::memory_order_relaxed);
          });
          if (i % 5000 == 4999) wq.flush();  // flushes racing with other producers' items
        }
      });
    }
    for (std::thread& t : producers) t.join();
    wq.flush();
    constexpr uint64_t kTotal = uint64_t{kProducers} * kPerProducer;
    EXPECT_EQ(count.load(), kTotal);
    EXPECT_EQ(sum.load(), kTotal * (kTotal - 1) / 2);
  }
}

}  // namespace
}  // namespace tperf::util
