// `tperf record`: perf record's options turned into record::RecordOptions; the recorder does the
// rest. Exit status: the workload's, 128 + signal when stopped by one, 1 when recording failed,
// 2 for option values the recorder refuses, 129 for a command line that does not parse (an
// unknown option before the workload, a missing or malformed value).
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "record/event_spec.h"
#include "record/perf_event.h"
#include "record/recorder.h"
#include "util/text.h"

namespace tperf::cli {

namespace {

struct RecordCliOptions {
  std::vector<std::string> events;
  std::string pids, tids, cpus;
  bool all_cpus = false;
  std::string output = "perf.data";
  std::string freq;
  uint64_t count = 0;
  bool g = false;
  std::string call_graph;
  bool switch_events = false;
  bool off_cpu = false;
  std::string off_cpu_way;  // auto (empty), bpf, tracepoint
  bool compress = false;
  int compression_level = -1;
  std::string mmap_pages;
  bool no_inherit = false;
  std::string clockid;
  std::vector<std::string> threads;
  bool threads_given = false;
  bool buildid_mmap = false;
  bool no_buildid = false;
  bool quiet = false;
  unsigned synth_threads = 0;
  std::vector<std::string> command;
};

std::vector<int32_t> parse_id_list(const std::string& text, const char* what) {
  std::vector<int32_t> out;
  if (!util::parse_number_list(text, false, &out)) throw std::invalid_argument(fmt::format("bad {} list '{}'", what, text));
  if (out.empty()) throw std::invalid_argument(fmt::format("no {} in '{}'", what, text));
  return out;
}

// perf's CMDLINE feature holds its own absolute path followed by the arguments as given.
std::vector<std::string> own_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t nul = all.find('\0', pos);
    if (nul == std::string::npos) nul = all.size();
    args.push_back(all.substr(pos, nul - pos));
    pos = nul + 1;
  }
  char exe[PATH_MAX];
  if (!args.empty() && ::realpath("/proc/self/exe", exe)) args[0] = exe;
  return args;
}

int run_record_command(const RecordCliOptions& c) {
  record::RecordOptions o;
  std::unique_ptr<record::OffCpuBpf> bpf;  // the BPF way of --off-cpu, loaded before the recording
  try {
    for (const auto& e : c.events) {
      auto list = record::parse_event_list(e);
      o.events.insert(o.events.end(), list.begin(), list.end());
    }
    if (!c.pids.empty()) o.pids = parse_id_list(c.pids, "pid");
    if (!c.tids.empty()) o.tids = parse_id_list(c.tids, "tid");
    if (!c.cpus.empty()) o.cpus = record::parse_cpu_list(c.cpus);
    o.system_wide = c.all_cpus;
    o.output = c.output;
    if (c.count > 0) {
      o.use_freq = false;
      o.period = c.count;
    }
    if (!c.freq.empty()) {
      if (c.count > 0) throw std::invalid_argument("-F and -c cannot be combined");
      if (c.freq == "max") {
        std::ifstream in("/proc/sys/kernel/perf_event_max_sample_rate");
        uint64_t v = 0;
        if (!(in >> v) || v == 0) throw std::invalid_argument("cannot read kernel.perf_event_max_sample_rate");
        o.freq = v;
      } else {
        if (c.freq.find_first_not_of("0123456789") != std::string::npos || c.freq.size() > 9) {
          throw std::invalid_argument(fmt::format("bad frequency '{}'", c.freq));
        }
        o.freq = std::stoull(c.freq);
        if (o.freq == 0) throw std::invalid_argument("-F 0: the frequency must be positive");
      }
    }
    if (c.g) o.call_graph = record::CallGraph::kFramePointer;
    if (!c.call_graph.empty()) record::parse_call_graph(c.call_graph, &o.call_graph, &o.dwarf_stack_size, &o.defer_callchain);
    o.switch_events = c.switch_events;
    if (!c.off_cpu_way.empty() && !c.off_cpu) throw std::invalid_argument("--off-cpu-way needs --off-cpu");
    if (c.off_cpu) {
      // The BPF way when it loads (in-kernel totals written as perf's offcpu-time event), else the
      // tracepoint way; --off-cpu-way forces one.
      const std::string way = c.off_cpu_way.empty() ? "auto" : c.off_cpu_way;
      if (way != "auto" && way != "bpf" && way != "tracepoint") {
        throw std::invalid_argument(fmt::format("--off-cpu-way={}: expected bpf or tracepoint", way));
      }
      std::string why;
      if (way == "tracepoint") {
        why = "asked for with --off-cpu-way=tracepoint";
      } else if (!c.pids.empty() && !c.tids.empty()) {
        why = "the BPF way filters by processes or by threads, not both (-p with -t)";
      } else {
        record::OffCpuBpfFilter filter;
        if (o.system_wide || !o.cpus.empty()) filter.mode = record::OffCpuBpfFilter::Mode::kAll;
        else if (!o.tids.empty()) filter.mode = record::OffCpuBpfFilter::Mode::kThreads;
        filter.follow_forks = !c.no_inherit;
        bpf = record::OffCpuBpf::open(filter, &why);
      }
      if (!bpf && way == "bpf") {
        fmt::print(stderr, "tperf record: --off-cpu-way=bpf: {}\n", why);
        return 1;
      }
      if (bpf) {
        o.off_cpu_bpf = bpf.get();
        if (!c.quiet) {
          fmt::print(stderr,
                     "tperf record: --off-cpu: the BPF way (a sched_switch program sums the time switched out per "
                     "thread, stack and state in the kernel; written as offcpu-time samples)\n");
        }
      } else {
        // The tracepoint way: every switch-out as a sched_switch sample (prev_state says sleeping
        // or preempted; with -g its callchain is where the thread blocked), and SWITCH records for
        // the switch-ins, which a per-task sched_switch never sees (it fires in the task leaving).
        // The normal samples stay: the default event too when no -e was given.
        if (!c.quiet) {
          fmt::print(stderr, "tperf record: --off-cpu: the tracepoint way (sched:sched_switch samples{} + switch events): {}\n",
                     o.call_graph != record::CallGraph::kNone ? " with callchains" : "", why);
        }
        if (o.events.empty()) o.events.push_back(record::parse_event("cpu-clock"));
        const bool have = std::any_of(o.events.begin(), o.events.end(), [](const record::EventSpec& e) {
          return e.name == "sched:sched_switch";
        });
        if (!have) o.events.push_back(record::parse_event("sched:sched_switch"));
        o.switch_events = true;
      }
    }
    if (c.compression_level >= 0) {
      if (c.compression_level < 1 || c.compression_level > 22) {
        throw std::invalid_argument(fmt::format("compression level {} out of 1..22", c.compression_level));
      }
      o.compression_level = c.compression_level;
    } else if (c.compress) {
      o.compression_level = 1;
    }
    if (!c.mmap_pages.empty()) o.mmap_pages = record::parse_mmap_pages(c.mmap_pages);
    o.inherit = !c.no_inherit;
    if (!c.clockid.empty()) o.clockid = record::parse_clockid(c.clockid);
    if (c.threads_given) {
      std::string spec = c.threads.empty() ? "cpu" : c.threads.front();
      if (spec.empty() || spec == "cpu") o.threads = record::CpuGrouping::kCpu;
      else if (spec == "core") o.threads = record::CpuGrouping::kCore;
      else if (spec == "package") o.threads = record::CpuGrouping::kPackage;
      else if (spec == "numa") o.threads = record::CpuGrouping::kNuma;
      else throw std::invalid_argument(fmt::format("--threads={}: expected cpu, core, package or numa", spec));
    }
    o.buildid_mmap = c.buildid_mmap;
    o.collect_build_ids = !c.no_buildid;
    o.quiet = c.quiet;
    o.synthesis_threads = c.synth_threads;
    o.command = c.command;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tperf record: {}\n", e.what());
    return 2;
  }
  o.cmdline = own_cmdline();
  return record::run_record(o, stderr).exit_code;
}

}  // namespace

void add_record_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<RecordCliOptions>();
  auto* cmd = app.add_subcommand("record", "Record samples into perf.data (like perf record)");
  cmd->add_option("-e,--event", opt->events, "event(s): cpu-clock, task-clock, page-faults, context-switches, "
                                             "sys:tracepoint, ... with :u :k :p modifiers")
      ->take_all();
  cmd->add_option("-p,--pid", opt->pids, "record these processes (comma list)");
  cmd->add_option("-t,--tid", opt->tids, "record these threads (comma list)");
  cmd->add_flag("-a,--all-cpus", opt->all_cpus, "system-wide on every CPU");
  cmd->add_option("-C,--cpu", opt->cpus, "system-wide on these CPUs (0-3,8)");
  cmd->add_option("-o,--output", opt->output, "output file (default perf.data; - for a pipe)");
  cmd->add_option("-F,--freq", opt->freq, "samples per second (default 4000; max)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const bool number = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
            return number || v == "max" ? std::string() : fmt::format("expects a number or 'max', not '{}'", v);
          },
          "NUMBER|max"));
  cmd->add_option("-c,--count", opt->count, "sample every N events");
  cmd->add_flag("-g", opt->g, "frame-pointer call graphs");
  cmd->add_option("--call-graph", opt->call_graph, "fp, fp,defer (user stacks unwound at return to user space, Linux 6.19+) or dwarf[,stack size]");
  cmd->add_flag("--switch-events", opt->switch_events, "record context switches");
  cmd->add_flag("--off-cpu", opt->off_cpu,
                "also record the time threads spend switched out, with -g the stacks they blocked in "
                "(the BPF way when it loads, else -e sched:sched_switch and --switch-events; read with tperf report --off-cpu)");
  cmd->add_option("--off-cpu-way", opt->off_cpu_way,
                  "bpf (in-kernel totals as perf's offcpu-time event; needs root and BTF) or tracepoint; default: "
                  "bpf when it loads, else tracepoint");
  cmd->add_flag("-z", opt->compress, "zstd-compress the data (level 1)");
  cmd->add_option("--compression-level", opt->compression_level, "zstd level 1..22");
  cmd->add_option("-m,--mmap-pages", opt->mmap_pages, "ring-buffer pages per CPU (power of two) or size (512K); default 2M for root (at most 256M over all CPUs), else 512K as perf");
  cmd->add_flag("-i,--no-inherit", opt->no_inherit, "do not follow child tasks");
  cmd->add_option("-k,--clockid", opt->clockid, "clock for timestamps (monotonic, monotonic_raw, realtime, ...)");
  cmd->add_option("--threads", opt->threads, "reader threads per cpu|core|package|numa; writes a directory")
      ->expected(0, 1);
  cmd->add_flag("--buildid-mmap", opt->buildid_mmap, "build ids in MMAP2 records");
  cmd->add_flag("-B,--no-buildid", opt->no_buildid, "do not collect build ids at the end");
  cmd->add_flag("-q,--quiet", opt->quiet, "no summary lines");
  cmd->add_option("--num-thread-synthesize", opt->synth_threads, "threads reading /proc (default: CPUs)");
  cmd->add_option("command", opt->command, "the command to run and record (after --)");
  // The first word that is not an option starts the workload: it and every word after it, options
  // included, are the workload's. What CLI11 leaves over is what came before it that no option
  // of record's took: a "--" (fine) or an unknown option (refused, as perf does).
  cmd->prefix_command();
  cmd->positionals_at_end();
  cmd->callback([opt, cmd, &status] {
    opt->threads_given = cmd->count("--threads") > 0;
    for (const auto& extra : cmd->remaining()) {
      if (extra == "--") continue;
      if (!extra.empty() && extra[0] == '-') {
        fmt::print(stderr, "tperf record: unknown option '{}'\n", extra);
        status = kUsageExitStatus;
        return;
      }
      opt->command.push_back(extra);
    }
    status = run_record_command(*opt);
  });
}

}  // namespace tperf::cli
