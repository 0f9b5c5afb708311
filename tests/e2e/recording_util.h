// Support for the tests that record with the system perf at test time and hold what tperf
// decodes against what perf prints for the same file: a scratch directory, the workload binary,
// the "can perf record here" probe, and parsers for `perf script` and `perf report -D` text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tperf::test::e2e {

// Empty when `perf record -e cpu-clock` works here; otherwise why not (perf missing, or
// perf_event_open refused). Probed once. The e2e tests fail with it (TPERF_REQUIRE_PERF): perf is
// their oracle, and a machine where it cannot record checks nothing.
const std::string& perf_unavailable_reason();

// A directory private to this test program, removed when it exits. What a failed comparison
// looked at is copied out of it first (keep_artifacts).
const std::string& scratch_dir();

// Where the files of failed comparisons are kept: $TPERF_E2E_KEEP when set, otherwise
// e2e-artifacts/ next to the test binary (the build directory).
std::string artifacts_dir();

// Copies `files` (files or directories; missing ones are left out) into
// artifacts_dir()/<Suite.Test>/ of the running test and returns that directory, or a sentence
// saying why nothing could be kept. Called only when a test has failed.
std::string keep_artifacts(const std::vector<std::string>& files);

// Keeps `files` (keep_artifacts) when the test that holds it has failed by the time it goes out
// of scope, and adds a failure line naming where they are.
class KeepOnFailure {
 public:
  explicit KeepOnFailure(std::vector<std::string> files) : files_(std::move(files)) {}
  ~KeepOnFailure();
  KeepOnFailure(const KeepOnFailure&) = delete;
  KeepOnFailure& operator=(const KeepOnFailure&) = delete;
  void add(const std::string& file) { files_.push_back(file); }

 private:
  std::vector<std::string> files_;
};

// Compiles tests/e2e/workloads/<name>.c once (gcc -O1 -g -fno-omit-frame-pointer -pthread) into
// scratch_dir(). Returns the binary's path, or "" with *error set.
std::string workload(const std::string& name, std::string* error);

struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};
// Runs `cmd` with /bin/sh, standard output and standard error captured apart.
CommandResult run(const std::string& cmd);

// name -> address (st_value) of a binary's defined symbols, as `nm --defined-only` lists them.
std::map<std::string, uint64_t> nm_symbols(const std::string& binary);

// Mounts tracefs on /sys/kernel/tracing when neither it nor debugfs's tracing directory has
// events/, as perf does before it opens a tracepoint. "" when tracefs is there; otherwise why not.
std::string ensure_tracefs();

// Fails the test (a set-up failure, never a skip) when perf cannot record here.
#define TPERF_REQUIRE_PERF()                                                                    \
  ASSERT_TRUE(::tperf::test::e2e::perf_unavailable_reason().empty())                            \
      << "set-up failed, perf cannot record here: " << ::tperf::test::e2e::perf_unavailable_reason()

// A `perf record` made once per test program.
struct Recording {
  std::string path;
  std::string error;     // non-empty: recording failed
  bool missing = false;  // ...because this machine lacks something (permission for -a, tracefs)
};
// Runs `cmd`, a perf record command that writes `path`, and says how it went.
Recording record_with_perf(const std::string& cmd, const std::string& path);
// `perf record -q PERF_OPTIONS -- <workload> 0.3` of the workload `workload_name` (workload()),
// made once per test program for each `name` (the file is <scratch>/<name>.data).
const Recording& workload_recording(const std::string& name, const std::string& workload_name,
                                    const std::string& perf_options);

// Fails the test when perf cannot record here or the recording failed, whatever the reason (a
// recording the machine cannot make is a set-up failure: the test would check nothing).
// `lookup` yields a `const Recording&`.
#define TPERF_REQUIRE_RECORDING(var, lookup)         \
  TPERF_REQUIRE_PERF();                              \
  const ::tperf::test::e2e::Recording& var = lookup; \
  ASSERT_TRUE(var.error.empty()) << "set-up failed: " << (var.missing ? "this machine lacks what the recording needs: " : "") << var.error

// A shell filter (`perf report ... | kStripPerfTip`) that drops perf report's random tip block
// ("#", "# (Tip: ...)", "#" at the end) from its output.
inline constexpr const char* kStripPerfTip =
    "awk '/^# \\(Tip/ {tip=NR} {l[NR]=$0} END {for (i=1;i<=NR;i++) if (!(tip && i>=tip-1 && i<=tip+1)) print l[i]}'";

// Two commands' standard outputs side by side: `perf_cmd` and `tperf_cmd` are shell commands
// whose stdout is compared (stderr of perf is dropped, tperf's kept). When they differ or tperf
// fails, both outputs and `input` (the recording, if given) are kept (keep_artifacts) and the
// place is named at the end of `diff` / `tperf_err`.
struct ComparedOutputs {
  std::string diff;        // the first lines of `diff perf tperf`; empty when equal
  size_t perf_lines = 0;   // lines perf printed (so that an empty comparison is seen)
  int tperf_status = -1;
  std::string tperf_err;
  std::string kept;        // where the files were kept; empty when nothing failed
};
ComparedOutputs compare_outputs(const std::string& perf_cmd, const std::string& tperf_cmd,
                                const std::string& input = "");
// Expects `c` to hold the same text from both, at least `min_lines` lines of it from perf, and
// tperf's exit status 0; `what` names the comparison in the failures.
void expect_same_outputs(const ComparedOutputs& c, const std::string& what, size_t min_lines);

// "1234.000000567" (perf script --ns) -> 1234000000567; false when `text` is not like that.
bool parse_seconds_ns(const std::string& text, uint64_t* ns);

// One sample line of `perf script -G --ns -F pid,tid[,cpu],time,period,event[,addr],ip`.
struct ScriptSample {
  int32_t pid = 0;
  int32_t tid = 0;
  int32_t cpu = -1;
  uint64_t time = 0;
  uint64_t period = 0;
  std::string event;
  uint64_t addr = 0;
  uint64_t ip = 0;
};
bool parse_script_sample(const std::string& line, bool with_cpu, bool with_addr, ScriptSample* out);

// A line of `perf script --show-switch-events -F pid,tid,cpu,time,...` for a SWITCH_CPU_WIDE record.
struct ScriptSwitch {
  int32_t pid = 0;
  int32_t tid = 0;
  int32_t cpu = -1;
  uint64_t time = 0;
  bool out = false;
  bool preempt = false;
  int32_t next_prev_pid = 0;
  int32_t next_prev_tid = 0;
};
bool parse_script_switch(const std::string& line, ScriptSwitch* out);

// A line of `perf script -G --ns -F pid,tid,time,ip,uregs`: registers in mask bit order.
struct ScriptRegs {
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t time = 0;
  uint64_t ip = 0;
  uint64_t abi = 0;
  std::vector<uint64_t> values;
};
bool parse_script_uregs(const std::string& line, ScriptRegs* out);

// A line of `perf script --ns -F pid,tid,cpu,time,trace` for sched:sched_switch.
struct ScriptSchedSwitch {
  int32_t pid = 0;
  int32_t tid = 0;
  int32_t cpu = -1;
  uint64_t time = 0;
  std::string prev_comm;
  int32_t prev_pid = 0;
  int32_t prev_prio = 0;
  std::string next_comm;
  int32_t next_pid = 0;
  int32_t next_prio = 0;
};
bool parse_script_sched_switch(const std::string& line, ScriptSchedSwitch* out);

// `perf report -D`: every record perf read ("0x<off>@<file> [0x<size>]: event: <type>" lines;
// records unpacked from COMPRESSED carry the compressed record's offset, pipe-mode offsets
// count from the end of the 16-byte pipe header) and every sample it delivered, with the raw
// callchain, user registers, user stack and data_src perf printed for it.
struct DumpRecord {
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t type = 0;
  std::string file;  // as perf printed it: the -i path, "<dir>/data.N", or "pipe"
};

struct DumpSample {
  int32_t cpu = -1;  // -1: no CPU in sample_type
  uint64_t time = 0;
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t misc = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t ip = 0;
  uint64_t period = 0;
  uint64_t addr = 0;
  bool has_chain = false;
  std::vector<uint64_t> chain;
  bool has_regs = false;  // perf prints user regs only when the ABI is not NONE
  std::string regs_abi;   // "32-bit" / "64-bit"
  uint64_t regs_mask = 0;
  std::vector<uint64_t> regs;
  bool has_ustack = false;
  uint64_t ustack_size = 0;    // dyn_size (0 when nothing was copied)
  uint64_t ustack_offset = 0;  // offset of the size field from the record start
  bool has_data_src = false;
  uint64_t data_src = 0;
};

struct PerfDump {
  std::vector<DumpRecord> records;
  std::vector<DumpSample> samples;
};
PerfDump parse_report_dump(const std::string& text);

// One line per sample, for comparing the two sides as multisets.
std::string dump_sample_key(const DumpSample& s, bool with_offset);

// "" when the two multisets are equal; otherwise their sizes and up to `show` entries found on
// one side only.
std::string multiset_diff(std::vector<std::string> ours, std::vector<std::string> perf, size_t show = 6);

}  // namespace tperf::test::e2e
