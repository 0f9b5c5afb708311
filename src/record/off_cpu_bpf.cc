#include "record/off_cpu_bpf.h"

#include <fmt/format.h>

#ifdef TPERF_HAVE_BPF_SKEL
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "record/bpf/off_cpu_shared.h"
#include "record/off_cpu.skel.h"
#endif

namespace tperf::record {

#ifdef TPERF_HAVE_BPF_SKEL

namespace {

// libbpf's own messages: the last warning says why a load failed; keep it for the user rather
// than let libbpf print pages of verifier log.
thread_local std::string* g_libbpf_last = nullptr;
int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || !g_libbpf_last) return 0;
  char buf[512];
  int n = std::vsnprintf(buf, sizeof buf, format, args);
  if (n > 0) {
    std::string line(buf);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    if (line.rfind("libbpf: ", 0) == 0) line.erase(0, 8);
    if (!line.empty()) *g_libbpf_last = line;
  }
  return 0;
}

std::vector<uint64_t> read_stack(int fd, uint64_t key) {
  std::vector<uint64_t> out;
  if (key == 0) return out;
  uint64_t ips[TPERF_OFFCPU_STACK_DEPTH] = {};
  if (bpf_map_lookup_elem(fd, &key, ips) != 0) return out;
  for (uint64_t ip : ips) {
    if (ip == 0) break;
    out.push_back(ip);
  }
  return out;
}

}  // namespace

struct OffCpuBpf::Impl {
  tperf_off_cpu* skel = nullptr;
  ~Impl() {
    if (skel) tperf_off_cpu__destroy(skel);
  }
};

bool OffCpuBpf::built() { return true; }

std::unique_ptr<OffCpuBpf> OffCpuBpf::open(const OffCpuBpfFilter& filter, std::string* why) {
  std::string last;
  g_libbpf_last = &last;
  libbpf_set_print(libbpf_print);
  auto impl = std::make_unique<Impl>();
  auto failed = [&](const char* step, int err) {
    g_libbpf_last = nullptr;
    std::string reason = err ? std::strerror(err > 0 ? err : -err) : "unknown error";
    if (err == -EPERM || err == EPERM || err == -EACCES || err == EACCES) reason += " (needs root or CAP_BPF + CAP_PERFMON)";
    *why = fmt::format("the BPF program cannot be {}: {}{}", step, reason, last.empty() ? "" : " (libbpf: " + last + ")");
    return nullptr;
  };
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    g_libbpf_last = nullptr;
    *why = "this kernel has no BTF (/sys/kernel/btf/vmlinux), which the BPF program's tp_btf/sched_switch needs";
    return nullptr;
  }
  // Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK.
  struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  ::setrlimit(RLIMIT_MEMLOCK, &unlimited);
  impl->skel = tperf_off_cpu__open();
  if (!impl->skel) return failed("opened", errno);
  impl->skel->rodata->filter_mode = filter.mode == OffCpuBpfFilter::Mode::kAll         ? 0
                                    : filter.mode == OffCpuBpfFilter::Mode::kProcesses ? 1
                                                                                       : 2;
  impl->skel->rodata->follow_forks = filter.follow_forks ? 1 : 0;
  if (int err = tperf_off_cpu__load(impl->skel)) return failed("loaded", err);
  if (int err = tperf_off_cpu__attach(impl->skel)) return failed("attached", err);
  g_libbpf_last = nullptr;
  libbpf_set_print(nullptr);
  return std::unique_ptr<OffCpuBpf>(new OffCpuBpf(std::move(impl)));
}

void OffCpuBpf::add_task(int32_t id) {
  uint32_t key = static_cast<uint32_t>(id);
  uint8_t one = 1;
  bpf_map_update_elem(bpf_map__fd(impl_->skel->maps.task_filter), &key, &one, BPF_ANY);
}

void OffCpuBpf::set_enabled(bool on) { __atomic_store_n(&impl_->skel->bss->enabled, on ? 1u : 0u, __ATOMIC_SEQ_CST); }

std::vector<OffCpuTotal> OffCpuBpf::totals() const {
  std::vector<OffCpuTotal> out;
  const int totals_fd = bpf_map__fd(impl_->skel->maps.totals);
  const int stacks_fd = bpf_map__fd(impl_->skel->maps.stacks);
  tperf_offcpu_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(totals_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    tperf_offcpu_total value{};
    if (bpf_map_lookup_elem(totals_fd, &key, &value) != 0) continue;
    OffCpuTotal t;
    t.pid = key.pid;
    t.tid = key.tid;
    t.runnable = key.state == TPERF_OFFCPU_RUNNABLE;
    t.ns = value.ns;
    t.count = value.count;
    t.kernel_stack = read_stack(stacks_fd, key.kernel_stack);
    t.user_stack = read_stack(stacks_fd, key.user_stack);
    out.push_back(std::move(t));
  }
  return out;
}

uint64_t OffCpuBpf::dropped() const { return __atomic_load_n(&impl_->skel->bss->dropped, __ATOMIC_SEQ_CST); }
uint64_t OffCpuBpf::dropped_stacks() const {
  return __atomic_load_n(&impl_->skel->bss->dropped_stacks, __ATOMIC_SEQ_CST);
}

#else  // !TPERF_HAVE_BPF_SKEL

struct OffCpuBpf::Impl {};

bool OffCpuBpf::built() { return false; }

std::unique_ptr<OffCpuBpf> OffCpuBpf::open(const OffCpuBpfFilter&, std::string* why) {
  *why = "this tperf was built without the BPF program (clang, bpftool or libbpf-dev missing at build time)";
  return nullptr;
}
void OffCpuBpf::add_task(int32_t) {}
void OffCpuBpf::set_enabled(bool) {}
std::vector<OffCpuTotal> OffCpuBpf::totals() const { return {}; }
uint64_t OffCpuBpf::dropped() const { return 0; }
uint64_t OffCpuBpf::dropped_stacks() const { return 0; }

#endif

OffCpuBpf::OffCpuBpf(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OffCpuBpf::~OffCpuBpf() = default;

}  // namespace tperf::record
