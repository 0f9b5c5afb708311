#include "perfdata/reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>

#include "perfdata/tracing_data.h"

namespace tperf::perfdata {

namespace {

constexpr size_t kChunk = 1 << 20;                   // bytes read from the file at a time (was 2 MiB)
constexpr uint64_t kMaxPayloadInMemory = 64 << 20;   // larger AUX/tracing payloads are skipped, not held
constexpr uint64_t kMaxFeatureSize = 256 << 20;
constexpr size_t kMaxDecompressedChunk = 256 << 20;  // guards against a zstd bomb in one record
constexpr uint64_t kNoEnd = std::numeric_limits<uint64_t>::max();

std::string errno_text(int err) { return std::strerror(err); }

// The file windows mapped into memory, for the SIGBUS handler: a mapped file that shrinks while
// it is read (another process truncates it) faults on the pages past its new end, as does a page
// its storage cannot deliver. The handler names the file and ends the process with status 2, as
// any other unreadable input does, instead of dying of the signal. Slots are claimed by the windows that map; one without a slot reads.
constexpr size_t kMapSlots = 64;
struct MapSlot {
  std::atomic<uintptr_t> start{0}, end{0};
  std::atomic<const char*> name{nullptr};
  std::atomic<bool> used{false};
};
MapSlot g_map_slots[kMapSlots];
std::once_flag g_sigbus_once;
struct sigaction g_old_sigbus {};

void write_all(const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
  for (MapSlot& slot : g_map_slots) {
    if (!slot.used.load(std::memory_order_acquire)) continue;
    if (addr >= slot.start.load(std::memory_order_relaxed) && addr < slot.end.load(std::memory_order_relaxed)) {
      const char* name = slot.name.load(std::memory_order_relaxed);
      write_all("tperf: ", 7);
      if (name) {
        write_all(name, std::strlen(name));
        write_all(": ", 2);
      }
      static constexpr char kText[] =
          "the file could not be read any more (it was cut short while tperf read it, or its storage failed)\n";
      write_all(kText, sizeof kText - 1);
      ::_exit(2);
    }
  }
  // Not ours: what was there before.
  if (g_old_sigbus.sa_flags & SA_SIGINFO) {
    if (g_old_sigbus.sa_sigaction) return g_old_sigbus.sa_sigaction(sig, info, context);
  } else if (g_old_sigbus.sa_handler != SIG_DFL && g_old_sigbus.sa_handler != SIG_IGN) {
    return g_old_sigbus.sa_handler(sig);
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

void install_sigbus_handler() {
  std::call_once(g_sigbus_once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_old_sigbus);
  });
}

MapSlot* claim_map_slot(const std::string& name) {
  for (MapSlot& slot : g_map_slots) {
    bool expected = false;
    if (slot.used.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      slot.start.store(0, std::memory_order_relaxed);
      slot.end.store(0, std::memory_order_relaxed);
      slot.name.store(name.c_str(), std::memory_order_relaxed);
      return &slot;
    }
  }
  return nullptr;
}

// A sliding window over a file or a pipe. For a seekable file any offset can be asked for; for a
// pipe offsets must not go backwards past the start of the window. By default every file is read
// into a buffer that is reused (pread for a seekable one); with Reader::Options::map a regular
// file is mapped whole (or window by window where that fails) and its records are stable.
// Reading was chosen as the default by measurement: on the VMs this project runs on, each page
// of a fresh mapping costs a trap to the hypervisor, and the reading thread spent more time on
// the first touch of each record than the copies of records that stages keep now cost
// (bench/README.md, "Reading the file"). A file whose records are mostly stack copies is mapped
// all the same (Reader::Options::map_stack_copies): most of each copy is never read.
class Window {
 public:
  // `start`: for a pipe, the stream offset of the next byte read() returns.
  // `map`: a regular file is mapped (Reader::Options::map); else it is read into the buffer.
  Window(int fd, bool seekable, std::string name, uint64_t start, bool map)
      : fd_(fd), seekable_(seekable), name_(std::move(name)), buf_off_(seekable ? 0 : start) {
    struct stat st {};
    if (seekable_ && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) file_size_ = static_cast<uint64_t>(st.st_size);
    if (file_size_ > 0 && map) {
      slot_ = claim_map_slot(name_);
      if (slot_) install_sigbus_handler();
    }
  }
  ~Window() {
    unmap();
    release_slot();
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Makes [off, off+n) available. Returns nullptr when the file ends first; *avail then says how
  // many bytes there were.
  const uint8_t* get(uint64_t off, size_t n, size_t* avail) {
    if (holds(off, n)) {
      if (off >= next_tend_) tend(off);
      *avail = n;
      return data_ + (off - buf_off_);
    }
    if (whole_) {
      // The whole file is mapped: what is not in it is past its end.
      *avail = off < file_size_ ? static_cast<size_t>(file_size_ - off) : 0;
      return nullptr;
    }
    if (seekable_) {
      if (!slot_ || !(map_whole() || fill_mapped(off, n))) fill_seekable(off, n);
    } else {
      fill_stream(off, n);
      data_ = buf_.data();
    }
    size_t have = (off >= buf_off_ && off - buf_off_ <= buf_len_) ? buf_len_ - static_cast<size_t>(off - buf_off_) : 0;
    if (have < n) {
      *avail = have;
      return nullptr;
    }
    *avail = n;
    return data_ + (off - buf_off_);
  }

  // get()'s answer when [off, off + n) is in the window already and nothing is to be done
  // about the pages behind it; else nullptr (get() then moves the window, or says why not).
  const uint8_t* peek(uint64_t off, size_t n) const {
    return holds(off, n) && off < next_tend_ ? data_ + (off - buf_off_) : nullptr;
  }

  bool seekable() const { return seekable_; }
  // What get() returns stays valid as long as the window lives: the whole file is mapped.
  bool stable() const { return whole_; }

  // Reader::set_holding: each fill reads into a buffer of its own, numbered, kept until it is
  // given back.
  bool set_holding(bool on) {
    if (!on) {
      holding_ = false;
      if (!held_.empty()) {
        // The window being read goes on in the plain buffer, from where it is.
        const size_t keep = buf_len_;
        if (buf_.size() < keep) buf_.resize(keep);
        if (keep) std::memcpy(buf_.data(), data_, keep);
        data_ = buf_.data();
      }
      held_.clear();
      held_pool_.clear();
      held_seq_ = 0;
      return false;
    }
    if (!seekable_ || slot_ || whole_) return false;
    holding_ = true;
    return true;
  }
  uint64_t held_seq() const { return held_seq_; }
  void release_held(uint64_t seq) {
    if (held_.empty() || seq < held_.front().seq || seq >= held_.back().seq) return;  // not one before the current
    held_[static_cast<size_t>(seq - held_.front().seq)].released = true;
    while (held_.size() > 1 && held_.front().released) {
      Held& h = held_.front();
      if (h.cap == kChunk && held_pool_.size() < kHeldPool) held_pool_.push_back(std::move(h.data));
      held_.pop_front();
    }
  }

 private:
  // A regular file is mapped whole, once: records can then be handed on (queued in time order,
  // passed to another thread) as spans into the mapping, never copied. The pages behind the
  // reading position are given back as it moves on, so the resident part stays a few MiB (a
  // page given back that is read again is read again from the page cache, with the same bytes:
  // giving back is never wrong, only slower). false: not mapped (too large for the address
  // space, say); windows are mapped one by one then.
  bool map_whole() {
    if (tried_whole_) return false;
    tried_whole_ = true;
    void* m = ::mmap(nullptr, static_cast<size_t>(file_size_), PROT_READ, MAP_PRIVATE, fd_, 0);
    if (m == MAP_FAILED) return false;
    unmap();
    ::madvise(m, static_cast<size_t>(file_size_), MADV_SEQUENTIAL);
    map_ = m;
    map_len_ = static_cast<size_t>(file_size_);
    slot_->start.store(reinterpret_cast<uintptr_t>(m), std::memory_order_relaxed);
    slot_->end.store(reinterpret_cast<uintptr_t>(m) + map_len_, std::memory_order_relaxed);
    data_ = static_cast<const uint8_t*>(m);
    buf_off_ = 0;
    buf_len_ = map_len_;
    whole_ = true;
    next_tend_ = 0;
    return true;
  }

  // Whether [off, off + n) is in the window as it is.
  bool holds(uint64_t off, size_t n) const {
    return off >= buf_off_ && off - buf_off_ <= buf_len_ && n <= buf_len_ - (off - buf_off_);
  }

  // Whole mapping: gives back the pages more than kKeepBehind behind `off`. Called every
  // kTendStep bytes. (Faulting the pages ahead in with MADV_POPULATE_READ was tried: no faster.)
  void tend(uint64_t off) {
    static const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (off > kKeepBehind) {
      const uint64_t behind = (off - kKeepBehind) / kPage * kPage;
      if (behind > dropped_) {
        ::madvise(static_cast<uint8_t*>(map_) + dropped_, static_cast<size_t>(behind - dropped_), MADV_DONTNEED);
        dropped_ = behind;
      }
    }
    next_tend_ = off + kTendStep;
  }

  static constexpr uint64_t kTendStep = 1 << 20;
  // What the stages after the reader may still hold: the batches on their way to the applying
  // thread, which read records in place (1.3 MiB at most: analysis/sample_path.cc), and the
  // ordering queue's records of the last rounds (0.8 MB at its peak on the sys, fp and dwarf
  // recipes). A record further behind is read again from the page cache, and its pages then stay
  // (slower, never wrong). 8 MiB held 5 MB more than needed on every recipe (a tenth of dwarf's
  // peak); 2 MiB is less than the batches, and fp100 grew to 96 MB.
  static constexpr uint64_t kKeepBehind = 4 << 20;

  // Maps [off, off + max(kChunk, n)) as far as the file goes. false: the mapping failed (the
  // window reads from then on).
  bool fill_mapped(uint64_t off, size_t n) {
    unmap();
    buf_off_ = off;
    buf_len_ = 0;
    data_ = nullptr;
    if (off >= file_size_) return true;  // past the end, as a read would find
    static const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t aligned = off / kPage * kPage;
    const uint64_t end = std::min<uint64_t>(file_size_, off + std::max(kChunk, n));
    const auto len = static_cast<size_t>(end - aligned);
    void* m = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(aligned));
    if (m == MAP_FAILED) {
      release_slot();
      return false;
    }
    ::madvise(m, len, MADV_SEQUENTIAL);
    map_ = m;
    map_len_ = len;
    slot_->start.store(reinterpret_cast<uintptr_t>(m), std::memory_order_relaxed);
    slot_->end.store(reinterpret_cast<uintptr_t>(m) + len, std::memory_order_relaxed);
    data_ = static_cast<const uint8_t*>(m) + (off - aligned);
    buf_len_ = static_cast<size_t>(end - off);
    return true;
  }

  // This window maps no more: its slot goes back for another window.
  void release_slot() {
    if (!slot_) return;
    slot_->name.store(nullptr, std::memory_order_relaxed);
    slot_->used.store(false, std::memory_order_release);
    slot_ = nullptr;
  }

  void unmap() {
    if (!map_) return;
    if (slot_) {
      slot_->start.store(0, std::memory_order_relaxed);
      slot_->end.store(0, std::memory_order_relaxed);
    }
    ::munmap(map_, map_len_);
    map_ = nullptr;
    map_len_ = 0;
  }

  void fill_seekable(uint64_t off, size_t n) {
    // No bigger than what is left of a regular file: a small file (a `record -- true`) then
    // takes a small buffer, not a 2 MiB one.
    size_t chunk = kChunk;
    if (file_size_ && off < file_size_) chunk = static_cast<size_t>(std::min<uint64_t>(kChunk, file_size_ - off));
    size_t cap = std::max(chunk, n);
    uint8_t* into;
    if (holding_) {
      // A buffer of its own: the records of the windows before stay where they are.
      Held h;
      h.seq = ++held_seq_;
      h.cap = std::max(kChunk, cap);
      if (h.cap == kChunk && !held_pool_.empty()) {
        h.data = std::move(held_pool_.back());
        held_pool_.pop_back();
      } else {
        h.data = std::make_unique_for_overwrite<uint8_t[]>(h.cap);
      }
      into = h.data.get();
      held_.push_back(std::move(h));
    } else {
      if (buf_.size() < cap) buf_.resize(cap);
      into = buf_.data();
    }
    data_ = into;
    buf_off_ = off;
    buf_len_ = 0;
    while (buf_len_ < cap) {
      ssize_t got = ::pread(fd_, into + buf_len_, cap - buf_len_, static_cast<off_t>(off + buf_len_));
      if (got < 0) {
        if (errno == EINTR) continue;
        throw IoError(fmt::format("{}: read at offset {:#x}: {}", name_, off + buf_len_, errno_text(errno)));
      }
      if (got == 0) break;
      buf_len_ += static_cast<size_t>(got);
      if (buf_len_ >= n && buf_len_ >= cap / 2) break;
    }
  }

  void fill_stream(uint64_t off, size_t n) {
    if (off < buf_off_) {
      throw IoError(fmt::format("{}: cannot go back to offset {:#x} in a pipe", name_, off));
    }
    // Drop what lies before `off`.
    uint64_t drop = std::min<uint64_t>(off - buf_off_, buf_len_);
    if (drop > 0) {
      std::memmove(buf_.data(), buf_.data() + drop, buf_len_ - static_cast<size_t>(drop));
      buf_len_ -= static_cast<size_t>(drop);
      buf_off_ += drop;
    }
    // Skip bytes not yet read that lie before `off`.
    char sink[65536];
    while (buf_off_ < off) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(off - buf_off_, sizeof sink));
      ssize_t got = ::read(fd_, sink, want);
      if (got < 0) {
        if (errno == EINTR) continue;
        throw IoError(fmt::format("{}: read: {}", name_, errno_text(errno)));
      }
      if (got == 0) return;
      buf_off_ += static_cast<uint64_t>(got);
    }
    size_t cap = std::max(kChunk, n);
    if (buf_.size() < cap) buf_.resize(cap);
    while (buf_len_ < n) {
      ssize_t got = ::read(fd_, buf_.data() + buf_len_, cap - buf_len_);
      if (got < 0) {
        if (errno == EINTR) continue;
        throw IoError(fmt::format("{}: read: {}", name_, errno_text(errno)));
      }
      if (got == 0) break;
      buf_len_ += static_cast<size_t>(got);
    }
  }

  int fd_;
  bool seekable_;
  std::string name_;
  std::vector<uint8_t> buf_;
  // Holding: the windows not given back yet, oldest first (their numbers follow on; the last is
  // being read), and emptied buffers for the next ones.
  struct Held {
    uint64_t seq = 0;
    std::unique_ptr<uint8_t[]> data;
    size_t cap = 0;
    bool released = false;
  };
  static constexpr size_t kHeldPool = 8;
  bool holding_ = false;
  uint64_t held_seq_ = 0;
  std::deque<Held> held_;
  std::vector<std::unique_ptr<uint8_t[]>> held_pool_;
  const uint8_t* data_ = nullptr;  // the window's first byte: in buf_, or in the mapping
  void* map_ = nullptr;
  size_t map_len_ = 0;
  MapSlot* slot_ = nullptr;  // a regular file's, while it may be mapped
  bool tried_whole_ = false;
  bool whole_ = false;      // map_ is the whole file
  uint64_t dropped_ = 0;    // whole mapping: pages before this were given back
  uint64_t next_tend_ = kNoEnd;  // get() calls tend() from this offset on
  uint64_t file_size_ = 0;  // of a regular file when it was opened; 0: unknown
  uint64_t buf_off_ = 0;
  size_t buf_len_ = 0;
};

struct ZstdDctx {
  ZSTD_DCtx* ctx = nullptr;
  ZstdDctx() = default;
  ZstdDctx(const ZstdDctx&) = delete;
  ZstdDctx& operator=(const ZstdDctx&) = delete;
  ~ZstdDctx() {
    if (ctx) ZSTD_freeDCtx(ctx);
  }
};

uint64_t load_u64(const uint8_t* p, bool swap) { return load<uint64_t>(p, swap); }

}  // namespace

// One sequence of records: the data section of the main file, or one data.N file of a directory.
struct Stream {
  Stream(int fd_in, bool own_fd, bool seekable, std::string name_in, uint64_t start, uint64_t end_in, uint32_t index,
         bool map)
      : fd(fd_in), owns_fd(own_fd), name(std::move(name_in)), win(fd_in, seekable, name, start, map), pos(start), end(end_in),
        file_index(index) {}
  ~Stream() {
    if (owns_fd && fd >= 0) ::close(fd);
  }

  int fd;
  bool owns_fd;
  std::string name;
  Window win;
  uint64_t pos;
  uint64_t end;  // kNoEnd: up to EOF
  uint32_t file_index;
  bool done = false;

  // Records unpacked from COMPRESSED(2) records: one zstd stream per data file.
  ZstdDctx zstd;
  std::vector<uint8_t> dbuf;
  size_t dpos = 0;
  size_t dlen = 0;
  uint64_t dstream_off = 0;     // stream offset of dbuf[dpos]
  uint64_t compressed_at = 0;   // file offset of the compressed record the data came from

  // One record read ahead, for merging several streams by time.
  bool has_pending = false;
  Record pending;
  uint64_t pending_time = 0;
};

// Where the stream functions report what they met.
struct Diagnostics {
  std::vector<std::string>& warnings;
  std::vector<FormatError>& errors;
};

struct Reader::Impl {
  std::vector<std::unique_ptr<Stream>> streams;
  Options options;
  int main_fd = -1;
  bool owns_main_fd = false;
  bool seekable = false;
  uint64_t file_size = 0;
  bool merging = false;       // directory: streams merged by time
  Stream* last = nullptr;     // stream whose pending record was returned last (merge mode)
  uint64_t last_time = 0;

  ~Impl() {
    streams.clear();
    if (owns_main_fd && main_fd >= 0) ::close(main_fd);
  }
};

Reader::~Reader() = default;

bool Reader::set_holding(bool on) {
  Impl& im = *impl_;
  if (im.streams.size() != 1) return false;
  return im.streams.front()->win.set_holding(on);
}

uint64_t Reader::window_seq() const {
  const Impl& im = *impl_;
  return im.streams.size() == 1 ? im.streams.front()->win.held_seq() : 0;
}

void Reader::release_window(uint64_t seq) {
  Impl& im = *impl_;
  if (im.streams.size() == 1) im.streams.front()->win.release_held(seq);
}

uint64_t ReaderStats::count(uint32_t type) const {
  if (type < by_type.size()) return by_type[type];
  auto it = other_types.find(type);
  return it == other_types.end() ? 0 : it->second;
}

const char* record_type_name(uint32_t type) {
  switch (type) {
    case kRecordMmap: return "MMAP";
    case kRecordLost: return "LOST";
    case kRecordComm: return "COMM";
    case kRecordExit: return "EXIT";
    case kRecordThrottle: return "THROTTLE";
    case kRecordUnthrottle: return "UNTHROTTLE";
    case kRecordFork: return "FORK";
    case kRecordRead: return "READ";
    case kRecordSample: return "SAMPLE";
    case kRecordMmap2: return "MMAP2";
    case kRecordAux: return "AUX";
    case kRecordItraceStart: return "ITRACE_START";
    case kRecordLostSamples: return "LOST_SAMPLES";
    case kRecordSwitch: return "SWITCH";
    case kRecordSwitchCpuWide: return "SWITCH_CPU_WIDE";
    case kRecordNamespaces: return "NAMESPACES";
    case kRecordKsymbol: return "KSYMBOL";
    case kRecordBpfEvent: return "BPF_EVENT";
    case kRecordCgroup: return "CGROUP";
    case kRecordTextPoke: return "TEXT_POKE";
    case kRecordAuxOutputHwId: return "AUX_OUTPUT_HW_ID";
    case kRecordCallchainDeferred: return "CALLCHAIN_DEFERRED";
    case kRecordHeaderAttr: return "ATTR";
    case kRecordHeaderEventType: return "EVENT_TYPE";
    case kRecordHeaderTracingData: return "TRACING_DATA";
    case kRecordHeaderBuildId: return "BUILD_ID";
    case kRecordFinishedRound: return "FINISHED_ROUND";
    case kRecordIdIndex: return "ID_INDEX";
    case kRecordAuxtraceInfo: return "AUXTRACE_INFO";
    case kRecordAuxtrace: return "AUXTRACE";
    case kRecordAuxtraceError: return "AUXTRACE_ERROR";
    case kRecordThreadMap: return "THREAD_MAP";
    case kRecordCpuMap: return "CPU_MAP";
    case kRecordStatConfig: return "STAT_CONFIG";
    case kRecordStat: return "STAT";
    case kRecordStatRound: return "STAT_ROUND";
    case kRecordEventUpdate: return "EVENT_UPDATE";
    case kRecordTimeConv: return "TIME_CONV";
    case kRecordHeaderFeature: return "FEATURE";
    case kRecordCompressed: return "COMPRESSED";
    case kRecordFinishedInit: return "FINISHED_INIT";
    case kRecordCompressed2: return "COMPRESSED2";
    case kRecordBpfMetadata: return "BPF_METADATA";
    case kRecordSchedstatCpu: return "SCHEDSTAT_CPU";
    case kRecordSchedstatDomain: return "SCHEDSTAT_DOMAIN";
    case kRecordSimpleperfKernelSymbol: return "SIMPLEPERF_KERNEL_SYMBOL";
    case kRecordSimpleperfDso: return "SIMPLEPERF_DSO";
    case kRecordSimpleperfSymbol: return "SIMPLEPERF_SYMBOL";
    case kRecordSimpleperfSplit: return "SIMPLEPERF_SPLIT";
    case kRecordSimpleperfSplitEnd: return "SIMPLEPERF_SPLIT_END";
    case kRecordSimpleperfEventId: return "SIMPLEPERF_EVENT_ID";
    case kRecordSimpleperfCallchain: return "SIMPLEPERF_CALLCHAIN";
    case kRecordSimpleperfUnwindingResult: return "SIMPLEPERF_UNWINDING_RESULT";
    case kRecordSimpleperfTracingData: return "SIMPLEPERF_TRACING_DATA";
    case kRecordSimpleperfDebug: return "SIMPLEPERF_DEBUG";
    default: return "UNKNOWN";
  }
}

namespace {

bool is_simpleperf_type(uint32_t type) { return type >= kRecordSimpleperfFirst && type < kRecordSimpleperfFirst + 256; }

// The smallest size (header included) a record of this type can have; shorter ones are damage.
uint16_t min_record_size(uint32_t type) {
  switch (type) {
    case kRecordMmap: return 8 + 32;
    case kRecordLost: return 8 + 16;
    case kRecordComm: return 8 + 8;
    case kRecordExit:
    case kRecordFork: return 8 + 24;
    case kRecordThrottle:
    case kRecordUnthrottle: return 8 + 24;
    case kRecordRead: return 8 + 16;
    case kRecordMmap2: return 8 + 64;
    case kRecordAux: return 8 + 24;
    case kRecordItraceStart: return 8 + 8;
    case kRecordLostSamples: return 8 + 8;
    case kRecordSwitchCpuWide: return 8 + 8;
    case kRecordNamespaces: return 8 + 16;
    case kRecordKsymbol: return 8 + 16;
    case kRecordBpfEvent: return 8 + 16;
    case kRecordCgroup: return 8 + 8;
    case kRecordTextPoke: return 8 + 12;
    case kRecordAuxOutputHwId: return 8 + 8;
    case kRecordCallchainDeferred: return 8 + 16;
    case kRecordHeaderAttr: return 8 + kAttrSizeVer0;
    case kRecordHeaderTracingData: return 8 + 4;
    case kRecordIdIndex: return 8 + 8;
    case kRecordAuxtrace: return 8 + 40;
    case kRecordThreadMap: return 8 + 8;
    case kRecordCpuMap: return 8 + 2;
    case kRecordEventUpdate: return 8 + 16;
    case kRecordTimeConv: return 8 + 24;
    case kRecordHeaderFeature: return 8 + 8;
    case kRecordCompressed2: return 8 + 8;
    default: return 8;
  }
}

bool is_known_type(uint32_t type) {
  if (type >= 1 && type < kRecordKernelMax) return true;
  if (type >= kRecordHeaderAttr && type < kRecordToolMax) return true;
  return type > kRecordSimpleperfFirst && type <= kRecordSimpleperfLast;
}

void read_exact_at(int fd, void* dst, size_t n, uint64_t off, const std::string& name, const char* what) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, static_cast<uint8_t*>(dst) + done, n - done, static_cast<off_t>(off + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("{}: read {} at offset {:#x}: {}", name, what, off + done, errno_text(errno)));
    }
    if (got == 0) {
      throw FormatError(off + done, fmt::format("file ends inside the {} ({} of {} bytes present)", what, done, n));
    }
    done += static_cast<size_t>(got);
  }
}

}  // namespace

std::unique_ptr<Reader> Reader::open(const std::string& path, Options options) {
  if (path == "-") return from_fd(STDIN_FILENO, "<stdin>", options);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw IoError(fmt::format("{}: {}", path, errno_text(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    std::string header_file = path + "/data";
    int fd = ::open(header_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw IoError(fmt::format("{}: not a perf.data directory ({}: {})", path, header_file, errno_text(errno)));
    }
    std::unique_ptr<Reader> r;
    try {
      r = from_fd(fd, header_file, options);
    } catch (...) {
      ::close(fd);
      throw;
    }
    r->impl_->owns_main_fd = true;
    r->directory_ = true;
    r->path_ = path;
    // data.N files, in N order.
    std::vector<std::pair<unsigned long, std::string>> parts;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.rfind("data.", 0) != 0 || n.size() == 5) continue;
        char* endp = nullptr;
        unsigned long idx = std::strtoul(n.c_str() + 5, &endp, 10);
        if (*endp != '\0') continue;
        parts.emplace_back(idx, path + "/" + n);
      }
      ::closedir(d);
    }
    std::sort(parts.begin(), parts.end());
    for (auto& [idx, file] : parts) {
      int pfd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (pfd < 0) throw IoError(fmt::format("{}: {}", file, errno_text(errno)));
      r->impl_->streams.push_back(
          std::make_unique<Stream>(pfd, true, true, file, 0, kNoEnd, static_cast<uint32_t>(idx + 1),
                                   r->impl_->options.map));
    }
    r->impl_->merging = r->impl_->streams.size() > 1;
    return r;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{}: {}", path, errno_text(errno)));
  std::unique_ptr<Reader> r;
  try {
    r = from_fd(fd, path, options);
  } catch (...) {
    ::close(fd);
    throw;
  }
  r->impl_->owns_main_fd = true;
  return r;
}

std::unique_ptr<Reader> Reader::from_fd(int fd, const std::string& name, Options options) {
  std::unique_ptr<Reader> r(new Reader());
  r->impl_ = std::make_unique<Impl>();
  Impl& im = *r->impl_;
  im.options = options;
  im.main_fd = fd;
  r->path_ = name;

  struct stat st;
  if (::fstat(fd, &st) != 0) throw IoError(fmt::format("{}: {}", name, errno_text(errno)));
  im.seekable = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
  im.file_size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  if (im.seekable) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

  // Both layouts start with the magic and a u64 header size.
  uint8_t head[16];
  if (im.seekable) {
    if (im.file_size < 16) {
      throw FormatError(0, fmt::format("file is {} bytes, too small for a perf.data header", im.file_size));
    }
    read_exact_at(fd, head, 16, 0, name, "file header");
  } else {
    size_t got = 0;
    while (got < 16) {
      ssize_t n = ::read(fd, head + got, 16 - got);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw IoError(fmt::format("{}: read: {}", name, errno_text(errno)));
      }
      if (n == 0) throw FormatError(got, "input ends inside the 16-byte pipe header");
      got += static_cast<size_t>(n);
    }
  }
  uint64_t magic;
  std::memcpy(&magic, head, 8);
  if (magic == kMagicSwapped) {
    r->swap_ = true;
  } else if (magic != kMagic) {
    if (std::memcmp(head, "PERFFILE", 8) == 0) {
      throw FormatError(0, "perf.data version 1 (magic PERFFILE) is not supported");
    }
    throw FormatError(0, "not a perf.data file (bad magic)");
  }
  r->header_.magic = kMagic;
  r->header_.size = load_u64(head + 8, r->swap_);

  if (r->header_.size == kPipeHeaderSize) {
    r->pipe_ = true;
    // A pipe-mode file read from disk is still a stream: records run to the end of the file.
    im.streams.push_back(std::make_unique<Stream>(fd, false, im.seekable, name, kPipeHeaderSize, kNoEnd, 0, im.options.map));
    return r;
  }
  if (!im.seekable) {
    throw FormatError(8, fmt::format("header size {} on a pipe: only pipe-mode data (perf record -o -) can be "
                                     "read from a pipe; pass a file-mode perf.data as a file",
                                     r->header_.size));
  }
  if (r->header_.size < kFileHeaderSize) {
    throw FormatError(8, fmt::format("header size {} is smaller than 104", r->header_.size));
  }
  uint8_t fh[kFileHeaderSize];
  read_exact_at(fd, fh, sizeof fh, 0, name, "file header");
  ByteReader h(std::span<const uint8_t>(fh, sizeof fh), r->swap_, 0);
  h.skip(16);
  FileHeader& hdr = r->header_;
  hdr.attr_size = h.u64();
  hdr.attrs = {h.u64(), h.u64()};
  hdr.data = {h.u64(), h.u64()};
  hdr.event_types = {h.u64(), h.u64()};
  for (int w = 0; w < 4; ++w) {
    uint64_t bits = h.u64();
    for (int b = 0; b < 64; ++b) {
      if (bits & (1ULL << b)) hdr.features.set(static_cast<size_t>(w * 64 + b));
    }
  }
  auto check_section = [&](const FileSection& s, const char* what, uint64_t at) {
    if (s.offset > im.file_size || s.size > im.file_size - s.offset) {
      throw FormatError(at, fmt::format("{} section [{:#x}, +{:#x}) lies outside the {}-byte file", what, s.offset,
                                        s.size, im.file_size));
    }
  };
  check_section(hdr.attrs, "attrs", 24);

  // Attrs: entries of attr_size bytes, each an attr followed by an ids section.
  if (hdr.attrs.size > 0) {
    if (hdr.attr_size < kAttrSizeVer0 + 16) {
      throw FormatError(16, fmt::format("attr_size {} is smaller than 64 + 16", hdr.attr_size));
    }
    if (hdr.attrs.size % hdr.attr_size != 0) {
      r->errors_.emplace_back(24, fmt::format("attrs section size {} is not a multiple of attr_size {}",
                                              hdr.attrs.size, hdr.attr_size));
    }
    uint64_t n = hdr.attrs.size / hdr.attr_size;
    std::vector<uint8_t> abuf(static_cast<size_t>(hdr.attrs.size));
    read_exact_at(fd, abuf.data(), abuf.size(), hdr.attrs.offset, name, "attrs section");
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t at = hdr.attrs.offset + i * hdr.attr_size;
      ByteReader e(std::span<const uint8_t>(abuf.data() + i * hdr.attr_size, static_cast<size_t>(hdr.attr_size)),
                   r->swap_, at);
      uint32_t asz = peek_attr_size(e);
      if (asz == 0) asz = kAttrSizeVer0;
      if (asz > hdr.attr_size - 16) {
        throw FormatError(at + 4, fmt::format("attr size {} does not fit the {}-byte attr entry", asz,
                                              hdr.attr_size));
      }
      EventAttr ea;
      ea.attr = decode_attr(e, asz);
      e.seek(static_cast<size_t>(hdr.attr_size - 16));
      FileSection ids{e.u64(), e.u64()};
      if (ids.size % 8 != 0 || ids.offset > im.file_size || ids.size > im.file_size - ids.offset) {
        throw FormatError(at + hdr.attr_size - 16,
                          fmt::format("ids section [{:#x}, +{:#x}) of attr {} is outside the file", ids.offset,
                                      ids.size, i));
      }
      std::vector<uint8_t> ibuf(static_cast<size_t>(ids.size));
      if (!ibuf.empty()) read_exact_at(fd, ibuf.data(), ibuf.size(), ids.offset, name, "event ids");
      for (size_t k = 0; k + 8 <= ibuf.size(); k += 8) ea.ids.push_back(load_u64(ibuf.data() + k, r->swap_));
      r->add_attr(std::move(ea));
    }
  }

  // Data: a missing or cut data section (perf killed before it rewrote the header) is read
  // to the end of the file with a warning, so nothing recorded is lost.
  uint64_t data_end;
  if (hdr.data.offset > im.file_size) {
    throw FormatError(40, fmt::format("data section starts at {:#x}, past the end of the {}-byte file",
                                      hdr.data.offset, im.file_size));
  }
  if (hdr.data.size == 0 && im.file_size > hdr.data.offset && hdr.features.none()) {
    r->warnings_.push_back("data size is 0 in the header (recording not finished?): reading to the end of the file");
    data_end = im.file_size;
  } else if (hdr.data.size > im.file_size - hdr.data.offset) {
    r->errors_.emplace_back(im.file_size, fmt::format("file truncated: the data section claims {:#x} bytes from "
                                                      "{:#x} but the file ends here",
                                                      hdr.data.size, hdr.data.offset));
    data_end = im.file_size;
  } else {
    data_end = hdr.data.offset + hdr.data.size;
  }

  // Feature table at the end of the data section: one section per set bit.
  size_t nfeat = hdr.features.count();
  if (nfeat > 0) {
    uint64_t table = hdr.data.offset + hdr.data.size;
    if (table > im.file_size || nfeat * 16 > im.file_size - table) {
      r->errors_.emplace_back(table, fmt::format("feature table ({} entries) lies outside the {}-byte file", nfeat,
                                                 im.file_size));
    } else {
      std::vector<uint8_t> tbuf(nfeat * 16);
      read_exact_at(fd, tbuf.data(), tbuf.size(), table, name, "feature table");
      size_t slot = 0;
      for (unsigned bit = 0; bit < kFeatBits; ++bit) {
        if (!hdr.features.test(bit)) continue;
        uint64_t off = load_u64(tbuf.data() + slot * 16, r->swap_);
        uint64_t size = load_u64(tbuf.data() + slot * 16 + 8, r->swap_);
        uint64_t slot_at = table + slot * 16;
        ++slot;
        if (off > im.file_size || size > im.file_size - off) {
          r->errors_.emplace_back(slot_at, fmt::format("feature {} section [{:#x}, +{:#x}) lies outside the file",
                                                       feature_name(bit), off, size));
          continue;
        }
        if (size > kMaxFeatureSize) {
          r->warnings_.push_back(fmt::format("feature {} at offset {:#x}: {} bytes, too large, skipped",
                                             feature_name(bit), off, size));
          continue;
        }
        std::vector<uint8_t> payload(static_cast<size_t>(size));
        if (size) read_exact_at(fd, payload.data(), payload.size(), off, name, "feature section");
        r->features_.parse(bit, payload, r->swap_, off);
      }
    }
  }
  r->finish_attrs();
  bool map = im.options.map;
  if (im.options.map_stack_copies) {
    for (const EventAttr& ea : r->attrs_) {
      if (ea.attr.has(kSampleStackUser) && ea.attr.sample_stack_user >= 4096) map = true;
    }
  }
  im.streams.push_back(std::make_unique<Stream>(fd, false, true, name, hdr.data.offset, data_end, 0, map));
  return r;
}

void Reader::add_attr(EventAttr ea) {
  uint32_t index = static_cast<uint32_t>(attrs_.size());
  for (uint64_t id : ea.ids) id_map_[id].attr_index = index;
  flat_ids_.clear();
  if (id_map_.size() <= kFlatIds) {
    for (const auto& [id, info] : id_map_) flat_ids_.emplace_back(id, info.attr_index);
  }
  if (ea.name.empty()) {
    ea.name = default_event_name(ea.attr);
    ea.named = false;
  }
  TimeLayout tl;
  const uint64_t t = ea.attr.sample_type;
  if (t & kSampleTime) {
    tl.sample_at = 8 * std::popcount(t & (kSampleIdentifier | kSampleIp | kSampleTid));
    if (ea.attr.sample_id_all()) {
      tl.trailer_size = sample_id_trailer_size(ea.attr);
      tl.trailer_back = static_cast<int32_t>(tl.trailer_size) - ((t & kSampleTid) ? 8 : 0);
    }
  }
  time_layouts_.push_back(tl);
  attrs_.push_back(std::move(ea));
  const uint64_t t0 = attrs_.front().attr.sample_type;
  all_same_sample_type_ = std::all_of(attrs_.begin(), attrs_.end(),
                                      [&](const EventAttr& a) { return a.attr.sample_type == t0; });
  // perf takes the id position of the first event for all of them.
  sample_id_pos_ = sample_id_position(t0);
  trailer_id_pos_ = trailer_id_position(t0);
}

std::span<const uint8_t> Reader::tracing_data() const {
  if (!pipe_tracing_data_.empty()) return pipe_tracing_data_;
  auto it = features_.raw.find(kFeatTracingData);
  if (it != features_.raw.end()) return it->second;
  return {};
}

void Reader::name_tracepoints(const std::map<uint64_t, std::string>& names) {
  // perf names a tracepoint event from the tracing data's formats when nothing else named it.
  for (auto& ea : attrs_) {
    if (ea.named || ea.attr.type != kTypeTracepoint) continue;
    auto it = names.find(ea.attr.config);
    if (it != names.end()) ea.name = it->second;
  }
}

void Reader::finish_attrs() {
  name_tracepoints(features_.tracepoint_names);
  // Names from EVENT_DESC, matched by ids (or by position when ids are missing).
  const auto& desc = features_.event_desc;
  for (size_t i = 0; i < attrs_.size(); ++i) {
    const EventDescEntry* match = nullptr;
    for (const auto& d : desc) {
      if (!d.ids.empty() && !attrs_[i].ids.empty() && d.ids.front() == attrs_[i].ids.front()) {
        match = &d;
        break;
      }
    }
    const bool by_position = !match && desc.size() == attrs_.size();
    if (by_position) match = &desc[i];
    if (match && !match->name.empty()) {
      attrs_[i].name = match->name;
      attrs_[i].named = true;
      attrs_[i].named_by_position = by_position;
    }
  }
}

int Reader::attr_index_of(const Record& rec) const {
  if (attrs_.empty()) return -1;
  if (attrs_.size() == 1) return 0;
  uint64_t id;
  auto body = rec.body();
  if (rec.type == kRecordSample) {
    if (sample_id_pos_ < 0) return 0;
    size_t at = static_cast<size_t>(sample_id_pos_) * 8;
    if (body.size() < at + 8) return -1;
    id = load_u64(body.data() + at, swap_);
  } else if (rec.type < kRecordHeaderAttr) {
    if (trailer_id_pos_ < 0 || !attrs_.front().attr.sample_id_all()) return 0;
    size_t back = static_cast<size_t>(trailer_id_pos_) * 8;
    if (body.size() < back) return -1;
    id = load_u64(body.data() + body.size() - back, swap_);
  } else {
    return -1;
  }
  if (id == 0) return 0;
  if (!flat_ids_.empty() || id_map_.empty()) {
    for (const auto& [known, index] : flat_ids_) {
      if (known == id) return static_cast<int>(index);
    }
    return -1;
  }
  auto it = id_map_.find(id);
  return it == id_map_.end() ? -1 : static_cast<int>(it->second.attr_index);
}

void Reader::decode_sample(const Record& rec, Sample& out, SampleParts parts) const {
  int idx = attr_index_of(rec);
  if (idx < 0) {
    throw FormatError(rec.offset, attrs_.empty() ? std::string("sample before any event attr")
                                                 : std::string("sample with an event id no attr has"));
  }
  perfdata::decode_sample(rec.body(), swap_, rec.offset + 8, attrs_[static_cast<size_t>(idx)].attr, out, parts);
}

bool Reader::decode_sample_id(const Record& rec, Sample& out) const {
  if (rec.type == kRecordSample || rec.type >= kRecordHeaderAttr) return false;
  int idx = attr_index_of(rec);
  if (idx < 0) return false;
  const PerfEventAttr& attr = attrs_[static_cast<size_t>(idx)].attr;
  if (!attr.sample_id_all()) return false;
  perfdata::decode_sample_id(rec.body(), swap_, rec.offset + 8, attr, out);
  return true;
}

bool Reader::record_time(const Record& rec, uint64_t* time) const {
  if (rec.type >= kRecordHeaderAttr) return false;
  int idx = attr_index_of(rec);
  if (idx < 0) return false;
  const TimeLayout& tl = time_layouts_[static_cast<size_t>(idx)];
  auto body = rec.body();
  size_t at;
  if (rec.type == kRecordSample) {
    if (tl.sample_at < 0) return false;
    at = static_cast<size_t>(tl.sample_at);
  } else {
    if (tl.trailer_back < 0 || body.size() < tl.trailer_size) return false;
    at = body.size() - static_cast<size_t>(tl.trailer_back);
  }
  if (body.size() < at + 8) return false;
  *time = load_u64(body.data() + at, swap_);
  return true;
}

bool Reader::applies_in_band(uint32_t type) {
  switch (type) {
    case kRecordHeaderAttr:
    case kRecordHeaderFeature:
    case kRecordEventUpdate:
    case kRecordHeaderTracingData:
    case kRecordIdIndex:
    case kRecordHeaderBuildId:
      return true;
    default:
      return false;
  }
}

void Reader::apply_header_record(const Record& rec) {
  ByteReader r(rec.body(), swap_, rec.offset + 8);
  switch (rec.type) {
    case kRecordHeaderAttr: {
      uint32_t asz = peek_attr_size(r);
      if (asz == 0) asz = kAttrSizeVer0;
      EventAttr ea;
      ea.attr = decode_attr(r, asz);
      while (r.remaining() >= 8) ea.ids.push_back(r.u64());
      add_attr(std::move(ea));
      break;
    }
    case kRecordHeaderFeature: {
      uint64_t bit = r.u64("feature id");
      if (bit < kFeatBits) {
        features_.present.set(static_cast<size_t>(bit));
        header_.features.set(static_cast<size_t>(bit));
        features_.parse(static_cast<unsigned>(bit), r.bytes(r.remaining()), swap_, r.offset());
        if (bit == kFeatEventDesc) finish_attrs();
      }
      break;
    }
    case kRecordEventUpdate: {
      uint64_t type = r.u64("event_update type");
      uint64_t id = r.u64("event_update id");
      if (type == 2) {  // NAME
        std::string name(r.cstring());
        auto it = id_map_.find(id);
        if (it != id_map_.end()) {
          attrs_[it->second.attr_index].name = name;
          attrs_[it->second.attr_index].named = true;
          attrs_[it->second.attr_index].named_by_position = false;
          attrs_[it->second.attr_index].named_by_update = true;
        }
      }
      break;
    }
    case kRecordHeaderTracingData: {
      // Pipe mode: the payload follows the record (absent when it was too large to keep).
      if (rec.payload.empty() || rec.payload.size() != rec.payload_size) break;
      pipe_tracing_data_.assign(rec.payload.begin(), rec.payload.end());
      tracing_data_offset_ = rec.offset + rec.bytes.size();
      try {
        name_tracepoints(tracepoint_names(rec.payload, rec.offset + rec.bytes.size()));
      } catch (const FormatError& e) {
        features_.warnings.push_back(fmt::format("TRACING_DATA record at offset {:#x}: {}", rec.offset, e.what()));
      }
      break;
    }
    case kRecordIdIndex: {
      uint64_t nr = r.u64("id_index nr");
      if (nr > r.remaining() / 32) r.fail("id_index entries", static_cast<size_t>(std::min<uint64_t>(nr, 1 << 20) * 32));
      for (uint64_t i = 0; i < nr; ++i) {
        uint64_t id = r.u64();
        r.u64();  // idx: the position in the event's per-cpu/thread fd array, not an attr index
        uint64_t cpu = r.u64(), tid = r.u64();
        // The attrs name their ids; ID_INDEX only says where each one was opened.
        auto it = id_map_.find(id);
        if (it == id_map_.end()) continue;
        it->second.cpu = static_cast<int32_t>(cpu);
        it->second.tid = static_cast<int32_t>(tid);
      }
      break;
    }
    case kRecordHeaderBuildId: {
      // Same layout as one BUILD_ID feature entry.
      std::vector<uint8_t> entry(rec.bytes.begin(), rec.bytes.end());
      features_.parse(kFeatBuildId, entry, swap_, rec.offset);
      break;
    }
    default:
      break;
  }
}

namespace {

// Makes `rec` the record at s.pos, whose header says `type`, `misc` and `size` and whose bytes
// are at `p` in the stream's window (its payload of `extra` bytes after them, kept or not), and
// moves the stream past it.
void take_from_window(Stream& s, Record& rec, uint32_t type, uint16_t misc, uint16_t size, const uint8_t* p,
                      uint64_t extra, bool keep_payload) {
  rec.offset = s.pos;
  rec.stream_offset = 0;
  rec.from_compressed = false;
  rec.stable = s.win.stable();
  rec.held = false;
  rec.window = s.win.held_seq();
  rec.file_index = s.file_index;
  rec.type = type;
  rec.misc = misc;
  rec.size = size;
  rec.bytes = std::span<const uint8_t>(p, size);
  rec.payload = keep_payload ? std::span<const uint8_t>(p + size, static_cast<size_t>(extra)) : std::span<const uint8_t>();
  rec.payload_size = extra;
  s.pos += size + extra;
}

// One more record of `type` out of next().
void count_record(ReaderStats& stats, uint32_t type) {
  ++stats.records;
  if (type < stats.by_type.size()) {
    ++stats.by_type[type];
  } else {
    ++stats.other_types[type];
  }
  if (!is_known_type(type)) ++stats.unknown_records;
}

// Reads the record at s.pos from the stream's window into rec (no decompressed data involved).
// Returns false at the end of the stream.
bool read_raw_record(Stream& s, bool swap, Record& rec, Diagnostics& diag) {
  if (s.pos >= s.end) return false;
  size_t avail = 0;
  const uint8_t* h = s.win.get(s.pos, 8, &avail);
  if (!h) {
    if (avail == 0 && s.end == kNoEnd) return false;  // clean end of a stream
    if (avail == 0) {
      diag.errors.emplace_back(s.pos, fmt::format("{}: data ends here, before the {:#x} the header promised",
                                                  s.name, s.end));
      return false;
    }
    throw FormatError(s.pos, fmt::format("file ends inside a record header ({} of 8 bytes)", avail));
  }
  if (s.end != kNoEnd && s.end - s.pos < 8) {
    throw FormatError(s.pos, fmt::format("{} bytes left in the data section, too few for a record header",
                                         s.end - s.pos));
  }
  uint32_t type = load<uint32_t>(h, swap);
  uint16_t misc = load<uint16_t>(h + 4, swap);
  uint16_t size = load<uint16_t>(h + 6, swap);
  if (size < 8) {
    throw FormatError(s.pos, fmt::format("record of type {} ({}) has size {}, less than its 8-byte header", type,
                                         record_type_name(type), size));
  }
  if (s.end != kNoEnd && size > s.end - s.pos) {
    // The last record of a recording cut short (perf killed while writing, a copy cut off): what
    // came before it is read and shown, and the error says where the data stops.
    diag.errors.emplace_back(s.pos, fmt::format("{}: record of type {} ({}) with size {} runs past the end of the "
                                                "data at {:#x} (the data ends inside it)",
                                                s.name, type, record_type_name(type), size, s.end));
    s.pos = s.end;
    return false;
  }
  // Records whose payload follows them, outside header.size.
  uint64_t extra = 0;
  if (type == kRecordHeaderTracingData || type == kRecordAuxtrace) {
    const uint8_t* b = s.win.get(s.pos, size, &avail);
    if (!b) throw FormatError(s.pos, fmt::format("file ends inside a {}-byte {} record", size, record_type_name(type)));
    if (type == kRecordHeaderTracingData) {
      if (size < 12) throw FormatError(s.pos, "TRACING_DATA record too short for its size field");
      extra = load<uint32_t>(b + 8, swap);
    } else {
      if (size < 16) throw FormatError(s.pos, "AUXTRACE record too short for its size field");
      extra = load<uint64_t>(b + 8, swap);
    }
    if (s.end != kNoEnd && extra > s.end - s.pos - size) {
      throw FormatError(s.pos, fmt::format("{} payload of {:#x} bytes runs past the end of the data at {:#x}",
                                           record_type_name(type), extra, s.end));
    }
  }
  bool keep_payload = extra > 0 && extra <= kMaxPayloadInMemory;
  size_t want = size + (keep_payload ? static_cast<size_t>(extra) : 0);
  const uint8_t* p = s.win.get(s.pos, want, &avail);
  if (!p && s.end == kNoEnd && !is_known_type(type) && !is_simpleperf_type(type)) {
    // Not a record at all: bytes after the last record of a stream. Text there is perf's own
    // messages captured together with `perf record -o -` (seen in real files): harmless.
    // Anything else is damage; either way everything before it is kept.
    const uint8_t* junk = s.win.get(s.pos, avail, &avail);
    bool text = junk && std::all_of(junk, junk + avail, [](uint8_t c) { return c == '\n' || c == '\t' || (c >= 32 && c < 127); });
    if (text) {
      diag.warnings.push_back(fmt::format("ignored {} bytes of text after the last record at offset {:#x}", avail,
                                          s.pos));
    } else {
      diag.errors.emplace_back(s.pos, fmt::format("{} bytes at the end of the data do not form a record (type {}, "
                                                  "size {})",
                                                  avail, type, size));
    }
    s.pos = s.end;
    return false;
  }
  if (!p) {
    throw FormatError(s.pos, fmt::format("file ends inside a {} record ({} of {} bytes present)",
                                         record_type_name(type), avail, want));
  }
  // (A payload not kept: the window moves past it lazily on the next get().)
  take_from_window(s, rec, type, misc, size, p, extra, keep_payload);
  return true;
}

// Unpacks the zstd bytes of a COMPRESSED(2) record into the stream's decompressed buffer.
void decompress_into(Stream& s, const Record& rec, bool swap, ReaderStats& stats) {
  std::span<const uint8_t> src = rec.body();
  if (rec.type == kRecordCompressed2) {
    if (src.size() < 8) throw FormatError(rec.offset + 8, "COMPRESSED2 record too short for its data_size");
    uint64_t data_size = load<uint64_t>(src.data(), swap);
    if (data_size > src.size() - 8) {
      throw FormatError(rec.offset + 8, fmt::format("COMPRESSED2 data_size {} exceeds the record's {} bytes",
                                                    data_size, src.size() - 8));
    }
    src = src.subspan(8, static_cast<size_t>(data_size));
  }
  stats.compressed_bytes += src.size();
  if (!s.zstd.ctx) {
    s.zstd.ctx = ZSTD_createDCtx();
    if (!s.zstd.ctx) throw std::bad_alloc();
  }
  // Move what is left of the previous chunk (a record cut in two) to the front.
  if (s.dpos > 0) {
    std::memmove(s.dbuf.data(), s.dbuf.data() + s.dpos, s.dlen - s.dpos);
    s.dlen -= s.dpos;
    s.dpos = 0;
  }
  // Records finished by this chunk (a record cut in two included) are reported at its offset,
  // as perf does.
  s.compressed_at = rec.offset;
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  while (true) {
    if (s.dbuf.size() - s.dlen < 65536) {
      size_t grow = std::max<size_t>(s.dbuf.size(), 1 << 20);
      if (s.dbuf.size() + grow > kMaxDecompressedChunk) {
        throw FormatError(rec.offset, fmt::format("compressed record unpacks to more than {} MiB",
                                                  kMaxDecompressedChunk >> 20));
      }
      s.dbuf.resize(s.dbuf.size() + grow);
    }
    ZSTD_outBuffer out{s.dbuf.data() + s.dlen, s.dbuf.size() - s.dlen, 0};
    size_t ret = ZSTD_decompressStream(s.zstd.ctx, &out, &in);
    if (ZSTD_isError(ret)) {
      throw FormatError(rec.offset, fmt::format("zstd: {} in {} record", ZSTD_getErrorName(ret),
                                                record_type_name(rec.type)));
    }
    s.dlen += out.pos;
    stats.decompressed_bytes += out.pos;
    // Done when all input is consumed and the output buffer was not filled up.
    if (in.pos == in.size && out.pos < out.size) break;
  }
}

// Takes the next complete record out of the decompressed buffer.
bool take_decompressed(Stream& s, bool swap, Record& rec) {
  size_t left = s.dlen - s.dpos;
  if (left < 8) return false;
  const uint8_t* h = s.dbuf.data() + s.dpos;
  uint16_t size = load<uint16_t>(h + 6, swap);
  uint32_t type = load<uint32_t>(h, swap);
  if (size < 8) {
    throw FormatError(s.compressed_at, fmt::format("record of type {} with size {} at byte {} of the "
                                                   "decompressed data",
                                                   type, size, s.dstream_off));
  }
  if (left < size) return false;
  rec.offset = s.compressed_at;
  rec.held = false;
  rec.window = 0;
  rec.stream_offset = s.dstream_off;
  rec.from_compressed = true;
  rec.stable = false;
  rec.file_index = s.file_index;
  rec.type = type;
  rec.misc = load<uint16_t>(h + 4, swap);
  rec.size = size;
  rec.bytes = std::span<const uint8_t>(h, size);
  rec.payload = {};
  rec.payload_size = 0;
  s.dpos += size;
  s.dstream_off += size;
  if (s.dpos == s.dlen) {
    s.dpos = s.dlen = 0;
  }
  return true;
}

}  // namespace

// Next record of one stream, decompressing on the way.
static bool stream_next(Stream& s, bool swap, bool decompress, Record& rec, ReaderStats& stats, Diagnostics& diag) {
  if (take_decompressed(s, swap, rec)) return true;
  if (!read_raw_record(s, swap, rec, diag)) {
    if (s.dlen - s.dpos > 0) {
      diag.errors.emplace_back(s.compressed_at, fmt::format("{}: the compressed data ends inside a record ({} bytes "
                                                            "left over)",
                                                            s.name, s.dlen - s.dpos));
      s.dpos = s.dlen = 0;
    }
    return false;
  }
  if (decompress && (rec.type == kRecordCompressed || rec.type == kRecordCompressed2)) {
    decompress_into(s, rec, swap, stats);
  }
  return true;
}

bool Reader::next(Record& rec) {
  Impl& im = *impl_;
  // Most records of a file are a kernel record whose bytes are in the window already: read
  // here without the general path's steps (a tenth of the reading thread's time on the fp
  // recipe). Anything else (a header record, compressed data, a payload, a record the window
  // has not reached, damage) takes the general path below.
  if (im.streams.size() == 1 && !im.merging) {
    Stream& s = *im.streams.front();
    if (!s.done && s.dpos == s.dlen && s.end != kNoEnd && s.pos < s.end && s.end - s.pos >= 8) {
      if (const uint8_t* h = s.win.peek(s.pos, 8)) {
        const auto type = load<uint32_t>(h, swap_);
        const auto size = load<uint16_t>(h + 6, swap_);
        if (type < kRecordHeaderAttr && size >= min_record_size(type) && size <= s.end - s.pos) {
          if (const uint8_t* p = s.win.peek(s.pos, size)) {
            take_from_window(s, rec, type, load<uint16_t>(h + 4, swap_), size, p, 0, false);
            count_record(stats_, type);
            return true;
          }
        }
      }
    }
  }
  Diagnostics diag{warnings_, errors_};
  auto count = [&](const Record& r) {
    count_record(stats_, r.type);
    if (r.type >= kRecordHeaderAttr && r.type <= kRecordHeaderFeature && !defer_in_band_) apply_header_record(r);
  };

  // A record shorter than its type's fixed fields is damage: reported and stepped over.
  auto too_short = [&](const Record& r) {
    uint16_t min = min_record_size(r.type);
    if (r.size >= min) return false;
    std::string where = r.from_compressed ? fmt::format(" (byte {:#x} of the decompressed data)", r.stream_offset)
                                          : std::string();
    errors_.emplace_back(r.offset, fmt::format("{} record of {} bytes is shorter than its {} bytes of fixed fields{}",
                                               record_type_name(r.type), r.size, min, where));
    return true;
  };

  if (!im.merging) {
    for (auto& sp : im.streams) {
      Stream& s = *sp;
      while (!s.done) {
        if (!stream_next(s, swap_, im.options.decompress, rec, stats_, diag)) {
          s.done = true;
          break;
        }
        if (too_short(rec)) continue;
        count(rec);
        return true;
      }
    }
    return false;
  }

  // Directory layout: the main file's data first (synthesized records), then the data.N streams
  // merged by timestamp. Records without a time keep their place in their own stream.
  Stream& main = *im.streams.front();
  while (!main.done) {
    if (!stream_next(main, swap_, im.options.decompress, rec, stats_, diag)) {
      main.done = true;
      break;
    }
    if (too_short(rec)) continue;
    count(rec);
    return true;
  }
  for (size_t i = 1; i < im.streams.size(); ++i) {
    Stream& s = *im.streams[i];
    if (s.done || s.has_pending) continue;
    bool got;
    while ((got = stream_next(s, swap_, im.options.decompress, s.pending, stats_, diag)) && too_short(s.pending)) {
    }
    if (got) {
      s.has_pending = true;
      uint64_t t;
      s.pending_time = record_time(s.pending, &t) ? t : s.pending_time;
    } else {
      s.done = true;
    }
  }
  Stream* best = nullptr;
  for (size_t i = 1; i < im.streams.size(); ++i) {
    Stream& s = *im.streams[i];
    if (!s.has_pending) continue;
    if (!best || s.pending_time < best->pending_time) best = &s;
  }
  if (!best) return false;
  rec = best->pending;
  best->has_pending = false;
  count(rec);
  return true;
}

}  // namespace tperf::perfdata
