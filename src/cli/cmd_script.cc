// `tperf script`: the samples (and with --show-*-events the side-band records) of a perf.data
// file as text, in perf's time order, byte for byte as `perf script` (6.1) prints them, symbols
// included. The shared replay driver (analysis/sample_path.h) feeds ScriptWriter, a formatter.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "util/text.h"
#include "analysis/sample_path.h"
#include "output/header_format.h"
#include "output/script_format.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/symbolizer.h"
#include "util/spool.h"

namespace tperf::cli {

namespace {

struct ScriptCliOptions {
  InputOption input;
  JobsOption jobs;
  std::string path;  // resolved
  bool mem_stats = false;
  std::vector<std::string> fields;
  bool nanosecs = false;
  bool reltime = false;    // --reltime
  bool deltatime = false;  // --deltatime
  bool hide_callchain = false;
  bool show_task_events = false;
  bool show_mmap_events = false;
  bool show_switch_events = false;
  bool show_lost_events = false;
  bool show_namespace_events = false;
  bool show_cgroup_events = false;
  bool show_bpf_events = false;
  bool show_round_events = false;
  bool merge_callchains = true;  // join deferred user callchains to their samples (perf 6.19's default)
  std::string time;
  std::string cpu;
  std::string comms;
  std::string pids;
  std::string tids;
  std::string dsos;
  std::string symbols_list;  // -S
  uint64_t addr_range = 0;
  std::string stop_bt;
  bool all_cpus = false;  // -a: perf's record-and-script option; reading, it changes nothing
  bool show_kernel_path = false;  // perf names the kernel's DSO by its path: [kernel.kallsyms] from kallsyms
  unsigned max_blocks = 0;        // perf's brstackinsn blocks, a field tperf has not
  bool header = false;       // --header
  bool header_only = false;  // --header-only
  bool show_info = false;    // -I
  unsigned max_stack = 127;
  bool force = false;
  SymbolCliOptions symbols;
  InlineCliOptions inline_frames;
  bool inline_callchains = false;
};

int fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "tperf script: {}\n", message);
  return 2;
}

// What perf 6.1's script prints of the file's header (each rule checked against it on files and
// pipe-mode files): --header, the "# ========" block with a file's features, then the samples;
// --header-only, the block alone; -I adds the features perf prints only with -I. A pipe's
// features are records of the stream, which perf prints as it meets them (before the first
// sample: perf record writes them first), as report prints them: after the block with --header,
// alone with -I alone (which adds nothing to a file's output), not with --header-only (perf stops
// before reading them). `input`: the path as given. Returns the exit status when the run ends here.
// `fields`: the output fields asked for, which decide the names perf gives a pipe's events early.
std::optional<int> print_script_header(const ScriptCliOptions& cli, const std::string& input,
                                       const output::ScriptFields& fields) {
  if (!cli.header && !cli.header_only && !cli.show_info) return std::nullopt;
  auto reader = perfdata::Reader::open(cli.path);
  output::HeaderFormatOptions format;
  format.full = cli.show_info;
  format.no_extras = true;
  format.file_records = false;
  format.block = cli.header || cli.header_only;
  format.pipe_features = reader->is_pipe() && !cli.header_only;
  format.on_pipe_attrs = [&fields](const std::vector<perfdata::EventAttr>& attrs) {
    return output::script_names_on_arrival(fields, attrs);
  };
  if (!format.block && !format.pipe_features) return std::nullopt;
  if (print_file_header("script", *reader, input, format) != 0) return 2;
  if (cli.header_only) return 0;
  return std::nullopt;
}

int run_script(const ScriptCliOptions& given) {
  ScriptCliOptions cli = given;
  // A stream whose header is printed before its samples is read twice: from a copy.
  std::optional<util::SpooledInput> spool;
  if ((cli.header || cli.show_info) && !cli.header_only && !util::rereadable_input(cli.path)) {
    spool.emplace(cli.path);
    cli.path = spool->path();
  }
  // -F first: perf refuses a bad field list before it opens the file.
  output::ScriptOptions opt;
  std::vector<std::string> warnings;
  for (const auto& f : cli.fields) {
    std::string err = opt.fields.parse(f, &warnings);
    if (!err.empty()) return fail(err);
  }
  for (const auto& w : warnings) fmt::print(stderr, "tperf script: warning: {}\n", w);
  if (std::optional<int> status = print_script_header(cli, given.path, opt.fields)) return *status;
  opt.nanosecs = cli.nanosecs;
  if (cli.reltime && cli.deltatime) {
    return fail("--reltime and --deltatime cannot go together (perf refuses them too): give one of them");
  }
  if (cli.reltime) opt.time_base = output::ScriptOptions::TimeBase::kRelative;
  if (cli.deltatime) opt.time_base = output::ScriptOptions::TimeBase::kDelta;
  opt.hide_callchain = cli.hide_callchain;
  opt.show_task_events = cli.show_task_events;
  opt.show_mmap_events = cli.show_mmap_events;
  opt.show_switch_events = cli.show_switch_events;
  opt.show_lost_events = cli.show_lost_events;
  opt.show_namespace_events = cli.show_namespace_events;
  opt.show_cgroup_events = cli.show_cgroup_events;
  opt.show_bpf_events = cli.show_bpf_events;
  opt.show_round_events = cli.show_round_events;
  opt.max_stack = cli.max_stack;
  opt.jobs = cli.jobs.jobs;
  opt.time = cli.time;
  if (!cli.cpu.empty()) {
    opt.cpu_filter = true;
    if (auto err = output::parse_cpu_list(cli.cpu, &opt.cpus); !err.empty()) return fail(err);
  }
  opt.comms = util::split_commas(cli.comms);
  opt.dsos = util::split_commas(cli.dsos);
  opt.symbols = util::split_commas(cli.symbols_list);
  opt.addr_range = cli.addr_range;
  opt.stop_bt = util::split_commas(cli.stop_bt);
  if (!util::parse_number_list(cli.pids, false, &opt.pids)) return fail(fmt::format("--pid {}: not a list of numbers", cli.pids));
  if (!util::parse_number_list(cli.tids, false, &opt.tids)) return fail(fmt::format("--tid {}: not a list of numbers", cli.tids));

  auto reader = perfdata::Reader::open(cli.path);
  // perf 6.1 keeps the maps of a process across exec; frames that point into them resolve.
  session::Machine::Options machine_options;
  machine_options.keep_maps_on_exec = true;
  const std::unique_ptr<session::Machine> machine_owner = analysis::make_replay_machine(*reader, machine_options);
  session::Machine& machine = *machine_owner;
  symbols::SymbolizerOptions sym_options;
  cli.symbols.apply_to(&sym_options);
  symbols::Symbolizer symbolizer(machine, sym_options);
  opt.symbolizer = &symbolizer;
  // --inline asks for what perf 6.1 does by default: the frames unwound from stack copies expand
  // into their inline chains; the recorded callchain's frames do not (its `script --inline` prints
  // them as they are).
  opt.inline_callchains = cli.inline_callchains;
  opt.unwound_inline_frames = cli.inline_frames.expand();
  symbols::DwarfUnwindOptions unwind_options;
  unwind_options.symfs = sym_options.symfs;
  unwind_options.buildid_dir = sym_options.buildid_dir;
  symbols::DwarfUnwinder unwinder(machine, unwind_options);
  opt.unwinder = &unwinder;
  output::ScriptWriter writer(*reader, machine, std::move(opt), stdout);
  if (auto err = writer.start(); !err.empty()) return fail(err);

  // Symbol tables load ahead on a worker, when some field shows symbols.
  std::optional<analysis::SymbolPreloader> preloader;
  if (writer.needs_symbols()) preloader.emplace(machine, symbolizer);
  analysis::ReplayHandlers handlers;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) { writer.sample(rec); };
  handlers.on_other = [&](const perfdata::Record& rec, uint64_t time) { writer.before_machine(rec, time); };
  handlers.on_applied = [&](const perfdata::Record& rec, uint64_t time) { writer.after_machine(rec, time); };
  handlers.stop = [&] { return !writer.fatal().empty(); };
  handlers.merge_deferred_callchains = cli.merge_callchains;
  // As perf: the rounds are shown where they are in the file, so everything comes in file order.
  handlers.ordered = !cli.show_round_events;
  handlers.jobs = cli.jobs.jobs;
  handlers.unwinder = &unwinder;
  handlers.replica = [&machine_options, &reader] { return analysis::make_replay_machine(*reader, machine_options); };
  const std::vector<std::string> problems =
      analysis::replay(*reader, machine, symbolizer, preloader ? &*preloader : nullptr, handlers).problems;
  writer.finish();
  // A DSO whose symbols were loading ahead when the file ended says what it lacks too.
  if (preloader) preloader->wait();
  for (const auto& w : symbolizer.take_warnings()) fmt::print(stderr, "tperf script: warning: {}\n", w);
  if (!writer.fatal().empty()) return fail(writer.fatal());
  if (cli.mem_stats) print_mem_stats("script", machine);
  int status = report_reader_problems("script", *reader);
  for (const auto& p : problems) {
    fmt::print(stderr, "tperf script: {}: {}\n", reader->path(), p);
    status = 2;
  }
  return status;
}

}  // namespace

void add_script_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ScriptCliOptions>();
  auto* cmd = app.add_subcommand("script", "Print the samples as text, like perf script");
  opt->input.add_to(*cmd);
  cmd->add_option("-F,--fields", opt->fields,
                  "output fields, perf's syntax: [type:]field,... or +field/-field (comm,tid,pid,time,cpu,event,ip,"
                  "sym,symoff,dso,addr,period,misc,...)")
      ->allow_extra_args(false);
  cmd->add_flag("--ns", opt->nanosecs, "show times with 9 decimals");
  cmd->add_flag("--reltime", opt->reltime, "show times from the first line's (the lines printed, side-band ones included)");
  cmd->add_flag("--deltatime", opt->deltatime, "show each line's time as the time since the line printed before");
  cmd->add_flag("-G,--hide-call-graph", opt->hide_callchain, "do not print callchains");
  cmd->add_flag("--show-task-events", opt->show_task_events, "print COMM/FORK/EXIT records");
  cmd->add_flag("--show-mmap-events", opt->show_mmap_events, "print MMAP/MMAP2 records");
  cmd->add_flag("--show-switch-events", opt->show_switch_events, "print context switch records");
  cmd->add_flag("--show-lost-events", opt->show_lost_events, "print LOST records");
  cmd->add_flag("--show-namespace-events", opt->show_namespace_events, "print NAMESPACES records");
  cmd->add_flag("--show-cgroup-events", opt->show_cgroup_events, "print CGROUP records");
  cmd->add_flag("--show-bpf-events", opt->show_bpf_events, "print KSYMBOL and BPF_EVENT records");
  cmd->add_flag("--show-round-events", opt->show_round_events,
                "print FINISHED_ROUND records; as in perf, every record then comes in file order, not time order");
  cmd->add_flag("--merge-callchains,!--no-merge-callchains", opt->merge_callchains,
                "join deferred user callchains (kernel 6.19+) to their samples (default); --no-merge-callchains "
                "prints the raw samples (kernel part, cookie) and CALLCHAIN_DEFERRED records");
  cmd->add_option(
      "--time", opt->time,
      "time span(s) of interest: start,stop (seconds) [start,stop ...], or percentages: 10%/2, 0%-10%,30%-40%");
  cmd->add_option("-C,--cpu", opt->cpu, "only samples of these cpus (0-3,5)");
  cmd->add_option("-c,--comms,--comm", opt->comms, "only samples of these comms (comma separated)");
  cmd->add_option("--pid", opt->pids, "only samples of these pids (comma separated)");
  cmd->add_option("--tid", opt->tids, "only samples of these tids (comma separated)");
  cmd->add_option("--dsos", opt->dsos, "only samples whose address is in these DSOs (short or long names, comma separated)");
  cmd->add_option("-S,--symbols", opt->symbols_list,
                  "only samples whose address is in these symbols (names, 0xSTART, or hex addresses, comma separated)");
  cmd->add_option("--addr-range", opt->addr_range, "with -S: a hex address also takes the samples this many bytes above it");
  cmd->add_option("--stop-bt", opt->stop_bt, "cut each callchain after the frame of one of these symbols (comma separated)");
  cmd->add_flag("--header", opt->header, "print the file's header (as report --header-only does) before the samples");
  cmd->add_flag("--header-only", opt->header_only, "print the file's header only");
  cmd->add_flag("-I,--show-info", opt->show_info, "with --header/--header-only: the header's every feature, as -I does for report (a pipe's features, also alone)");
  cmd->add_flag("--show-kernel-path", opt->show_kernel_path,
                "accepted for perf compatibility: the kernel's symbols come from kallsyms, named [kernel.kallsyms] either way");
  cmd->add_option("--max-blocks", opt->max_blocks, "accepted for perf compatibility: it bounds the brstackinsn field only");
  cmd->add_flag("-a,--all-cpus", opt->all_cpus, "accepted for perf compatibility (all CPUs' samples are read anyway)");
  cmd->add_option("--max-stack", opt->max_stack, "callchain frames shown at most (default 127)");
  cmd->add_flag("-f,--force", opt->force, "accepted for perf compatibility");
  cmd->add_flag("--mem-stats", opt->mem_stats, "print what the machine model holds (threads, maps, DSOs) at the end");
  opt->symbols.add_to(*cmd);
  opt->symbols.add_source_path_to(*cmd);
  opt->jobs.add_to(*cmd);
  opt->inline_frames.add_to(*cmd);
  cmd->add_flag("--inline-callchains", opt->inline_callchains,
                "also show the functions inlined at the frames of recorded callchains (frame pointers, the kernel's), "
                "which perf 6.1 prints as they are");
  cmd->callback([opt, cmd, &status] {
    opt->path = opt->input.resolve(*cmd);
    status = run_guarded("script", opt->path, [&] { return run_script(*opt); });
  });
}

}  // namespace tperf::cli
