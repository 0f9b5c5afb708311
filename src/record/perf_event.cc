#include "record/perf_event.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tperf::record {

int perf_event_open(const perfdata::PerfEventAttr& attr, int pid, int cpu, int group_fd, unsigned long flags) {
  perfdata::PerfEventAttr a = attr;
  if (a.size == 0) a.size = perfdata::kAttrSizeVer7;
  std::vector<uint8_t> bytes;
  perfdata::encode_attr(a, bytes);
  // The kernel reads the struct with its natural alignment.
  alignas(8) uint8_t buf[perfdata::kAttrSizeMax + 64] = {};
  std::memcpy(buf, bytes.data(), std::min(bytes.size(), sizeof buf));
  long fd = ::syscall(__NR_perf_event_open, buf, pid, cpu, group_fd, flags);
  if (fd < 0) return -errno;
  return static_cast<int>(fd);
}

namespace {
int ioctl_result(int rc) { return rc < 0 ? -errno : 0; }
}  // namespace

int event_enable(int fd) { return ioctl_result(::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)); }
int event_disable(int fd) { return ioctl_result(::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0)); }
int event_set_output(int fd, int target_fd) { return ioctl_result(::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, target_fd)); }
int event_id(int fd, uint64_t* id) { return ioctl_result(::ioctl(fd, PERF_EVENT_IOC_ID, id)); }

bool event_read_lost(int fd, uint64_t* lost) {
  uint64_t values[3] = {};
  ssize_t n = ::read(fd, values, sizeof values);
  if (n != static_cast<ssize_t>(sizeof values)) return false;
  *lost = values[2];
  return true;
}

bool kernel_accepts_deferred_callchains() {
  static const bool accepted = [] {
    using namespace perfdata;
    PerfEventAttr a;
    a.type = kTypeSoftware;
    a.size = kAttrSizeVer7;
    a.config = kSwCpuClock;
    a.sample_period = 100000;
    a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCallchain;
    // User space only, disabled: what any user may open under perf_event_paranoid 2, so a
    // refusal is about the bit.
    for (AttrFlagBit bit : {kFlagDisabled, kFlagExcludeKernel, kFlagExcludeHv, kFlagDeferCallchain}) a.set_flag(bit);
    int fd = perf_event_open(a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  }();
  return accepted;
}

int perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int v = 2;
  if (!(in >> v)) return 2;
  return v;
}

std::string explain_open_error(int err, const std::string& event_name, const perfdata::PerfEventAttr& attr,
                               int pid, int cpu) {
  std::string where = pid == -1 ? fmt::format("all tasks on CPU {}", cpu)
                                 : (cpu < 0 ? fmt::format("pid {}", pid) : fmt::format("pid {} on CPU {}", pid, cpu));
  std::string head = fmt::format("cannot open event '{}' for {}: {}", event_name, where, std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM: {
      int paranoid = perf_event_paranoid();
      std::string need = pid == -1 ? "-1 (or 0) for system-wide (-a/-C) recording"
                                   : (attr.flag(perfdata::kFlagExcludeKernel) ? "2 or less" : "1 or less (or use :u)");
      return fmt::format(
          "{}\n  kernel.perf_event_paranoid is {}; it must be {}.\n"
          "  As root: sysctl -w kernel.perf_event_paranoid=-1, or give tperf CAP_PERFMON "
          "(setcap cap_perfmon+ep $(command -v tperf)), or run it as root.",
          head, paranoid, need);
    }
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      if (attr.type == perfdata::kTypeHardware || attr.type == perfdata::kTypeHwCache || attr.type == perfdata::kTypeRaw) {
        return head + "\n  This machine has no hardware PMU for it (a VM without PMU passthrough?). "
                      "Use a software event such as -e cpu-clock.";
      }
      return head + "\n  The kernel does not support this event here.";
    case ESRCH:
      return head + "\n  No such process (it may have exited).";
    case EMFILE:
      return head + "\n  Too many open files: raise the limit (ulimit -n) or record fewer CPUs/threads.";
    case EINVAL:
      if (attr.precise_ip() > 0) return head + "\n  Try without the :p modifier.";
      if (attr.freq() && attr.sample_period > 0) {
        return head + "\n  The frequency may exceed kernel.perf_event_max_sample_rate; try a lower -F.";
      }
      return head;
    default:
      return head;
  }
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  std::string part;
  auto number = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 6) {
      throw std::invalid_argument(fmt::format("bad CPU list '{}'", text));
    }
    return std::stoi(s);
  };
  while (std::getline(ss, part, ',')) {
    while (!part.empty() && (part.back() == '\n' || part.back() == ' ')) part.pop_back();
    if (part.empty()) continue;
    auto dash = part.find('-');
    if (dash == std::string::npos) {
      cpus.push_back(number(part));
    } else {
      int a = number(part.substr(0, dash)), b = number(part.substr(dash + 1));
      if (b < a) throw std::invalid_argument(fmt::format("bad CPU list '{}'", text));
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::vector<int> read_cpu_list_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return {};
  try {
    return parse_cpu_list(line);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> online_cpus() {
  auto cpus = read_cpu_list_file("/sys/devices/system/cpu/online");
  if (cpus.empty()) {
    long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < std::max(1L, n); ++i) cpus.push_back(static_cast<int>(i));
  }
  return cpus;
}

}  // namespace tperf::record
