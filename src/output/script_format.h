// `perf script` text, byte for byte as perf 6.1 prints it: the -F field sets per event type
// (perf's defaults, its -F syntax and its checks against the file's events), the pieces of each
// line (sample start, period, event, ip/sym/dso, callchain frames, side-band records), the
// --cpu filter syntax (--time's is in analysis/time_filter.h), and ScriptWriter, which turns
// time-ordered records into that text.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/sample_filter.h"
#include "analysis/time_filter.h"
#include "output/header_format.h"
#include "output/mem_format.h"
#include "analysis/sample_read.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/callchain.h"
#include "session/machine.h"
#include "util/handoff.h"

namespace tperf::symbols {
class Symbolizer;
class DwarfUnwinder;
class Resolver;
}

namespace tperf::util {
class AsyncWriter;
class WorkQueue;
}

namespace tperf::output {

class ScriptTraceField;

// perf script's output fields (the -F names of perf 6.1). Bits are tperf's own.
enum ScriptField : uint64_t {
  kFieldComm = 1ULL << 0,
  kFieldTid = 1ULL << 1,
  kFieldPid = 1ULL << 2,
  kFieldTime = 1ULL << 3,
  kFieldCpu = 1ULL << 4,
  kFieldEvent = 1ULL << 5,
  kFieldTrace = 1ULL << 6,
  kFieldIp = 1ULL << 7,
  kFieldSym = 1ULL << 8,
  kFieldDso = 1ULL << 9,
  kFieldAddr = 1ULL << 10,
  kFieldSymoff = 1ULL << 11,
  kFieldSrcline = 1ULL << 12,
  kFieldPeriod = 1ULL << 13,
  kFieldIregs = 1ULL << 14,
  kFieldBrstack = 1ULL << 15,
  kFieldBrstacksym = 1ULL << 16,
  kFieldDataSrc = 1ULL << 17,
  kFieldWeight = 1ULL << 18,
  kFieldBpfOutput = 1ULL << 19,
  kFieldCallindent = 1ULL << 20,
  kFieldInsn = 1ULL << 21,
  kFieldInsnlen = 1ULL << 22,
  kFieldBrstackinsn = 1ULL << 23,
  kFieldBrstackoff = 1ULL << 24,
  kFieldSynth = 1ULL << 25,
  kFieldPhysAddr = 1ULL << 26,
  kFieldUregs = 1ULL << 27,
  kFieldMetric = 1ULL << 28,
  kFieldMisc = 1ULL << 29,
  kFieldSrccode = 1ULL << 30,
  kFieldIpc = 1ULL << 31,
  kFieldTod = 1ULL << 32,
  kFieldDataPageSize = 1ULL << 33,
  kFieldCodePageSize = 1ULL << 34,
  kFieldInsLat = 1ULL << 35,
  kFieldBrstackinsnlen = 1ULL << 36,
  kFieldMachinePid = 1ULL << 37,
  kFieldVcpu = 1ULL << 38,
};

// The -F name of one field ("comm", "bpf-output", ...), "" when `field` is not exactly one field.
const char* script_field_name(uint64_t field);
// The field of a -F name, 0 when perf 6.1 does not know it ("flags" is not a field bit).
uint64_t script_field_by_name(std::string_view name);
// Fields tperf can print today; the others are refused with a clear message.
uint64_t script_supported_fields();

// perf script keeps one field set per kind of event.
enum ScriptOutputType : int {
  kOutHardware = 0,
  kOutSoftware,
  kOutTracepoint,
  kOutHwCache,
  kOutRaw,
  kOutBreakpoint,
  kOutSynth,  // PERF_TYPE_SYNTH (events made up by AUX decoders)
  kOutOther,  // dynamic PMUs (type >= PERF_TYPE_MAX)
  kOutTypeCount,
};
int script_output_type(uint32_t attr_type);
// perf's event_type(): "hardware", "software", "tracepoint", "hardware-cache" or "unknown".
const char* script_output_type_name(int type);

struct ScriptFieldSet {
  uint64_t fields = 0;
  uint64_t invalid = 0;
  uint64_t user_set_fields = 0;    // named by -F (an error when the events cannot fill them)
  uint64_t user_unset_fields = 0;  // removed with -F -field
  bool user_set = false;
  bool wildcard_set = false;
};

// The -F configuration: perf's defaults until -F changes them.
class ScriptFields {
 public:
  ScriptFields();
  // Applies one -F argument ("comm,tid", "+period", "sw:-ip", ...). Returns "" or the message
  // perf prints for a bad argument. Warnings perf prints and goes on after are added to `warnings`.
  std::string parse(std::string_view arg, std::vector<std::string>* warnings);
  bool set_by_user() const;

  std::array<ScriptFieldSet, kOutTypeCount> sets;
  bool print_flags = false;  // "flags" (branch flags of AUX-synthesized samples)
};

// What perf needs to know about the file when it checks the fields against the events.
struct ScriptCheckContext {
  bool has_stat = false;        // HEADER_STAT: perf stat record file, no checks
  bool has_auxtrace = false;    // HEADER_AUXTRACE: user fields may be absent from the events
  bool has_clock_data = false;  // HEADER_CLOCK_DATA, needed by tod
  bool pipe = false;
  bool hide_callchain = false;  // -G
};

// perf's check of the output options against the events of a file (the first event of each
// output type decides): fields the events cannot fill are dropped from the defaults, or are an
// error when the user asked for them; tracepoints get ip/sym/symoff/dso when callchains are
// shown. Returns "" or perf's error message. `use_callchain` says whether callchains are printed.
std::string check_script_fields(ScriptFields& fields, const std::vector<perfdata::EventAttr>& attrs,
                                const ScriptCheckContext& context, bool* use_callchain);

// Pipe mode: perf 6.1's script checks the output fields against the first event of each attr
// type as its ATTR record arrives (the header's features come later). Where the check drops a
// default field or fails, perf names the event from its attr for its message (modifiers and
// all), and that name stays until an EVENT_UPDATE names the event: the EVENT_DESC feature does
// not rename it, so the header's group line shows it. `names`: those names by attr index ("" for
// the others); `error`: the check's message when it failed (perf stops at that record).
ArrivedEventNames script_names_on_arrival(const ScriptFields& fields, const std::vector<perfdata::EventAttr>& attrs);

// perf's event name when the file did not store one (no EVENT_DESC): the generic name plus the
// ":ukhppp HG" modifiers perf derives from the exclude bits. Report names its sections with it
// too: both are perf's evsel__name.
std::string script_event_name(const perfdata::EventAttr& attr);

// --- the pieces of a line --------------------------------------------------------------------

// The values perf prints at the start of a line (a sample, or a side-band record's sample_id).
// Absent values are perf's defaults: pid/tid/cpu -1, time -1.
struct ScriptLineStart {
  std::string_view comm;
  int32_t pid = -1;
  int32_t tid = -1;
  int32_t cpu = -1;
  uint64_t time = UINT64_MAX;
  // The time field's value: `time`, or with --reltime/--deltatime what ScriptWriter::time_shown()
  // made of it (tod always shows `time`).
  uint64_t time_shown = UINT64_MAX;
  uint16_t misc = 0;
  uint32_t record_type = perfdata::kRecordSample;
};

struct ScriptStartStyle {
  bool nanosecs = false;       // --ns
  bool comm_unpadded = false;  // ip with a callchain: perf prints comm without padding
  bool has_clock = false;      // tod: the file's CLOCK_DATA
  uint64_t clock_tod_ns = 0;   // wall-clock time at clock_ref_ns
  uint64_t clock_ref_ns = 0;   // the sample clock at that moment
};

// comm, pid/tid, [cpu], misc, tod, time: "%16s %5d/%-5d [%03d] %12s: ".
void append_line_start(std::string& out, uint64_t fields, const ScriptLineStart& s, const ScriptStartStyle& style);
// "%12s: " with microseconds, or "%5lu.%09llu: " for --ns.
void append_time(std::string& out, uint64_t ns, bool nanosecs);
// "%10lu ".
void append_period(std::string& out, uint64_t period);
// "%*s: ", the width of the longest event name of the file.
void append_event_name(std::string& out, std::string_view name, int width);

// What perf knows about one address: the shown value, the symbol and the DSO of the map it
// falls in, and (when asked) its source line.
struct ScriptLocation {
  uint64_t ip = 0;  // the address printed
  bool has_sym = false;  // false: "[unknown]"
  std::string_view sym;
  uint64_t symoff = 0;
  bool inlined = false;  // a frame of an inline chain (perf --inline): no dso, " (inlined)" after it
  bool has_map = false;  // false: dso "[unknown]"
  std::string_view dso;
  bool has_srcline = false;  // printed as "\n  <srcline>" after the dso
  std::string srcline;
};

struct ScriptIpOptions {
  bool ip = false, sym = false, symoff = false, dso = false;
};

// The sample's own address without a callchain: "%16lx [sym] (dso)".
void append_ip(std::string& out, const ScriptLocation& loc, const ScriptIpOptions& o);
// One callchain frame: "\t%16lx sym (dso)[\n  srcline][ (inlined)]\n".
void append_frame(std::string& out, const ScriptLocation& loc, const ScriptIpOptions& o);
// "addr" for events whose address is data (page faults): "%16lx" plus sym/dso when asked.
void append_addr(std::string& out, uint64_t addr, const ScriptLocation* loc, const ScriptIpOptions& o);
// "misc": K/U/H/G/g plus M (mmap data), E (comm exec), S/p (switch out, preempt), padded to 6.
void append_misc(std::string& out, uint16_t misc, uint32_t record_type);
// "tod": local wall-clock date and time of a timestamp, from the file's CLOCK_DATA.
void append_tod(std::string& out, uint64_t time, const ScriptStartStyle& style);
// "data_page_size"/"code_page_size": " 4K", " 2M", " N/A"...
void append_page_size(std::string& out, uint64_t size);

// perf's architecture name for a uname machine string ("x86_64" -> "x86", "aarch64" -> "arm64").
std::string script_arch(std::string_view uname_machine);
// perf's name of register `id` of `arch` ("AX", "x29", ...), "unknown" when it has none.
const char* script_register_name(std::string_view arch, unsigned id);
// "uregs"/"iregs": " ABI:2    AX:0x1 ..." for the registers of `mask`, nothing when none were
// copied.
void append_regs(std::string& out, const perfdata::RegsDump& regs, uint64_t mask, std::string_view arch);

// One branch-stack entry: "/P/-/-/4/ " (mispredicted or predicted, in_tx, abort, cycles, type).
void append_branch_flags(std::string& out, uint64_t flags);

// Side-band records as perf prints them after the line start (each ends with a newline).
void append_comm_event(std::string& out, const perfdata::CommEvent& e);
void append_task_event(std::string& out, uint32_t type, const perfdata::TaskEvent& e);  // FORK, EXIT
void append_mmap_event(std::string& out, const perfdata::MmapEvent& e);
void append_mmap2_event(std::string& out, const perfdata::Mmap2Event& e);
void append_switch_event(std::string& out, uint32_t type, uint16_t misc, const perfdata::SwitchCpuWideEvent& e);
void append_lost_event(std::string& out, const perfdata::LostEvent& e);
void append_namespaces_event(std::string& out, const perfdata::NamespacesEvent& e);
void append_cgroup_event(std::string& out, const perfdata::CgroupEvent& e);
void append_ksymbol_event(std::string& out, const perfdata::KsymbolEvent& e);
void append_bpf_event(std::string& out, const perfdata::BpfEvent& e);

// --cpu: "0-3,5". Returns "" or why not.
std::string parse_cpu_list(std::string_view text, std::vector<bool>* cpus);

// --- the whole command -----------------------------------------------------------------------

struct ScriptOptions {
  ScriptFields fields;
  bool nanosecs = false;
  // --reltime: times from the first line that shows one; --deltatime: from the line before.
  enum class TimeBase { kAbsolute, kRelative, kDelta } time_base = TimeBase::kAbsolute;
  bool hide_callchain = false;  // -G
  bool show_task_events = false;
  bool show_mmap_events = false;
  bool show_switch_events = false;
  bool show_lost_events = false;
  bool show_namespace_events = false;  // NAMESPACES
  bool show_cgroup_events = false;     // CGROUP
  bool show_bpf_events = false;        // KSYMBOL, BPF_EVENT
  // FINISHED_ROUND, on a line of its own. perf reads the records in file order then (its
  // ordered_events off): the caller replays them so (analysis::ReplayHandlers::ordered).
  bool show_round_events = false;
  unsigned max_stack = 127;
  std::string time;  // --time, parsed by ScriptWriter::start() (percentages need the file's sample times)
  std::vector<analysis::TimeRange> time_ranges;
  bool cpu_filter = false;
  std::vector<bool> cpus;
  std::vector<std::string> comms;
  std::vector<int32_t> pids;
  std::vector<int32_t> tids;
  // --dsos, -S/--symbols (with --addr-range): applied to the sample's own address, as perf does
  // (analysis::SampleSelection).
  std::vector<std::string> dsos;
  std::vector<std::string> symbols;
  uint64_t addr_range = 0;
  // --stop-bt: symbols after whose line a callchain is cut.
  std::vector<std::string> stop_bt;
  // Symbol names, srclines and inline frames; nullptr prints "[unknown]" for every symbol.
  symbols::Symbolizer* symbolizer = nullptr;
  // --inline-callchains: the frames of the recorded callchain (frame pointers, the kernel's) expand
  // into their inline chains too. perf 6.1 expands only frames it unwinds from stack copies.
  bool inline_callchains = false;
  // perf expands the inline chains of frames unwound from stack copies unless --no-inline.
  bool unwound_inline_frames = true;
  // Unwinds the user stacks of --call-graph dwarf samples; nullptr shows only the kernel's frames.
  symbols::DwarfUnwinder* unwinder = nullptr;
  // Threads that format samples (-j): 0 = one per CPU, 1 = this thread alone. The text is the
  // same for every count.
  unsigned jobs = 1;
};

// Prints the records of one file, delivered in perf's time order (session::OrderedEvents), as
// `perf script` does. The Machine is fed the side-band records here; it comes set up for the
// file by analysis::make_replay_machine() (idle task, recorded build ids).
// alignas(64): with -j above 1 its members are read and written by several threads, grouped
// below by who writes them; aligned, no neighbour on the stack shares a cache line with them.
class alignas(64) ScriptWriter {
 public:
  ScriptWriter(const perfdata::Reader& reader, session::Machine& machine, ScriptOptions options, FILE* out);
  ~ScriptWriter();
  ScriptWriter(const ScriptWriter&) = delete;
  ScriptWriter& operator=(const ScriptWriter&) = delete;

  // File mode: checks the fields against the file's events. Returns "" or perf's error message.
  // Pipe mode checks each event when its ATTR record arrives.
  std::string start();
  // The records in time order, as the replay driver (analysis/sample_path.h) hands them over:
  // a sample; a side-band record before the machine applies it (an EXIT is printed while the
  // task is still known) and after (COMM, FORK, MMAP, switch and lost lines, a pipe's ATTR).
  // A record that cannot be decoded throws FormatError.
  //
  // With options.jobs above 1, samples are checked, filtered and given their thread here, in
  // order, and collected in batches; a full batch is formatted on a worker while the next one
  // fills (this thread formats one too when the workers lag), and the batches' text is written
  // in order. A batch holds copies of its samples' threads and their maps as they were when the
  // samples came, so that the machine may go on meanwhile. Before a record that changes what
  // else they print (a side-band line, the kernel's maps, a DSO's build id) every batch is
  // formatted first.
  void sample(const perfdata::Record& rec);
  void before_machine(const perfdata::Record& rec, uint64_t time);
  void after_machine(const perfdata::Record& rec, uint64_t time);
  // Writes out what is held and buffered.
  void finish();

  // An error that stops the command (a field the events of a pipe cannot fill), or "".
  const std::string& fatal() const { return fatal_; }
  // Some output field shows symbols (known after start()); without one no symbol is looked up.
  bool needs_symbols() const { return needs_symbols_; }
  uint64_t samples_printed() const { return samples_printed_; }

 private:
  // The formatted lines of callchain frames, keyed by the address space's version, the parts of
  // the line shown (frame_tag) and the ip:
  // stacks repeat, so most frames cost a probe and a copy instead of a map lookup, a symbol
  // lookup and the formatting. Direct-mapped with a fixed number of fixed-size slots (a line
  // too long for a slot is not cached), so its memory is bounded: 2^kFrameSlotBits *
  // sizeof(FrameSlot) = 2 MiB per lane (one huge page), mapped populated on the lane's first
  // callchain frame. It was 8 MiB: on this project's VM a fresh page costs far more than the
  // misses of a smaller table (populating 8 MiB was 12% of the main thread's samples of script
  // -F comm,pid,tid,time,event,ip on the sys recipe); with 2 MiB the sys script took 0.20-0.28 s
  // against 0.22-0.34 s and peaked at 20 MB against 32 MB, fp's script was no slower.
  struct FrameSlot {
    uint64_t tag;  // frame_tag(); 0: empty (AddressSpace versions start at 1)
    uint64_t ip;
    uint32_t len;
    char text[236];
  };
  static constexpr unsigned kFrameSlotBits = 13;
  struct FreeDeleter {
    void operator()(FrameSlot* p) const;
  };
  // What formatting one sample writes to and looks up with. Lane 0 is this thread's; with
  // options.jobs above 1 there is one per formatting thread. Each on cache lines of its own:
  // when the lanes' output strings sat side by side (in one vector), every append wrote a line
  // the other thread was writing too, and two threads took 60% more time than one.
  struct alignas(64) Lane {
    std::string* out = nullptr;  // where the lines go: out_, or a batch's text while it is formatted
    perfdata::Sample sample;
    std::vector<session::CallchainFrame> chain_frames;  // the kernel's chain of the sample printed
    std::vector<session::CallchainFrame> unwound;
    std::unique_ptr<symbols::Resolver> resolver;  // where locate() looks addresses up
    uint64_t time_shown = UINT64_MAX;  // the time field of the sample formatted next (admit())
    const session::Map* last_map = nullptr;       // the map the last locate() found (for --inline)
    std::unique_ptr<FrameSlot[], FreeDeleter> frame_cache;
    // Buffers for the text of the batches this lane formats (batches_mu_). A buffer stays with
    // its lane: written by one core only, its cache lines are never fetched from another's.
    std::vector<std::string> texts;
  };
  // A sample checked and held for formatting: its record, event and thread. A record that stays
  // where it is (Record::stable) is held as it is, else its bytes are copied into the batch.
  struct Held {
    perfdata::RecordMeta meta;
    const uint8_t* bytes;  // nullptr: at `at` in the batch's bytes
    size_t at;
    uint32_t event;  // in the batch's events
    const session::Thread* thread;  // the batch's copy
    uint64_t time_shown;  // its time field (admit())
  };
  // The copies of the held samples' threads and of their processes' maps, as they were when the
  // samples were held: the machine applies the records that follow (new maps, an exec, an exit,
  // a thread released at the end of a round) while the batch waits and is formatted. On a
  // system-wide recording such a record comes every 15 samples; when each made every batch be
  // formatted first, this thread formatted nearly all of them. Reused from batch to batch.
  struct Copies {
    std::deque<session::Thread> threads;     // the first live.size() are in use
    std::vector<const session::Thread*> live;  // what threads[i] was copied from (only compared: it may be gone)
    std::deque<session::AddressSpace> spaces;
    size_t nr_spaces = 0;  // spaces in use (the rest are kept for reuse)
    // The last copy asked for, and the count of machine changes then (ScriptWriter::changes_):
    // most samples are of the thread the one before was of, with no change in between.
    const session::Thread* last_live = nullptr;
    const session::Thread* last_copy = nullptr;
    uint64_t last_changes = 0;
    const session::Thread* copy_of(const session::Thread& live, uint64_t changes) {
      if (last_live == &live && last_changes == changes && last_copy->pid() == live.pid()) return last_copy;
      last_live = &live;
      last_changes = changes;
      return last_copy = find_or_copy(live);
    }
    const session::Thread* find_or_copy(const session::Thread& live);
    void clear() {
      live.clear();
      nr_spaces = 0;
      last_live = nullptr;
    }
  };
  struct alignas(64) Batch {  // filled by this thread, formatted by a worker: lines of its own
    enum class State { kQueued, kFormatting, kDone };
    // Written past the cache (util/handoff.h): the formatting thread reads them next.
    util::HandoffArray<Held> held;
    util::HandoffArray<uint8_t> bytes;
    std::vector<std::pair<int, perfdata::EventAttr>> events;  // (attr index, its copy without ids)
    std::string text;
    Lane* lane = nullptr;  // the one that formatted it, whose buffer `text` is
    State state = State::kQueued;
    std::exception_ptr error;
    Copies copies;
  };

  // `read`: one of the samples perf makes of a SAMPLE_READ record (its event and period).
  void on_sample(const perfdata::Record& rec, const analysis::ReadDelivery* read = nullptr);
  // Decodes the sample (`parts` of it) into lane 0's, applies the filters and finds its thread:
  // nullptr when it is not printed (`fields`: its event's, none prints nothing). Runs in record
  // order (it may create the thread).
  session::Thread* admit(const perfdata::Record& rec, uint64_t fields, perfdata::SampleParts parts);
  // The value a line's time field shows for `time`, in record order: `time` itself, or with
  // --reltime its distance from the first line's (perf's initial_time, taken from the first
  // nonzero one), with --deltatime from the line before (0 for the first).
  uint64_t time_shown(uint64_t time);
  // The sample's text (decoded in lane.sample), after admit().
  // `ea`: the event (attr index `ai`) as it was when the sample arrived.
  void format_sample(Lane& lane, const perfdata::Record& rec, const analysis::ReadDelivery* read, int ai,
                     const perfdata::EventAttr& ea, const session::Thread& thread);
  // Whether a sample of event `ai` may be formatted on another thread, out of order.
  bool formats_anywhere(int ai, uint64_t fields) const;
  void hold(const perfdata::Record& rec, int ai, session::Thread& thread);
  // Queues the batch being filled; waits while too many are on their way.
  void queue_batch();
  // Formats the oldest queued batch, if any (on a worker, or on this thread); false: none queued.
  bool format_queued_batch();
  // The held samples' text, into lane.out.
  void format_batch(Lane& lane, const Batch& b);
  // Writes the formatted batches at the head of the queue, in order, unless another thread is
  // writing them (which then writes these too). Called with batches_mu_ held by `lock`.
  void write_done_batches(std::unique_lock<std::mutex>& lock);
  // Formats queued batches here or waits until at most `at_most` are on their way (0: all of them
  // written too); then rethrows what a batch's formatting threw.
  // `leave`: queued batches this thread leaves to the workers (it formats one only while more
  // are queued).
  void wait_for_batches(size_t at_most, size_t leave = 0);
  // What this thread buffered (out_, and the writer thread's buffer) into the file now.
  void write_buffered();
  // Every held sample formatted and written: before anything that changes what they print.
  void format_held();
  // Whether the held samples, and those being formatted, print the same once the machine applied
  // `rec` (a side-band record, about to be), while other threads format them: whether it prints
  // no line and changes nothing they read from the machine besides their threads and maps.
  bool keeps_held(const perfdata::Record& rec) const;
  void on_callchain_deferred(const perfdata::Record& rec, uint64_t time);
  void on_attr();
  // The line start of a side-band record; false when the record is filtered out (--cpu).
  bool print_sideband(const perfdata::Record& rec, int32_t pid, int32_t tid, uint64_t event_time, bool have_event_time);
  int sideband_attr(const perfdata::Record& rec, perfdata::Sample& id, bool* have_id) const;
  bool thread_filtered(const session::Thread& thread) const;
  // --dsos and -S on the sample's address (resolved on this thread, in lane 0).
  bool sample_selected(const session::Thread& thread, uint8_t cpumode, const perfdata::Sample& s);
  ScriptLocation locate(Lane& lane, const session::Thread* thread, uint8_t cpumode, uint64_t addr,
                        bool callchain_frame, bool srcline = false) const;
  // perf's thread__find_map_fb: the sample's cpumode first, then the one the address implies.
  ScriptLocation locate_fb(Lane& lane, const session::Thread* thread, uint8_t cpumode, uint64_t addr) const;
  void append_branches(Lane& lane, const perfdata::Sample& s, const session::Thread& thread, uint8_t cpumode,
                       uint64_t fields) const;
  // Appends the line of one callchain frame (see append_frame): from the lane's frame cache, or
  // made by append_uncached_frame() and cached (`space`: the one `mode` selects, or nullptr).
  void append_callchain_frame(Lane& lane, const session::Thread& thread, uint8_t mode, uint64_t ip,
                              const ScriptIpOptions& ipo, bool srcline) const;
  // The space a frame of this cpumode is looked up in (nullptr: neither kernel nor user).
  const session::AddressSpace* frame_space(const session::Thread& thread, uint8_t mode) const;
  // Where in the frame cache (made) append_callchain_frame will look a frame up; nullptr: it
  // will not.
  const char* cached_frame_slot(const Lane& lane, const session::Thread& thread, uint8_t mode, uint64_t ip,
                                const ScriptIpOptions& ipo, bool srcline) const;
  [[gnu::noinline]] void append_uncached_frame(Lane& lane, const session::Thread& thread,
                                               const session::AddressSpace* space, uint8_t mode, uint64_t ip,
                                               const ScriptIpOptions& ipo, bool srcline) const;
  // What a frame's line depends on besides its ip: the space's version and the parts of the line
  // shown, which each event type sets apart (-F hw:ip,sym -F sw:ip,dso).
  static uint64_t frame_tag(uint64_t version, const ScriptIpOptions& ipo, bool srcline) {
    return version << 5 | uint64_t{ipo.ip} | uint64_t{ipo.sym} << 1 | uint64_t{ipo.symoff} << 2 |
           uint64_t{ipo.dso} << 3 | uint64_t{srcline} << 4;
  }
  static size_t frame_slot(uint64_t tag, uint64_t ip) {
    return static_cast<size_t>(((ip ^ (tag << 35) ^ (tag >> 29)) * 0x9E3779B97F4A7C15ULL) >> (64 - kFrameSlotBits));
  }
  void flush_if_full();
  Lane& lane0() { return *lanes_[0]; }

  // The members are grouped by the threads that write them while samples are formatted on
  // workers (-j above 1). Each group written during the replay starts a cache line of its own:
  // when this thread's count of printed samples shared a line with the line-start style that
  // every formatting thread reads, each sample moved that line from core to core, and the
  // increment and the read were the two slowest instructions of admit() and format_sample().

  // Written by this thread for every sample (admit, hold).
  alignas(64) std::unique_ptr<Batch> filling_;  // samples held, not yet queued
  uint64_t samples_printed_ = 0;
  uint64_t initial_time_ = 0, previous_time_ = 0;  // time_shown()'s
  uint64_t admitted_time_shown_ = UINT64_MAX;     // admit()'s, for the sample it let through
  uint64_t changes_ = 0;  // side-band records the machine applied while samples were held

  // The hand-over of batches: any thread, once per batch, under batches_mu_.
  alignas(64) std::mutex batches_mu_;
  std::deque<std::unique_ptr<Batch>> batches_;     // queued, oldest first (batches_mu_)
  std::vector<std::unique_ptr<Batch>> spare_batches_;  // (batches_mu_)
  std::vector<Lane*> free_lanes_;                      // (batches_mu_)
  bool writing_ = false;             // a thread writes batches (batches_mu_)
  std::exception_ptr batch_error_;   // the first a batch's formatting threw (batches_mu_)
  std::condition_variable batch_done_;

  // The output: written by the thread that writes the batches' text (writing_), one at a time.
  alignas(64) std::string out_;
  // Writes full buffers while the next one is formatted; made at the first full buffer, so a
  // short output never starts a thread.
  std::unique_ptr<util::AsyncWriter> async_;

  // Read by every formatting thread; written only while no batch is on its way (format_held()
  // comes first), or before the first sample.
  alignas(64) std::vector<std::unique_ptr<Lane>> lanes_;
  unsigned jobs_ = 1;  // formatting threads (options.jobs resolved)
  std::unique_ptr<ScriptTraceField> trace_;  // the `trace` field, made at the first sample with raw data

  const perfdata::Reader& reader_;
  session::Machine& machine_;
  ScriptOptions options_;
  analysis::SampleSelection selection_;
  FILE* file_;
  DataSrcColumn data_src_column_;  // -F data_src: padded to the widest decoding so far
  std::unique_ptr<analysis::SampleReadSplitter> read_splitter_;  // SAMPLE_READ records
  // -F srccode: the source line printed last for each thread (by pid and tid), and the source
  // files read (nullptr: unreadable).
  struct SrccodeState {
    std::string file;
    unsigned line = 0;
  };
  struct SourceText {
    std::string bytes;
    std::vector<size_t> lines;  // where each line starts
  };
  static uint64_t thread_key(int32_t pid, int32_t tid) {
    return static_cast<uint64_t>(static_cast<uint32_t>(pid)) << 32 | static_cast<uint32_t>(tid);
  }
  std::unordered_map<uint64_t, SrccodeState> srccode_states_;
  std::unordered_map<std::string, std::unique_ptr<SourceText>> sources_;
  const SourceText* source_text(const std::string& path);
  void append_srccode(std::string& out, const session::Thread& thread, uint8_t cpumode, uint64_t ip);
  std::string fatal_;
  std::vector<std::string> names_;                         // per attr, as perf names them
  std::unordered_set<std::string> kernel_build_id_paths_;  // kernel-space files of the BUILD_ID table
  size_t attrs_seen_ = 0;
  int name_width_ = -1;
  bool use_callchain_ = true;
  bool needs_symbols_ = false;  // some output shows symbols (else no lookups at all)
  bool shows_dso_ = false;      // some output shows DSO names
  ScriptStartStyle style_;
  std::string arch_;
  // The workers that format batches; declared last so that they stop before what they use goes.
  std::unique_ptr<util::WorkQueue> formatters_;
};

}  // namespace tperf::output
