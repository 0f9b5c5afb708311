// The sample path every reading command shares: the machine model as perf sets it up, the replay
// driver (records in time order into the machine, with the symbol hooks: KSYMBOL, preloading on
// MMAP), where a sample's address is (dso, symbol), the keys of a sample's entry, and, for diff,
// one plain histogram per event (self periods, no callchains).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analysis/hist.h"
#include "perfdata/abi.h"
#include "session/deferred_callchains.h"
#include "session/machine.h"

namespace tperf::perfdata {
class Reader;
struct Record;
struct Sample;
}  // namespace tperf::perfdata
namespace tperf::session {
class Machine;
class Thread;
struct Map;
}  // namespace tperf::session
namespace tperf::util {
class WorkQueue;
}  // namespace tperf::util
namespace tperf::session {
struct Dso;
}  // namespace tperf::session
namespace tperf::symbols {
class DwarfUnwinder;
class Symbolizer;
struct SymbolizerOptions;
struct ResolvedFrame;
}  // namespace tperf::symbols

namespace tperf::analysis {

// perf names the idle task of the host before reading anything.
void register_idle_task(session::Machine& machine);

// The machine model as perf report sets it up for `reader`'s file: exited threads kept (the
// Pid:Command column shows each thread's last comm; their maps go a second past their exit, as
// the threads themselves do in script), old maps kept under an exec's (perf 6.1),
// the idle task named, and the DSOs given the build ids the file recorded (which decide which
// files may give their symbols; a pipe file brings its own at the end, which perf ignores).
std::unique_ptr<session::Machine> make_report_machine(const perfdata::Reader& reader);
// A machine with `options`, set up for `reader`'s file as perf sets it up before reading: the idle
// task named, the DSOs given the build ids the file recorded (not a pipe's). make_report_machine()
// is this with the report's options; script's has its own.
std::unique_ptr<session::Machine> make_replay_machine(const perfdata::Reader& reader,
                                                      const session::Machine::Options& options);

// A record other than a sample into the machine, and a KSYMBOL's symbol into the symbolizer.
void process_non_sample(const perfdata::Reader& reader, const perfdata::Record& rec, uint64_t time,
                        session::Machine& machine, symbols::Symbolizer& symbolizer);

// The dso/sym keys of an address `at` resolved (symbols::Resolver). `frame`: a callchain entry,
// which perf keys by the raw address where a sample's own ip is keyed by its offset in the
// mapped file.
analysis::Location locate(const symbols::ResolvedFrame& at, uint8_t cpumode, uint64_t ip, bool frame);

// The keys of a sample's own entry: its thread's comm as last set (":TID" without one), thread,
// cpu and location. `at`: the sample's ip resolved. The comm is the one set last, as perf's
// entries take it, not the one valid at the sample's time: the two differ for a sample older
// than a COMM that came in before it (out of order).
analysis::HistEntry sample_entry(session::Machine& machine, const session::Thread& thread,
                                 const perfdata::Sample& sample, uint8_t cpumode, const symbols::ResolvedFrame& at);

// Loads the symbol tables of the DSOs on a worker while the caller reads the file: each DSO as
// soon as a map of it appears (its first process decides the mount namespace its file is looked
// up in); a lookup of a DSO still loading waits for it. Destroy before the Symbolizer.
class SymbolPreloader {
 public:
  SymbolPreloader(const session::Machine& machine, symbols::Symbolizer& symbolizer);
  ~SymbolPreloader();
  // Call before the first record goes into the machine: the DSOs the file's build-id table names
  // (those its samples hit) begin to load now, while the kernel's symbols are read, instead of
  // at their first map, which comes after the first kernel sample has waited for those.
  void begin();
  // Call after an MMAP/MMAP2 record went into the machine.
  void on_new_maps();
  // Waits for the loads under way (so that their warnings are all in the symbolizer).
  void wait();

 private:
  const session::Machine& machine_;
  symbols::Symbolizer& symbolizer_;
  std::unique_ptr<util::WorkQueue> loaders_;
  size_t seen_ = 0;                               // DSOs of the table looked at
  std::vector<const session::Dso*> unmapped_;     // known (BUILD_ID feature) but not mapped yet
  bool began_ = false;                            // begin() queued the listed DSOs (not the kernel's)
  // Whether the machine had DSOs of the file's BUILD_ID feature when the preloader was made
  // (make_replay_machine gives it the list). perf record lists the DSOs its samples hit there
  // (unless told --buildid-all), so a DSO the list does not name has no sample, and loading its
  // symbols ahead is work for nothing: on the sys recipe, perf's own libraries (libperl,
  // libstdc++, libopencsd and a dozen more) took the loading thread 25-30 ms while the
  // compiler's symbols, which the samples needed next, waited behind them. Such a DSO still loads
  // at first use if a callchain frame needs it. false (a file without the feature, a pipe): every
  // DSO mapped is loaded ahead.
  bool listed_ = false;
};

// What the replay driver hands to its caller. Every hook is optional.
struct ReplayHandlers {
  // A sample record, in time order, after every record before it went into the machine.
  std::function<void(const perfdata::Record& rec, uint64_t time)> on_sample;
  // When set, a sample that repeats the record delivered just before it (a sample too, of an
  // event whose samples hold no more than SampleRepeats::kFields, equal to it in every byte but
  // the time: the same event, thread, cpu, period and stack) comes here instead of to on_sample.
  // The handler may apply again what that sample did, if nothing it depends on changed since
  // (on a frame-pointer recording of a program with few threads, about half the samples repeat
  // the one before them); or treat it as any sample.
  std::function<void(const perfdata::Record& rec, uint64_t time)> on_repeat;
  // Any other record, before the machine applies it (lost counts; what must be said of a task
  // before its EXIT makes the machine forget it).
  std::function<void(const perfdata::Record& rec, uint64_t time)> on_other;
  // Any other record, after the machine applied it (what is printed of the new state).
  std::function<void(const perfdata::Record& rec, uint64_t time)> on_applied;
  // Checked before each record: true ends the replay (a fatal error of the caller).
  std::function<bool()> stop;
  // When set, only the side-band records it accepts reach the machine and the two hooks above
  // (a task listing builds its model from the task records alone).
  std::function<bool(const perfdata::Record& rec)> applies;
  // Called now and then with the bytes of the data read so far (a progress bar).
  std::function<void(uint64_t bytes)> on_progress;
  // Deferred user callchains (kernel 6.19+) joined to their samples after time ordering, as
  // perf does; off: the samples and CALLCHAIN_DEFERRED records come through raw.
  bool merge_deferred_callchains = true;
  // Off: the records come in file order, not time order (perf's ordered_events = false).
  bool ordered = true;
  // Threads (-j): 1 reads and applies on the calling thread; 2 or more reads, unpacks and orders
  // the records on a thread of its own while the calling thread applies them (files only; the
  // hooks still run on the calling thread, in the same order); 0, the default, does the latter
  // for files with stack copies (where it pays) on a machine with two cores or more.
  unsigned jobs = 0;
  // Unwinding ahead. `unwinder`: the one the handlers unwind stack copies with (set_ahead() is
  // called on it around each sample); `replica`: makes a machine as the handlers' one is before
  // the replay (same options, same build ids). A replay on two threads then has the reading
  // thread feed a replica the same records, unwind every sample that has a stack copy there with
  // an unwinder of its own, and hand the frames over with the sample: the applying thread, which
  // set the pace on such files, only looks their maps up. The frames are the same (the replica
  // is the same machine at each sample), so is the output. Not with `applies` (the replica would
  // see other records).
  symbols::DwarfUnwinder* unwinder = nullptr;
  std::function<std::unique_ptr<session::Machine>()> replica;
  // kWhenBehind: a batch's samples are unwound ahead only while half the batches or more wait
  // for the applying thread (each thread then does what the other has no time for); kAlways:
  // all of them (tests).
  enum class UnwindAhead { kWhenBehind, kAlways };
  UnwindAhead unwind_ahead = UnwindAhead::kWhenBehind;
};

// Whether a sample record repeats the sample record before it but for its time
// (ReplayHandlers::on_repeat).
class SampleRepeats {
 public:
  // The fields an event's samples may hold for them to be told repeats; the others (read values,
  // registers, stack copies, raw data, branches...) feed per-sample state or are rarely equal.
  static constexpr uint64_t kFields = perfdata::kSampleIdentifier | perfdata::kSampleIp | perfdata::kSampleTid |
                                      perfdata::kSampleTime | perfdata::kSampleAddr | perfdata::kSampleId |
                                      perfdata::kSampleStreamId | perfdata::kSampleCpu | perfdata::kSamplePeriod |
                                      perfdata::kSampleCallchain;
  explicit SampleRepeats(const perfdata::Reader& reader) : reader_(reader) {}
  // `rec` and `before`: a record and the whole record delivered just before it.
  bool repeats(const perfdata::Record& rec, std::span<const uint8_t> before);

 private:
  struct Layout {
    bool known = false, eligible = false;
    size_t time_at = 0;  // where the time is in the record (0: it has none)
  };
  const perfdata::Reader& reader_;
  std::vector<Layout> layouts_;  // by attr index
};

// Whether replay() reads `reader` on a thread of its own for `jobs` (ReplayHandlers::jobs).
bool replay_pipelined(const perfdata::Reader& reader, unsigned jobs);

struct ReplayResult {
  // Records that could not be decoded (by the machine, a handler, or the deferred-callchain
  // stage), each as "offset 0x..: what".
  std::vector<std::string> problems;
  // What the deferred-callchain stage joined, could not join, and gave up on.
  session::DeferredCallchains::Stats deferred;
  // The LOST_SAMPLES records' samples (dropped by the kernel or a BPF filter), and the LOST
  // records (ring-buffer overruns) with the events they stood for, summed over the file.
  uint64_t lost_samples = 0;
  uint64_t lost_records = 0, lost_events = 0;
};

// The replay driver: reads every record of `reader`, orders them by time (FINISHED_ROUND rounds),
// applies the side-band records to `machine` (a KSYMBOL's symbol goes to `symbolizer` first and
// renews the kernel space's version, since the kernel's symbols changed even where its maps did
// not; after an MMAP, `preloader` starts loading the new DSOs' symbols when given; at each
// FINISHED_ROUND the threads that exited before the previous round are retired, unless the
// machine keeps them) and hands the samples to `handlers`. With a `preloader`, the running
// kernel's symbols start loading at once too, for files whose events sample the kernel. A record
// that cannot be decoded (FormatError from the machine or a handler) does not stop the replay:
// its message is returned, one per record. Data the reader cannot follow any further (a record
// of size 0 in a pipe, a stream cut in the middle of a record) ends the replay, not the command:
// every record read before it is still delivered, in order, and the reader's message is the last
// of the problems returned.
ReplayResult replay(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                    SymbolPreloader* preloader, const ReplayHandlers& handlers);

// A file read into one histogram per event, with what its entries point into.
struct EventHists {
  EventHists();
  ~EventHists();
  EventHists(EventHists&&) noexcept;
  EventHists& operator=(EventHists&&) noexcept;

  std::unique_ptr<perfdata::Reader> reader;
  std::unique_ptr<session::Machine> machine;
  std::unique_ptr<symbols::Symbolizer> symbolizer;
  std::vector<analysis::Hist> hists;     // by the reader's attr index
  std::vector<std::string> problems;     // records that could not be decoded
};

// Reads `path` and adds each sample's period to its event's histogram by `keys`.
EventHists load_event_hists(const std::string& path, const std::vector<analysis::SortKey>& keys,
                            const symbols::SymbolizerOptions& options);

}  // namespace tperf::analysis
