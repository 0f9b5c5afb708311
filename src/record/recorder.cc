#include "record/recorder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "record/build_id_collector.h"
#include "record/perf_event.h"
#include "record/proc_synthesis.h"
#include "record/tracing_data.h"
#include "record/workload.h"
#include "util/workqueue.h"

namespace tperf::record {

using namespace perfdata;

namespace {

// --- signals: the handlers only note the signal and wake the poll loop through a pipe ---

volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_child_exited = 0;
int g_wake_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  if (sig == SIGCHLD)
    g_child_exited = 1;
  else if (g_stop_signal == 0)
    g_stop_signal = sig;
  if (g_wake_pipe[1] >= 0) {
    char c = 0;
    ssize_t w = ::write(g_wake_pipe[1], &c, 1);
    (void)w;
  }
  errno = saved;
}

class SignalGuard {
 public:
  SignalGuard() {
    g_stop_signal = 0;
    g_child_exited = 0;
    if (::pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_wake_pipe[0] = g_wake_pipe[1] = -1;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) {
      struct sigaction old {};
      ::sigaction(sig, &sa, &old);
      saved_.push_back({sig, old});
    }
    // Write errors (a closed pipe, a file size limit) come back as errors, not as deaths.
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    for (int sig : {SIGPIPE, SIGXFSZ}) {
      struct sigaction old {};
      ::sigaction(sig, &ign, &old);
      saved_.push_back({sig, old});
    }
  }
  ~SignalGuard() {
    for (auto& [sig, old] : saved_) ::sigaction(sig, &old, nullptr);
    for (int& fd : g_wake_pipe) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  static void drain_wake_pipe() {
    char buf[64];
    while (g_wake_pipe[0] >= 0 && ::read(g_wake_pipe[0], buf, sizeof buf) > 0) {
    }
  }

 private:
  std::vector<std::pair<int, struct sigaction>> saved_;
};

// --- what passes through: counted on the way to the file ---

struct Counters {
  uint64_t samples = 0, records = 0, lost_events = 0, lost_records = 0;
  uint64_t first_time = UINT64_MAX, last_time = 0;
  uint64_t wakeups = 0;
  void add(const Counters& o) {
    samples += o.samples;
    records += o.records;
    lost_events += o.lost_events;
    lost_records += o.lost_records;
    first_time = std::min(first_time, o.first_time);
    last_time = std::max(last_time, o.last_time);
    wakeups += o.wakeups;
  }
};

inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Every event shares IP|TID|TIME at the front of its samples (IDENTIFIER before them when there
// are several events), so the time of a sample sits at one offset for all of them.
void account(std::span<const uint8_t> rec, unsigned time_offset, Counters& c) {
  uint32_t type;
  std::memcpy(&type, rec.data(), 4);
  ++c.records;
  if (type == kRecordSample) {
    ++c.samples;
    if (rec.size() >= time_offset + 8) {
      uint64_t t = load_u64(rec.data() + time_offset);
      c.first_time = std::min(c.first_time, t);
      c.last_time = std::max(c.last_time, t);
    }
  } else if (type == kRecordLost && rec.size() >= 24) {
    ++c.lost_events;
    c.lost_records += load_u64(rec.data() + 16);
  }
}

std::string mb(uint64_t bytes) { return fmt::format("{:.3f}", static_cast<double>(bytes) / 1024.0 / 1024.0); }

uint64_t path_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

void pin_to(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  ::sched_setaffinity(0, sizeof set, &set);
}

// perf moves an existing output aside instead of overwriting it.
void keep_old_output(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  std::string old = path + ".old";
  if (S_ISDIR(st.st_mode)) {
    // Only directories that look like ours are moved; anything else is an error later.
    struct stat hs;
    if (::stat((path + "/data").c_str(), &hs) != 0) return;
    std::string cmd;
    struct stat os;
    if (::lstat(old.c_str(), &os) == 0 && S_ISDIR(os.st_mode)) {
      // Remove a previous .old directory of ours: its files first.
      for (int i = 0; i < 4096; ++i) {
        std::string f = old + "/data." + std::to_string(i);
        if (::unlink(f.c_str()) != 0 && errno == ENOENT && i > 1024) break;
      }
      ::unlink((old + "/data").c_str());
      ::rmdir(old.c_str());
    }
  }
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
    if (::rename(path.c_str(), old.c_str()) != 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
  }
}

// Reads the lost-sample counts (read_format LOST) of every fd and writes one LOST_SAMPLES record
// per fd that lost some, as perf does at the end.
uint64_t write_lost_samples(EventList& evlist, Writer& writer) {
  uint64_t total = 0;
  for (size_t i = 0; i < evlist.events().size(); ++i) {
    auto& ev = evlist.events()[i];
    if (!(ev.attr.read_format & kReadLost)) continue;
    RecordBuilder rb(ev.attr);
    size_t nthr = evlist.open_threads().size();
    for (size_t slot = 0; slot < ev.fds.size(); ++slot) {
      int fd = ev.fds[slot];
      uint64_t lost = 0;
      if (fd < 0 || !event_read_lost(fd, &lost) || lost == 0) continue;
      total += lost;
      SampleId sid;
      uint64_t id = 0;
      if (event_id(fd, &id) == 0) sid.id = id;
      int cpu = evlist.open_cpus()[slot / nthr];
      int tid = evlist.open_threads()[slot % nthr];
      sid.cpu = cpu < 0 ? 0 : static_cast<uint32_t>(cpu);
      sid.pid = sid.tid = tid < 0 ? 0 : static_cast<uint32_t>(tid);
      writer.write_record(rb.lost_samples(lost, sid));
    }
  }
  return total;
}

uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// One --threads reader: its CPUs' buffers, its own data.N file.
struct ReaderThread {
  std::vector<int> cpus;
  std::vector<size_t> buffers;
  std::unique_ptr<Writer> writer;
  Counters counters;
  std::string error;
};

}  // namespace

int parse_clockid(const std::string& text) {
  static const std::pair<const char*, int> names[] = {
      {"realtime", CLOCK_REALTIME}, {"real", CLOCK_REALTIME},         {"monotonic", CLOCK_MONOTONIC},
      {"mono", CLOCK_MONOTONIC},    {"monotonic_raw", CLOCK_MONOTONIC_RAW}, {"raw", CLOCK_MONOTONIC_RAW},
      {"boottime", CLOCK_BOOTTIME}, {"boot", CLOCK_BOOTTIME},         {"tai", CLOCK_TAI}};
  std::string t = text;
  for (auto& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (t.rfind("clock_", 0) == 0) t = t.substr(6);
  for (const auto& [name, id] : names) {
    if (t == name) return id;
  }
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos && t.size() < 4) return std::stoi(t);
  throw std::invalid_argument(
      fmt::format("unknown clock '{}' (monotonic, monotonic_raw, realtime, boottime, tai or a number)", text));
}

void parse_call_graph(const std::string& text, CallGraph* mode, uint32_t* dwarf_size, bool* defer) {
  auto comma = text.find(',');
  std::string m = text.substr(0, comma);
  const std::string rest = comma == std::string::npos ? std::string() : text.substr(comma + 1);
  if (defer) *defer = false;
  if (m == "fp") {
    if (comma != std::string::npos) {
      if (rest != "defer") throw std::invalid_argument(fmt::format("--call-graph fp takes no size ('{}')", rest));
      if (!defer) throw std::invalid_argument("--call-graph fp,defer is not supported here");
      *defer = true;
    }
    *mode = CallGraph::kFramePointer;
    return;
  }
  // The kernel defers only its own frame-pointer walk of the user stack (perf's wording).
  if (rest == "defer") throw std::invalid_argument("deferred callchain only works with FP");
  if (m == "dwarf") {
    *mode = CallGraph::kDwarf;
    if (comma != std::string::npos) {
      std::string s = rest;
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 6) {
        throw std::invalid_argument(fmt::format("bad dwarf stack size '{}'", s));
      }
      uint64_t v = std::stoull(s);
      v = (v + 7) & ~uint64_t{7};  // perf rounds up to a multiple of 8
      if (v == 0 || v > 65528) throw std::invalid_argument(fmt::format("dwarf stack size {} out of 8..65528", s));
      *dwarf_size = static_cast<uint32_t>(v);
    }
    return;
  }
  if (m == "lbr") throw std::invalid_argument("--call-graph lbr needs an Intel LBR PMU, which this tool does not drive");
  throw std::invalid_argument(fmt::format("unknown call graph mode '{}' (fp or dwarf[,size])", text));
}

size_t default_mmap_pages(size_t cpus) {
  // perf takes 512 KiB per buffer, what an unprivileged user may lock (perf_event_mlock_kb). A
  // user who may lock more (root) gets 2 MiB: at the highest cpu-clock rate a CPU fills 512 KiB
  // in about a tenth of a second, which a reader waiting behind a busy workload can miss. Capped
  // at 256 MiB over all CPUs.
  constexpr size_t kPage = 4096, kUnprivileged = 128, kPrivileged = 512, kTotalCap = size_t{256} << 20;
  if (::geteuid() != 0) return kUnprivileged;
  size_t pages = kPrivileged;
  while (pages > kUnprivileged && cpus * pages * kPage > kTotalCap) pages /= 2;
  return pages;
}

size_t parse_mmap_pages(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty -m value");
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 12) throw std::invalid_argument(fmt::format("bad -m value '{}'", text));
  uint64_t n = std::stoull(text.substr(0, i));
  std::string unit = text.substr(i);
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t pages;
  if (unit.empty()) {
    pages = n;
  } else {
    uint64_t mult;
    char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    if (u == 'B') mult = 1;
    else if (u == 'K') mult = 1024;
    else if (u == 'M') mult = 1024 * 1024;
    else if (u == 'G') mult = 1024ULL * 1024 * 1024;
    else throw std::invalid_argument(fmt::format("bad -m unit in '{}' (B, K, M or G)", text));
    if (unit.size() > 1 && !(unit.size() == 2 && (unit[1] == 'B' || unit[1] == 'b'))) {
      throw std::invalid_argument(fmt::format("bad -m unit in '{}'", text));
    }
    pages = n * mult / page;
    // perf rounds a size up to a power of two of pages.
    uint64_t p2 = 1;
    while (p2 < pages) p2 <<= 1;
    pages = p2;
  }
  if (pages == 0 || (pages & (pages - 1)) != 0) {
    throw std::invalid_argument(fmt::format("-m {}: the number of pages must be a power of two", text));
  }
  if (pages > (1u << 20)) throw std::invalid_argument(fmt::format("-m {}: too large", text));
  return static_cast<size_t>(pages);
}

RecordResult run_record(const RecordOptions& o, std::FILE* msg) {
  RecordResult res;
  auto say = [&](const std::string& text) {
    std::fflush(stdout);
    fmt::print(msg, "{}\n", text);
    std::fflush(msg);
  };
  auto fail = [&](const std::string& text, int code) {
    say("tperf record: " + text);
    res.error = text;
    res.exit_code = code;
    return res;
  };

  const bool pipe = o.output == "-";
  const bool threaded = o.threads.has_value();
  const bool system_wide = o.system_wide || !o.cpus.empty();
  if (o.command.empty() && o.pids.empty() && o.tids.empty() && !system_wide) {
    return fail("nothing to record: give a command (-- cmd args), -p PID, -t TID, -a or -C CPUS", 2);
  }
  if (system_wide && (!o.pids.empty() || !o.tids.empty())) return fail("-a/-C and -p/-t cannot be combined", 2);
  if (pipe && threaded) return fail("--threads writes a directory; it cannot write to a pipe (-o -)", 2);
  if (o.output.empty()) return fail("empty output path", 2);

  SignalGuard signals;

  // --- the event list: before the output exists, so a refusal leaves no file behind ---
  EventListConfig cfg;
  cfg.events = o.events;
  if (cfg.events.empty()) cfg.events.push_back(parse_event("cpu-clock"));
  for (const auto& e : cfg.events) {
    if (e.needs_pmu() && !has_cpu_pmu()) {
      return fail(fmt::format("event '{}' is a hardware event and this machine has no CPU PMU "
                              "(/sys/bus/event_source/devices/cpu is missing, e.g. a VM without PMU passthrough); "
                              "use a software event such as -e cpu-clock",
                              e.name),
                  1);
    }
  }
  cfg.system_wide = system_wide;
  try {
    cfg.cpus = o.cpus.empty() ? online_cpus() : o.cpus;
  } catch (const std::exception& e) {
    return fail(e.what(), 2);
  }
  {
    auto online = online_cpus();
    for (int c : cfg.cpus) {
      if (std::find(online.begin(), online.end(), c) == online.end()) {
        return fail(fmt::format("CPU {} is not online (online: {})", c, format_cpu_list(online)), 2);
      }
    }
  }
  cfg.inherit = o.inherit;
  cfg.use_freq = o.use_freq;
  cfg.freq = o.freq;
  cfg.period = o.period;
  cfg.call_graph = o.call_graph;
  cfg.dwarf_stack_size = o.dwarf_stack_size;
  if (o.defer_callchain && o.call_graph == CallGraph::kFramePointer) {
    cfg.defer_callchain = kernel_accepts_deferred_callchains();
    if (!cfg.defer_callchain) {
      std::fprintf(msg,
                   "tperf record: this kernel does not accept deferred user callchains (Linux 6.19+): recording "
                   "plain fp callchains\n");
    }
  }
  cfg.switch_events = o.switch_events;
  cfg.buildid_mmap = o.buildid_mmap;
  cfg.clockid = o.clockid;
  cfg.extra_event = o.off_cpu_bpf != nullptr;

  Workload workload;
  std::vector<int32_t> target_tids;
  if (!system_wide) {
    for (int32_t pid : o.pids) {
      auto tids = process_threads(pid);
      if (tids.empty()) return fail(fmt::format("no process with pid {}", pid), 2);
      target_tids.insert(target_tids.end(), tids.begin(), tids.end());
    }
    for (int32_t tid : o.tids) {
      if (::kill(tid, 0) != 0 && errno == ESRCH) return fail(fmt::format("no thread with tid {}", tid), 2);
      target_tids.push_back(tid);
    }
    if (o.off_cpu_bpf) {
      for (int32_t pid : o.pids) o.off_cpu_bpf->add_task(pid);
      for (int32_t tid : o.tids) o.off_cpu_bpf->add_task(tid);
    }
  }
  if (!o.command.empty()) {
    try {
      workload.prepare(o.command);
    } catch (const std::exception& e) {
      return fail(e.what(), 2);
    }
  }
  if (!system_wide) {
    if (o.pids.empty() && o.tids.empty()) {
      cfg.threads = {workload.pid()};
      cfg.enable_on_exec = true;
      if (o.off_cpu_bpf) o.off_cpu_bpf->add_task(workload.pid());
    } else {
      cfg.threads = target_tids;
    }
  }

  std::unique_ptr<EventList> evlist;
  try {
    evlist = std::make_unique<EventList>(cfg);
  } catch (const std::exception& e) {
    return fail(e.what(), 2);
  }
  const unsigned nworkers = o.synthesis_threads ? o.synthesis_threads : static_cast<unsigned>(online_cpus().size());
  util::WorkQueue wq(nworkers, util::WorkQueueOptions{.pin = false, .cpus = {}, .name = "tperf-rec"});
  const size_t pages = o.mmap_pages ? o.mmap_pages : default_mmap_pages(online_cpus().size());
  try {
    evlist->open(wq, pages);
  } catch (const EventOpenError& e) {
    workload.kill(SIGKILL);
    return fail(e.what(), 1);
  }

  // --- the output ---
  const std::string dir = threaded ? o.output : "";
  const std::string header_path = threaded ? o.output + "/data" : o.output;
  Writer::Options wo;
  wo.pipe = pipe;
  if (!threaded) wo.compression_level = o.compression_level;
  // perf 6.1 fails on a COMPRESSED record that decompresses to nothing, which happens when one
  // flush's zstd output is split over several records: chunks this small always fit in one.
  constexpr size_t kCompressChunk = 60 * 1024;
  wo.compress_chunk = kCompressChunk;
  auto writer = std::make_unique<Writer>(wo);
  try {
    if (pipe) {
      writer->open_fd(STDOUT_FILENO, "-");
    } else {
      keep_old_output(o.output);
      if (threaded && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        throw IoError(fmt::format("{}: cannot create directory: {}", dir, std::strerror(errno)));
      }
      writer->open(header_path);
    }
  } catch (const std::exception& e) {
    workload.kill(SIGKILL);
    return fail(e.what(), 1);
  }

  size_t tracking_index = 0;
  for (size_t i = 0; i < evlist->events().size(); ++i) {
    auto& ev = evlist->events()[i];
    writer->add_attr(ev.attr, ev.ids, ev.spec.name);
    if (ev.tracking) tracking_index = i;
  }
  // The BPF way's offcpu-time event: two ids of its own (first sleeping, second runnable), above
  // every id the kernel gave this recording's fds.
  size_t offcpu_index = 0;
  uint64_t offcpu_ids[2] = {0, 0};
  if (o.off_cpu_bpf) {
    uint64_t top = 0;
    for (const auto& ev : evlist->events()) {
      for (uint64_t id : ev.ids) top = std::max(top, id);
    }
    offcpu_ids[0] = top + 1;
    offcpu_ids[1] = top + 2;
    offcpu_index = writer->add_attr(offcpu_time_attr(evlist->events().front().attr), {offcpu_ids[0], offcpu_ids[1]},
                                    "offcpu-time");
  }
  HostInfo host = read_host_info();
  std::vector<std::string> cmdline = o.cmdline;
  if (cmdline.empty()) cmdline = {"tperf", "record"};
  set_host_features(*writer, host, cmdline, o.version);
  if (o.clockid >= 0) {
    struct timespec res_ts {};
    ::clock_getres(o.clockid, &res_ts);
    writer->set_clockid(static_cast<uint64_t>(res_ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(res_ts.tv_nsec));
    ClockData cd;
    cd.version = 1;
    cd.clockid = static_cast<uint32_t>(o.clockid);
    cd.wall_clock_ns = clock_ns(CLOCK_REALTIME);
    cd.clockid_ns = clock_ns(o.clockid);
    writer->set_clock_data(cd);
  }
  if (threaded) writer->set_dir_format(1);
  std::vector<uint8_t> tracing_data;
  if (std::any_of(cfg.events.begin(), cfg.events.end(), [](const EventSpec& e) { return e.is_tracepoint(); })) {
    try {
      tracing_data = build_tracing_data(cfg.events);
    } catch (const std::exception& e) {
      workload.kill(SIGKILL);
      return fail(e.what(), 1);
    }
    if (!pipe) writer->set_feature(kFeatTracingData, tracing_data);
  }

  const RecordBuilder rb = writer->builder(tracking_index);
  const auto& first_attr = evlist->events().front().attr;
  const unsigned time_offset = 8 + ((first_attr.sample_type & kSampleIdentifier) ? 8 : 0) + 16;
  Counters main_counters;
  std::string write_error;

  auto write_one = [&](std::span<const uint8_t> rec) {
    account(rec, time_offset, main_counters);
    writer->write_record(rec);
  };

  bool workload_started = false;
  std::vector<ReaderThread> readers;
  try {
    if (pipe && !tracing_data.empty()) {
      // HEADER_TRACING_DATA: the record announces the (8-aligned) size; the blob follows it.
      std::vector<uint8_t> rec;
      size_t aligned = (tracing_data.size() + 7) & ~size_t{7};
      put_record_header(rec, kRecordHeaderTracingData, 0, 16, false);
      uint32_t size32 = static_cast<uint32_t>(aligned);
      const auto* p = reinterpret_cast<const uint8_t*>(&size32);
      rec.insert(rec.end(), p, p + 4);
      rec.insert(rec.end(), 4, 0);
      rec.insert(rec.end(), tracing_data.begin(), tracing_data.end());
      rec.resize(16 + aligned, 0);
      writer->write_record(rec);
    }
    // ID_INDEX, at most ~2000 entries per record.
    std::vector<IdIndexEntry> index;
    for (const auto& ev : evlist->events()) index.insert(index.end(), ev.id_index.begin(), ev.id_index.end());
    for (size_t i = 0; i < index.size(); i += 2000) {
      size_t n = std::min<size_t>(2000, index.size() - i);
      writer->write_record(rb.id_index(std::span<const IdIndexEntry>(index).subspan(i, n)));
    }
    SynthesisOptions so;
    so.buildid_mmap = o.buildid_mmap;
    synthesize_kernel_maps(rb, so, write_one);
    {
      std::vector<ThreadMapEntry> tm;
      for (int t : evlist->open_threads()) tm.push_back(ThreadMapEntry{t, ""});
      writer->write_record(rb.thread_map(tm));
      const auto& cpus = evlist->open_cpus();
      bool contiguous = !cpus.empty() && cpus.back() - cpus.front() + 1 == static_cast<int>(cpus.size());
      if (contiguous) {
        writer->write_record(rb.cpu_map_range(static_cast<uint16_t>(cpus.front()), static_cast<uint16_t>(cpus.back())));
      } else {
        std::vector<uint16_t> list(cpus.begin(), cpus.end());
        writer->write_record(rb.cpu_map(list));
      }
    }
    if (system_wide) {
      synthesize_all_tasks(rb, wq, so, write_one);
    } else if (!o.pids.empty() || !o.tids.empty()) {
      synthesize_threads(rb, target_tids, so, write_one);
    } else {
      synthesize_comm(rb, workload.pid(), so, write_one);
    }
    writer->write_record(rb.finished_init());

    // --- --threads: reader threads with their own data.N files ---
    if (threaded) {
      std::vector<int> buffer_cpus;
      for (auto& b : evlist->buffers()) buffer_cpus.push_back(b.cpu());
      auto groups = group_cpus(buffer_cpus, *o.threads);
      for (size_t g = 0; g < groups.size(); ++g) {
        ReaderThread r;
        r.cpus = groups[g];
        for (size_t b = 0; b < evlist->buffers().size(); ++b) {
          if (std::find(r.cpus.begin(), r.cpus.end(), evlist->buffers()[b].cpu()) != r.cpus.end()) r.buffers.push_back(b);
        }
        Writer::Options rwo;
        rwo.headerless = true;
        rwo.compression_level = o.compression_level;
        rwo.compress_chunk = kCompressChunk;
        r.writer = std::make_unique<Writer>(rwo);
        r.writer->open(fmt::format("{}/data.{}", dir, g));
        readers.push_back(std::move(r));
      }
    }
  } catch (const IoError& e) {
    write_error = e.what();
  } catch (const std::exception& e) {
    write_error = e.what();
  }

  // --- start ---
  std::string workload_error;
  if (write_error.empty()) {
    if (o.off_cpu_bpf) o.off_cpu_bpf->set_enabled(true);
    if (!cfg.enable_on_exec) evlist->enable(wq);
    if (!o.command.empty()) {
      workload_error = workload.start();
      workload_started = true;
    }
  }

  auto& buffers = evlist->buffers();
  std::vector<pollfd> pfds;
  for (auto& b : buffers) pfds.push_back(pollfd{b.fd(), POLLIN, 0});
  pfds.push_back(pollfd{g_wake_pipe[0], POLLIN, 0});
  const bool per_task = !system_wide;
  const size_t sleep_below = buffers.empty() ? 1 : std::max<size_t>(1, buffers.front().data_size() / 8);
  size_t hung = 0;

  auto drain_all = [&]() -> size_t {
    size_t bytes = 0;
    for (auto& b : buffers) bytes += b.drain(write_one);
    if (bytes && !threaded) writer->write_record(rb.finished_round());
    return bytes;
  };
  auto stop_wanted = [&]() {
    if (g_stop_signal) return true;
    if (!o.command.empty() && (!workload_started || workload.poll_exit())) return true;
    if (o.command.empty() && per_task && hung == buffers.size() && !buffers.empty()) return true;
    return false;
  };

  std::atomic<bool> readers_stop{false};
  int readers_wake = -1;
  std::unique_ptr<util::WorkQueue> reader_wq;
  if (write_error.empty() && workload_error.empty()) {
    if (threaded) {
      readers_wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      reader_wq = std::make_unique<util::WorkQueue>(static_cast<unsigned>(readers.size() + 1),
                                                    util::WorkQueueOptions{.pin = false, .cpus = {}, .name = "tperf-rd"});
      if (reader_wq->nr_threads() < readers.size() + 1) {
        write_error = "cannot start the reader threads";
      } else {
        for (auto& r : readers) {
          ReaderThread* rp = &r;
          reader_wq->queue_work([rp, &buffers, &readers_stop, readers_wake, time_offset, sleep_below]() {
            pin_to(rp->cpus);
            std::vector<pollfd> fds;
            for (size_t b : rp->buffers) fds.push_back(pollfd{buffers[b].fd(), POLLIN, 0});
            fds.push_back(pollfd{readers_wake, POLLIN, 0});
            auto sink = [&](std::span<const uint8_t> rec) {
              account(rec, time_offset, rp->counters);
              rp->writer->write_record(rec);
            };
            try {
              for (;;) {
                bool stopping = readers_stop.load(std::memory_order_acquire);
                size_t bytes = 0;
                for (size_t b : rp->buffers) bytes += buffers[b].drain(sink);
                if (stopping) break;
                if (bytes < sleep_below) {
                  int n = ::poll(fds.data(), fds.size(), 1000);
                  if (n > 0) ++rp->counters.wakeups;
                  for (size_t i = 0; i + 1 < fds.size(); ++i) {
                    if (fds[i].revents & (POLLHUP | POLLERR)) fds[i].fd = -1;
                  }
                }
              }
              rp->writer->finish();
            } catch (const std::exception& e) {
              rp->error = e.what();
              rp->writer->salvage();
            }
          });
        }
      }
    }

    // --- the main loop ---
    try {
      for (;;) {
        size_t bytes = threaded ? 0 : drain_all();
        if (stop_wanted()) break;
        // Sleep unless a pass brought a lot: a reader that spins on small passes is charged as a
        // CPU hog and then waits behind the workload for its turn while the buffers overflow;
        // one that sleeps until the wakeup watermark is scheduled as soon as it is woken.
        if (bytes < sleep_below) {
          if (threaded) {
            // Only the wake pipe and hang-ups matter here; readers poll for data.
            for (size_t i = 0; i + 1 < pfds.size(); ++i) pfds[i].events = 0;
          }
          int n = ::poll(pfds.data(), pfds.size(), 1000);
          if (n > 0 && !threaded) ++main_counters.wakeups;
          for (size_t i = 0; i + 1 < pfds.size(); ++i) {
            if (pfds[i].fd >= 0 && (pfds[i].revents & (POLLHUP | POLLERR))) {
              pfds[i].fd = -1;
              ++hung;
            }
          }
          SignalGuard::drain_wake_pipe();
        }
      }
    } catch (const std::exception& e) {
      write_error = e.what();
    }
  }

  // --- stop ---
  int stop_signal = g_stop_signal;
  if (workload_started && workload.running() && (stop_signal || !write_error.empty())) {
    workload.kill(SIGTERM);
  }
  if (!o.command.empty()) {
    if (!workload_started) workload.kill(SIGKILL);
    workload.wait();
  }
  evlist->disable(wq);
  if (o.off_cpu_bpf) o.off_cpu_bpf->set_enabled(false);
  if (threaded) {
    readers_stop.store(true, std::memory_order_release);
    if (readers_wake >= 0) {
      uint64_t one = 1;
      ssize_t w = ::write(readers_wake, &one, sizeof one);
      (void)w;
    }
    if (reader_wq) reader_wq->flush();
    reader_wq.reset();
    if (readers_wake >= 0) ::close(readers_wake);
  }
  if (write_error.empty()) {
    try {
      if (!threaded) drain_all();
      res.lost_samples = write_lost_samples(*evlist, *writer);
      if (o.off_cpu_bpf) {
        // The totals, after every real sample (perf's time stamps), then a round so a reader
        // orders them in.
        const PerfEventAttr& attr = writer->attr(offcpu_index);
        uint64_t time = kOffcpuTimestamp;
        for (const OffCpuTotal& t : o.off_cpu_bpf->totals()) {
          if (t.ns == 0) continue;
          writer->write_record(offcpu_time_sample(attr, t, offcpu_ids[t.runnable ? 1 : 0], time++));
          ++main_counters.samples;
        }
        writer->write_record(rb.finished_round());
        if (uint64_t dropped = o.off_cpu_bpf->dropped()) {
          say(fmt::format("tperf record: --off-cpu: {} off-CPU intervals were dropped (the BPF maps were full)", dropped));
        }
        if (uint64_t lost = o.off_cpu_bpf->dropped_stacks()) {
          say(fmt::format("tperf record: --off-cpu: {} stacks did not fit in the BPF stack map; their intervals are kept "
                          "without them",
                          lost));
        }
      }
    } catch (const std::exception& e) {
      write_error = e.what();
    }
  }
  evlist->close(wq);

  Counters total = main_counters;
  for (auto& r : readers) {
    total.add(r.counters);
    if (!r.error.empty() && write_error.empty()) write_error = r.error;
  }
  res.samples = total.samples;
  res.records = total.records;
  res.lost_events = total.lost_events;
  res.lost_records = total.lost_records;
  res.wakeups = total.wakeups;

  // --- finish the file ---
  bool finished = false;
  if (write_error.empty()) {
    try {
      if (!pipe && total.samples > 0) writer->set_sample_time(total.first_time, total.last_time);
      if (threaded && o.compression_level > 0) {
        // The data.N files are compressed, the header file is not: perf sizes its decompression
        // buffer from this feature, so it must be there all the same.
        uint64_t in = 0, out = 0;
        for (auto& r : readers) {
          in += r.writer->bytes_before_compression();
          out += r.writer->bytes_after_compression();
        }
        CompressedInfo ci;
        ci.type = 1;
        ci.level = static_cast<uint32_t>(o.compression_level);
        ci.ratio = out ? static_cast<uint32_t>((in + out / 2) / out) : 0;
        ci.mmap_len = 64 * 1024;
        writer->set_compressed(ci);
      }
      writer->finish();
      finished = true;
    } catch (const std::exception& e) {
      write_error = e.what();
    }
  }
  uint64_t before_compression = writer->bytes_before_compression();
  uint64_t after_compression = writer->bytes_after_compression();
  for (auto& r : readers) {
    before_compression += r.writer->bytes_before_compression();
    after_compression += r.writer->bytes_after_compression();
  }
  if (!finished) {
    bool kept = writer->salvage();
    say(fmt::format("tperf record: {}", write_error));
    if (!pipe) {
      say(kept ? fmt::format("tperf record: what was written before the failure was kept: {} is a complete, readable "
                             "file ({} MB)",
                             header_path, mb(path_size(header_path)))
               : fmt::format("tperf record: {} could not be completed", header_path));
    }
    res.error = write_error;
  }

  if (finished && o.collect_build_ids && !pipe) {
    try {
      auto entries = collect_build_ids(threaded ? dir : header_path);
      update_features(header_path, {{kFeatBuildId, feature_build_ids(entries)}});
    } catch (const std::exception& e) {
      say(fmt::format("tperf record: warning: no build ids: {}", e.what()));
    }
  }

  if (pipe) {
    res.bytes_written = writer->position();
  } else {
    res.bytes_written = path_size(header_path);
    for (size_t g = 0; g < readers.size(); ++g) res.bytes_written += path_size(fmt::format("{}/data.{}", dir, g));
  }

  if (!workload_error.empty()) say("tperf record: workload failed: " + workload_error);
  if (!o.quiet) {
    say(fmt::format("[ tperf record: Woken up {} times to write data ]", res.wakeups));
    if (res.lost_records || res.lost_samples) {
      say(fmt::format("[ tperf record: Lost {} records in {} LOST events and {} samples (LOST_SAMPLES); "
                      "try a larger -m or a lower -F/-c ]",
                      res.lost_records, res.lost_events, res.lost_samples));
    }
    std::string compressed;
    if (o.compression_level > 0 && after_compression > 0) {
      compressed = fmt::format(", compressed (original {} MB, ratio is {:.3f})", mb(before_compression),
                               static_cast<double>(before_compression) / static_cast<double>(after_compression));
    }
    say(fmt::format("[ tperf record: Captured and wrote {} MB {}{} ({} samples) ]", mb(res.bytes_written), o.output,
                    compressed, res.samples));
  }

  if (!res.error.empty()) {
    res.exit_code = 1;
  } else if (!workload_error.empty()) {
    res.exit_code = 127;
  } else if (!o.command.empty()) {
    res.exit_code = workload.exit_code();
  } else if (stop_signal) {
    res.exit_code = 128 + stop_signal;
  }
  return res;
}

}  // namespace tperf::record
