#include "record/event_list.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "perfdata/abi.h"
#include "record/perf_event.h"

namespace tperf::record {

using namespace perfdata;

uint64_t dwarf_regs_mask() {
#if defined(__x86_64__)
  return 0xff0fffULL;  // AX..R15 without DS/ES/FS/GS: what perf samples on x86_64
#elif defined(__aarch64__)
  return (1ULL << 33) - 1;  // x0..x30, sp, pc
#else
  return 0;
#endif
}

EventList::EventList(EventListConfig config) : config_(std::move(config)) {
  if (config_.events.empty()) throw std::invalid_argument("no events");
  if (config_.cpus.empty()) config_.cpus = online_cpus();
  if (config_.call_graph == CallGraph::kDwarf && dwarf_regs_mask() == 0) {
    throw std::invalid_argument("--call-graph dwarf is not supported on this architecture");
  }
  if (config_.dwarf_stack_size == 0 || config_.dwarf_stack_size > 65528 || config_.dwarf_stack_size % 8 != 0) {
    throw std::invalid_argument(
        fmt::format("dwarf stack size {} must be a multiple of 8 between 8 and 65528", config_.dwarf_stack_size));
  }
  open_cpus_ = config_.cpus;
  if (config_.system_wide) {
    open_threads_ = {-1};
  } else {
    if (config_.threads.empty()) throw std::invalid_argument("no thread to record");
    open_threads_ = config_.threads;
  }
  build_attrs();
}

EventList::~EventList() {
  buffers_.clear();
  for (auto& ev : events_) {
    for (int fd : ev.fds) {
      if (fd >= 0) ::close(fd);
    }
  }
}

void EventList::build_attrs() {
  std::vector<EventSpec> specs = config_.events;
  // System-wide, perf puts the side-band flags on a dummy event that is enabled from the start, so
  // tasks created during /proc synthesis are not missed.
  bool add_dummy = config_.system_wide;
  size_t total = specs.size() + (add_dummy ? 1 : 0) + (config_.extra_event ? 1 : 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    const EventSpec& s = specs[i];
    Event ev;
    ev.spec = s;
    PerfEventAttr& a = ev.attr;
    a.type = s.type;
    a.size = kAttrSizeVer7;
    a.config = s.config;
    a.sample_type = kSampleIp | kSampleTid | kSampleTime;
    if (s.is_tracepoint()) {
      a.sample_period = 1;  // every hit, as perf does for tracepoints
      a.sample_type |= kSampleCpu | kSamplePeriod | kSampleRaw;
    } else if (config_.use_freq) {
      a.sample_period = config_.freq;
      a.set_flag(kFlagFreq);
      a.sample_type |= kSamplePeriod;
    } else {
      a.sample_period = config_.period;
    }
    if (config_.system_wide || config_.sample_cpu) a.sample_type |= kSampleCpu;
    if (config_.call_graph != CallGraph::kNone) a.sample_type |= kSampleCallchain;
    if (config_.call_graph == CallGraph::kDwarf) {
      a.sample_type |= kSampleRegsUser | kSampleStackUser;
      a.sample_regs_user = dwarf_regs_mask();
      a.sample_stack_user = config_.dwarf_stack_size;
      a.set_flag(kFlagExcludeCallchainUser);
    }
    if (config_.defer_callchain && config_.call_graph == CallGraph::kFramePointer) a.set_flag(kFlagDeferCallchain);
    a.read_format = kReadId | kReadLost;
    a.set_flag(kFlagDisabled);
    a.set_flag(kFlagInherit, config_.inherit);
    a.set_flag(kFlagEnableOnExec, config_.enable_on_exec);
    a.set_flag(kFlagSampleIdAll);
    a.set_flag(kFlagExcludeUser, s.exclude_user);
    a.set_flag(kFlagExcludeKernel, s.exclude_kernel);
    a.set_flag(kFlagExcludeHv, s.exclude_hv);
    a.set_flag(kFlagExcludeGuest, s.exclude_guest);
    a.set_flag(kFlagExcludeHost, s.exclude_host);
    a.flags |= static_cast<uint64_t>(s.precise_ip & 3) << kFlagPreciseIp0;
    if (config_.clockid >= 0) {
      a.set_flag(kFlagUseClockid);
      a.clockid = config_.clockid;
    }
    events_.push_back(std::move(ev));
  }
  if (add_dummy) {
    Event ev;
    ev.spec.name = "dummy:HG";
    ev.spec.type = kTypeSoftware;
    ev.spec.config = kSwDummy;
    ev.spec.exclude_guest = false;
    PerfEventAttr& a = ev.attr;
    a.type = kTypeSoftware;
    a.size = kAttrSizeVer7;
    a.config = kSwDummy;
    a.sample_period = 1;
    a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCpu;
    a.read_format = kReadId | kReadLost;
    a.set_flag(kFlagInherit, config_.inherit);
    a.set_flag(kFlagSampleIdAll);
    if (config_.clockid >= 0) {
      a.set_flag(kFlagUseClockid);
      a.clockid = config_.clockid;
    }
    events_.push_back(std::move(ev));
  }
  // Several events: each sample names its event. perf uses IDENTIFIER (at a fixed place) only when
  // the sample layouts differ, else ID.
  if (total > 1) {
    bool differ = config_.extra_event;
    for (const auto& ev : events_) differ = differ || ev.attr.sample_type != events_.front().attr.sample_type;
    for (auto& ev : events_) ev.attr.sample_type |= differ ? kSampleIdentifier : kSampleId;
  }
  Event& tracking = add_dummy ? events_.back() : events_.front();
  tracking.tracking = true;
  PerfEventAttr& t = tracking.attr;
  for (AttrFlagBit bit : {kFlagMmap, kFlagComm, kFlagTask, kFlagMmap2, kFlagCommExec, kFlagKsymbol, kFlagBpfEvent}) {
    t.set_flag(bit);
  }
  if (config_.switch_events) t.set_flag(kFlagContextSwitch);
  if (config_.buildid_mmap) t.set_flag(kFlagBuildId);
  // One event emits the CALLCHAIN_DEFERRED records: on several, each record would come twice.
  if (config_.defer_callchain && config_.call_graph == CallGraph::kFramePointer) t.set_flag(kFlagDeferOutput);
}

int EventList::open_one(Event& ev, int pid, int cpu, int group_fd) {
  return perf_event_open(ev.attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

std::vector<int> EventList::all_fds() const {
  std::vector<int> fds;
  for (const auto& ev : events_) {
    for (int fd : ev.fds) {
      if (fd >= 0) fds.push_back(fd);
    }
  }
  return fds;
}

void EventList::open(util::WorkQueue& wq, size_t data_pages) {
  const size_t ncpu = open_cpus_.size(), nthr = open_threads_.size();
  // Wake the reader when a quarter of the buffer is full (the kernel's default is half): more
  // room left for the time it takes to be scheduled on a busy machine.
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (auto& ev : events_) {
    ev.attr.set_flag(kFlagWatermark);
    ev.attr.wakeup_events = static_cast<uint32_t>(std::max<uint64_t>(page, data_pages * page / 4));
  }
  for (auto& ev : events_) ev.fds.assign(ncpu * nthr, -1);

  // The first fd of each event is opened alone, dropping what an older kernel refuses, so the
  // parallel opens below all use an attr the kernel takes.
  for (auto& ev : events_) {
    for (;;) {
      int fd = open_one(ev, open_threads_[0], open_cpus_[0], -1);
      if (fd >= 0) {
        ev.fds[0] = fd;
        break;
      }
      int err = -fd;
      if (err == EINVAL && (ev.attr.read_format & kReadLost)) {
        for (auto& e : events_) e.attr.read_format &= ~static_cast<uint64_t>(kReadLost);
        continue;
      }
      if (err == EINVAL && ev.attr.flag(kFlagBuildId)) {
        ev.attr.set_flag(kFlagBuildId, false);
        continue;
      }
      if (err == ESRCH && !config_.system_wide && nthr > 1) break;  // tried again per thread below
      if (ev.spec.needs_pmu() && !has_cpu_pmu()) {
        throw EventOpenError(
            fmt::format("event '{}' is a hardware event and this machine has no CPU PMU "
                        "(/sys/bus/event_source/devices/cpu is missing, e.g. a VM without PMU passthrough). "
                        "Use a software event such as -e cpu-clock.",
                        ev.spec.name),
            err);
      }
      throw EventOpenError(explain_open_error(err, ev.spec.name, ev.attr, open_threads_[0], open_cpus_[0]), err);
    }
  }

  buffers_.clear();
  buffers_.resize(ncpu);
  std::mutex mu;
  std::string first_error;
  int first_errno = 0;
  wq.parallel_for(0, ncpu, [&](size_t ci) {
    const int cpu = open_cpus_[ci];
    int owner = -1;
    auto fail = [&](std::string msg, int err) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.empty()) {
        first_error = std::move(msg);
        first_errno = err;
      }
    };
    for (auto& ev : events_) {
      for (size_t ti = 0; ti < nthr; ++ti) {
        size_t slot = ci * nthr + ti;
        int fd = ev.fds[slot];
        if (fd < 0) {
          fd = open_one(ev, open_threads_[ti], cpu, -1);
          if (fd < 0) {
            if (-fd == ESRCH && !config_.system_wide) continue;  // the thread exited meanwhile
            fail(explain_open_error(-fd, ev.spec.name, ev.attr, open_threads_[ti], cpu), -fd);
            return;
          }
          ev.fds[slot] = fd;
        }
        if (owner < 0) {
          int rc = buffers_[ci].map(fd, data_pages, cpu);
          if (rc < 0) {
            fail(fmt::format("cannot mmap the ring buffer of CPU {} ({} pages): {}{}", cpu, data_pages,
                             std::strerror(-rc),
                             -rc == EPERM ? " (the limit is kernel.perf_event_mlock_kb; try a smaller -m)" : ""),
                 -rc);
            return;
          }
          owner = fd;
        } else {
          int rc = event_set_output(fd, owner);
          if (rc < 0) {
            fail(fmt::format("cannot redirect event '{}' on CPU {} into its ring buffer: {}", ev.spec.name, cpu,
                             std::strerror(-rc)),
                 -rc);
            return;
          }
        }
      }
    }
  });
  if (!first_error.empty()) throw EventOpenError(first_error, first_errno);

  for (auto& ev : events_) {
    ev.ids.clear();
    ev.id_index.clear();
    for (size_t ci = 0; ci < ncpu; ++ci) {
      for (size_t ti = 0; ti < nthr; ++ti) {
        int fd = ev.fds[ci * nthr + ti];
        if (fd < 0) continue;
        uint64_t id = 0;
        if (event_id(fd, &id) < 0) continue;
        ev.ids.push_back(id);
        IdIndexEntry e;
        e.id = id;
        e.idx = ci;
        e.cpu = open_cpus_[ci];
        e.tid = open_threads_[ti];
        ev.id_index.push_back(e);
      }
    }
  }
}

void EventList::enable(util::WorkQueue& wq) {
  auto fds = all_fds();
  wq.parallel_for(0, fds.size(), [&](size_t i) { event_enable(fds[i]); }, 16);
}

void EventList::disable(util::WorkQueue& wq) {
  auto fds = all_fds();
  wq.parallel_for(0, fds.size(), [&](size_t i) { event_disable(fds[i]); }, 16);
}

void EventList::close(util::WorkQueue& wq) {
  wq.parallel_for(0, buffers_.size(), [&](size_t i) { buffers_[i] = RingBuffer(); });
  buffers_.clear();
  auto fds = all_fds();
  wq.parallel_for(0, fds.size(), [&](size_t i) { ::close(fds[i]); }, 16);
  for (auto& ev : events_) ev.fds.assign(ev.fds.size(), -1);
}

}  // namespace tperf::record
