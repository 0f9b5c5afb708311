// `tperf report`: perf report --stdio for a perf.data file: one histogram per event by the sort
// keys, with Children/Self when the samples have callchains. --tasks / --mmaps list the task
// tree (every thread seen, exited ones included) like perf 6.1. The options are parsed here;
// the samples go through analysis::ReportBuilder and the sections print with output/.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <regex>

#include "analysis/callchain_spec.h"
#include "analysis/hist.h"
#include "analysis/mem_sort.h"
#include "analysis/off_cpu.h"
#include "analysis/record_census.h"
#include "analysis/report_builder.h"
#include "analysis/sample_filter.h"
#include "analysis/sample_path.h"
#include "analysis/time_filter.h"
#include "cli/commands.h"
#include "cli/report_branch.h"
#include "cli/report_mem.h"
#include "output/header_format.h"
#include "output/report_format.h"
#include "output/report_stats.h"
#include "output/script_format.h"
#include "output/task_list.h"
#include "output/thread_values.h"
#include "output/trace_format.h"
#include "output/unwind_summary.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/symbolizer.h"
#include "util/progress.h"
#include "util/spool.h"
#include "util/text.h"

namespace tperf::cli {

namespace {

struct ReportCliOptions {
  InputOption input;
  JobsOption jobs;
  std::string path;  // resolved
  bool tasks = false;
  bool mmaps = false;
  bool mem_stats = false;
  bool force = false;
  bool stdio = false;
  std::string sort;    // -s ("" = perf's default comm,dso,sym, or -F's keys)
  std::string fields;  // -F
  InlineCliOptions inline_frames;
  bool children = false;
  bool no_children = false;
  std::string callchain;  // -g
  bool show_samples = false;
  bool show_period = false;
  bool show_cpu_utilization = false;  // --show-cpu-utilization: sys and usr columns
  double percent_limit = 0;
  unsigned max_stack = 127;
  bool inverted = false;
  SymbolCliOptions symbols;
  std::string comms, dsos, pids, tids, cpus;
  bool quiet = false;              // -q: no '#' lines, no warnings (as perf)
  bool no_unwind_summary = false;  // leave out the unwinding quality block
  bool group = false;              // --group: event groups side by side (perf's default for them)
  bool no_group = false;
  bool disable_order = false;
  bool hide_unresolved = false;  // -U
  // Options perf 6.1 takes for its annotate browser, its TUI or its raw dump (-D), none of which
  // changes a --stdio report: accepted and checked as perf checks them.
  std::string percent_type;  // --percent-type
  std::string prefix, prefix_strip, objdump, disassembler_style, pretty;
  bool asm_raw = false, source = false, ignore_vmlinux = false, nanosecs = false, show_on_off_events = false;
  unsigned samples = 0;
  std::string time;  // --time
  std::string symbol_names;  // -S
  std::string percentage = "absolute";
  std::string parent_pattern;  // -p: adds the parent key
  bool exclude_other = false;  // -x
  bool off_cpu = false;        // --off-cpu: weights are the time threads spent switched out
  bool wall_clock = false;     // --wall-clock: on-CPU time samples and off-CPU time in one section
  std::string state;           // --state runnable|sleeping (with --off-cpu)
  bool mem_mode = false;       // --mem-mode: memory samples by perf's memory sort keys
  bool threads = false;        // -T: per-thread counter values (READ records) after the report
  bool branch_stack = false;     // -b: branch mode (see cli/report_branch.h)
  bool no_branch_stack = false;  // --no-branch-stack: the plain report of a branch-stack file
  bool branch_history = false;   // --branch-history: branch stacks as the samples' chains
  bool header = false;           // --header: the file's header first, in place of perf's hint line
  bool header_only = false;      // --header-only: the header alone
  bool show_info = false;        // -I: the header's features perf shows only with -I
  bool stats = false;            // --stats: record counts by type and per event, no report
  bool hint_replaced = false;    // print_report_header() printed what takes the hint line's place
  bool hierarchy = false;        // --hierarchy: the sort keys as levels of a tree
  std::string field_sep;         // -t: the columns' separator
};

// perf's default pattern for the parent key.
constexpr const char* kDefaultParentPattern = "^sys_|^do_page_fault";

int run_tasks(const ReportCliOptions& cli) {
  auto reader = perfdata::Reader::open(cli.path);
  session::Machine::Options mo;
  mo.keep_exited = true;        // a task listing shows every task
  mo.keep_maps_on_exec = true;  // perf 6.1 keeps the old maps under the new ones
  session::Machine machine(mo);
  analysis::register_idle_task(machine);
  // Like perf's task mode: only the task records (and with --mmaps the map records) build the
  // model; samples do not create threads.
  symbols::Symbolizer symbolizer(machine, {});
  analysis::ReplayHandlers handlers;
  handlers.applies = [&](const perfdata::Record& rec) {
    switch (rec.type) {
      case perfdata::kRecordComm:
      case perfdata::kRecordFork:
      case perfdata::kRecordExit:
        return true;
      case perfdata::kRecordMmap:
      case perfdata::kRecordMmap2:
        return cli.mmaps;
      default:
        return false;
    }
  };
  handlers.jobs = cli.jobs.jobs;
  const std::vector<std::string> problems = analysis::replay(*reader, machine, symbolizer, nullptr, handlers).problems;
  output::print_task_list(stdout, machine, cli.mmaps);
  if (cli.mem_stats) print_mem_stats("report", machine);
  int status = report_reader_problems("report", *reader);
  for (const auto& p : problems) {
    fmt::print(stderr, "tperf report: {}: {}\n", reader->path(), p);
    status = 2;
  }
  return status;
}

int fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "tperf report: {}\n", message);
  return 2;
}

// perf 6.1's default --sort: "trace" when every event of the file is a tracepoint, else
// "comm,dso,sym". perf decides before it reads the events of a pipe, which are then unknown.
std::string default_sort_order(const std::string& path) {
  // A stream is read once, by the report (and it holds pipe-mode data).
  if (!util::rereadable_input(path)) return "comm,dso,sym";
  try {
    auto reader = perfdata::Reader::open(path);
    const auto& attrs = reader->attrs();
    if (!reader->is_pipe() && !attrs.empty() && std::all_of(attrs.begin(), attrs.end(), [](const auto& ea) {
          return ea.attr.type == perfdata::kTypeTracepoint;
        })) {
      return "trace";
    }
  } catch (const std::exception&) {
    // The report itself opens the file again and says what is wrong with it.
  }
  return "comm,dso,sym";
}

int run_hist_report(const ReportCliOptions& cli) {
  // -F: its fields are the columns (then the --sort keys it lacks); its keys join the sort keys,
  // which without --sort are its own.
  std::vector<analysis::ReportField> fields;
  if (!cli.fields.empty()) {
    if (auto err = analysis::parse_report_fields(cli.fields, &fields); !err.empty()) return fail(err);
  }
  std::vector<analysis::SortKey> keys;
  // --branch-history sorts by srcline, symbol and dso unless told otherwise.
  const std::string sort_text = cli.sort.empty() && cli.branch_history ? "srcline,symbol,dso" : cli.sort;
  if (!sort_text.empty() || fields.empty()) {
    if (auto err = analysis::parse_sort_keys(sort_text.empty() ? default_sort_order(cli.path) : sort_text, &keys);
        !err.empty()) {
      return fail(err);
    }
  }
  // perf adds its IPC column to a --sort text that says "symbol" (ipc_lbr in branch mode, which
  // has its own report; without branch stacks the column is empty, and so it is with
  // --branch-history).
  if (sort_text.find("symbol") != std::string::npos) keys.push_back(analysis::SortKey::kIpcNull);
  // -p REGEX: the parent key joins the sort keys (perf adds it at the end).
  if (!cli.parent_pattern.empty() && std::find(keys.begin(), keys.end(), analysis::SortKey::kParent) == keys.end()) {
    keys.push_back(analysis::SortKey::kParent);
  }
  const std::vector<analysis::SortKey> sort_keys = keys;  // --sort's own and -p's
  for (const analysis::ReportField& f : fields) {
    if (f.kind == analysis::ReportField::Kind::kKey && std::find(keys.begin(), keys.end(), f.key) == keys.end()) {
      keys.push_back(f.key);
    }
  }
  const bool use_parent = std::find(keys.begin(), keys.end(), analysis::SortKey::kParent) != keys.end();
  // perf matches the pattern with POSIX extended regexes, anywhere in the symbol's name.
  std::optional<std::regex> parent_regex;
  const std::string parent_pattern = cli.parent_pattern.empty() ? kDefaultParentPattern : cli.parent_pattern;
  try {
    parent_regex.emplace(parent_pattern, std::regex::extended | std::regex::nosubs | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return fail(fmt::format("-p/--parent '{}': not a valid regular expression ({})", parent_pattern, e.what()));
  }
  // -g print_type,threshold[,print_limit],order,sort_key[,branch],value, as perf reads it.
  analysis::CallchainSpec chain_spec;
  if (auto e = analysis::parse_callchain_spec(cli.callchain, &chain_spec); !e.empty()) {
    return fail(fmt::format("-g {}: {} (perf's syntax: print_type,threshold[,print_limit],order,sort_key[,branch],value)",
                            cli.callchain, e));
  }
  double graph_threshold = chain_spec.threshold.value_or(0.5);
  using ChainMode = analysis::CallchainSpec::Mode;
  const bool graph = chain_spec.mode == ChainMode::kGraph || chain_spec.mode == ChainMode::kFractal;
  const bool folded = chain_spec.mode == ChainMode::kFolded;
  const bool flat = chain_spec.mode == ChainMode::kFlat;
  const bool fractal = chain_spec.mode == ChainMode::kFractal;
  const bool chains_asked = !cli.callchain.empty() && chain_spec.mode != ChainMode::kNone;

  // Filters: samples outside them go into the histogram as hidden entries (analysis::HistEntry::
  // filtered) and count in the totals the percentages are taken of, unless --percentage relative.
  const std::vector<std::string> comm_filter = util::split_commas(cli.comms);
  const std::vector<std::string> dso_filter = util::split_commas(cli.dsos);
  const std::vector<std::string> symbol_filter = util::split_commas(cli.symbol_names);
  if (cli.percentage != "absolute" && cli.percentage != "relative") {
    return fail(fmt::format("--percentage {}: absolute or relative expected", cli.percentage));
  }
  std::vector<int32_t> pid_filter, tid_filter, cpu_filter;
  if (!util::parse_number_list(cli.pids, false, &pid_filter)) return fail(fmt::format("--pid {}: not a list of numbers", cli.pids));
  if (!util::parse_number_list(cli.tids, false, &tid_filter)) return fail(fmt::format("--tid {}: not a list of numbers", cli.tids));
  if (!util::parse_number_list(cli.cpus, true, &cpu_filter)) return fail(fmt::format("--cpu {}: not a cpu list", cli.cpus));

  // perf's --percent-limit also sets the callchain threshold.
  if (cli.percent_limit > 0) graph_threshold = cli.percent_limit;

  // --off-cpu reads the input twice: a stream (standard input, a FIFO) is kept in a temporary file.
  std::optional<util::SpooledInput> spool;
  if (cli.off_cpu || cli.wall_clock) spool.emplace(cli.path);
  const std::string& input = spool ? spool->path() : cli.path;
  auto reader = perfdata::Reader::open(input);
  // --time drops samples before anything counts them: they are in neither the entries nor the
  // totals (unlike the filters above).
  std::vector<analysis::TimeRange> time_ranges;
  if (!cli.time.empty()) {
    if (auto e = analysis::parse_time_ranges(cli.time, &time_ranges, analysis::sample_time_bounds(*reader)); !e.empty()) {
      return fail(fmt::format("--time {}: {}", cli.time, e));
    }
  }
  // --off-cpu: a first pass computes the switched-out intervals; this one weighs each switch-out
  // sample with its interval (a sample's period stands for its time), so every column, key and
  // graph of the report works on time unchanged.
  std::optional<analysis::OffCpuTracker> off_cpu;
  std::optional<analysis::OffCpuState> wanted_state;
  std::vector<std::string> problems;
  if (cli.off_cpu || cli.wall_clock) {
    if (cli.state == "runnable") {
      wanted_state = analysis::OffCpuState::kRunnable;
    } else if (cli.state == "sleeping") {
      wanted_state = analysis::OffCpuState::kSleeping;
    } else if (!cli.state.empty()) {
      return fail(fmt::format("--state {}: expected runnable or sleeping", cli.state));
    }
    auto first = perfdata::Reader::open(input);
    off_cpu.emplace(analysis::track_off_cpu(*first, &problems));
    const analysis::OffCpuSource src = off_cpu->source();
    if (src == analysis::OffCpuSource::kNone || src == analysis::OffCpuSource::kSwitchRecords) {
      return fail(analysis::describe_off_cpu(*off_cpu));
    }
  } else if (!cli.state.empty()) {
    return fail("--state goes with --off-cpu");
  }
  // --wall-clock: the off-CPU section (the first switch or offcpu-time event) also takes the
  // samples of the events whose period is already time (cpu-clock, task-clock: nanoseconds), so
  // each stack weighs the time its threads spent in it, running or not.
  int wall_section = -1;
  bool wall_skipped = false;  // some events' periods are no time: left out
  auto time_event = [](const perfdata::PerfEventAttr& a) {
    return a.type == perfdata::kTypeSoftware && (a.config == 0 || a.config == 1);  // cpu-clock, task-clock
  };
  if (cli.wall_clock) {
    for (size_t i = 0; i < reader->attrs().size() && wall_section < 0; ++i) {
      if (off_cpu->is_switch_event(static_cast<int>(i)) || off_cpu->is_offcpu_time_event(static_cast<int>(i))) {
        wall_section = static_cast<int>(i);
      }
    }
    if (wall_section < 0) return fail("--wall-clock needs off-CPU data: sched:sched_switch samples or an offcpu-time event");
    for (size_t i = 0; i < reader->attrs().size(); ++i) {
      const int ii = static_cast<int>(i);
      if (!off_cpu->is_switch_event(ii) && !off_cpu->is_offcpu_time_event(ii) && !time_event(reader->attrs()[i].attr)) {
        wall_skipped = true;
      }
    }
  }
  const std::unique_ptr<session::Machine> machine_owner = analysis::make_report_machine(*reader);
  session::Machine& machine = *machine_owner;
  symbols::SymbolizerOptions so;
  cli.symbols.apply_to(&so);
  symbols::Symbolizer symbolizer(machine, so);
  symbols::DwarfUnwinder unwinder(machine, {so.symfs, so.buildid_dir});
  analysis::SymbolPreloader preloader(machine, symbolizer);
  const bool summary = !cli.quiet && !cli.no_unwind_summary;
  // --branch-history: chains made of the branch stacks, or of the callchains (then only keyed by
  // address); one of the two is needed. Like perf, the branch stacks make chains (with their
  // counts) when the header says the file has them, which a pipe's never does.
  bool branch_counts = false;
  if (cli.branch_history && !reader->is_pipe()) {
    bool any_branches = false, any_chains = false;
    for (const perfdata::EventAttr& a : reader->attrs()) {
      const bool b = (a.attr.sample_type & perfdata::kSampleBranchStack) != 0;
      const bool c = (a.attr.sample_type & perfdata::kSampleCallchain) != 0;
      any_branches |= b;
      any_chains |= c;
    }
    branch_counts = any_branches && reader->features().has(perfdata::kFeatBranchStack);
    if (!branch_counts && !any_chains) {
      return fail(fmt::format("{}: --branch-history: the samples have neither branch stacks nor callchains (record "
                              "with -b or -g)",
                              cli.path));
    }
  }
  analysis::ReportBuildOptions bo;
  bo.keys = keys;
  bo.comm_sort_key = std::find(sort_keys.begin(), sort_keys.end(), analysis::SortKey::kComm) != sort_keys.end();
  bo.graph = graph;
  bo.folded = folded;
  bo.flat = flat;
  bo.chain_order = chain_spec.order;
  bo.address_frames = chain_spec.key == analysis::CallchainSpec::Key::kAddress;
  bo.srcline_frames = chain_spec.key == analysis::CallchainSpec::Key::kSrcline;
  bo.count_chain_samples = chain_spec.value == analysis::CallchainSpec::Value::kCount;
  bo.inverted = cli.inverted;
  bo.branch_history = cli.branch_history;
  bo.branch_chains = branch_counts;
  bo.max_stack = cli.max_stack;
  bo.children = cli.children;
  bo.no_children = cli.no_children;
  bo.hierarchy = cli.hierarchy;
  const bool cpu_modes = cli.show_cpu_utilization || std::any_of(fields.begin(), fields.end(), [](const analysis::ReportField& f) {
                          return f.cpu_mode();
                        });
  bo.cpu_modes = cpu_modes;
  bo.summary = summary;
  bo.expand_inline = cli.inline_frames.expand();
  bo.parent_regex = &*parent_regex;
  bo.exclude_other = cli.exclude_other;
  bo.no_group = cli.no_group;
  bo.hide_unresolved = cli.hide_unresolved;
  bo.comms = comm_filter;
  bo.dsos = dso_filter;
  bo.symbols = symbol_filter;
  bo.pids = pid_filter;
  bo.tids = tid_filter;
  bo.cpus = cpu_filter;
  bo.time_ranges = time_ranges;
  bo.off_cpu = off_cpu ? &*off_cpu : nullptr;
  bo.wanted_state = wanted_state;
  bo.wall_section = wall_section;
  bo.jobs = cli.jobs.jobs;
  // -s trace: a tracepoint sample's text as script's trace field prints it (perf leaves the cpu at 0).
  std::optional<output::ScriptTraceField> trace_field;
  bo.trace_text = [&](std::string& out, const perfdata::EventAttr& ea, const perfdata::Sample& s,
                      const session::Thread& t) {
    if (!trace_field) trace_field.emplace(*reader, machine, &symbolizer);
    trace_field->append(out, ea.attr.config, 0, s.raw, t);
  };
  output::ThreadValues thread_values;  // -T: the READ records' values per thread
  if (cli.threads) bo.on_read = [&](const perfdata::Record& rec) { thread_values.add_record(*reader, rec); };
  analysis::ReportBuilder builder(*reader, machine, symbolizer, unwinder, preloader, std::move(bo));

  if (!cpu_filter.empty() && !reader->attrs().empty() &&
      std::none_of(reader->attrs().begin(), reader->attrs().end(),
                   [](const perfdata::EventAttr& a) { return (a.attr.sample_type & perfdata::kSampleCpu) != 0; })) {
    return fail(fmt::format("{}: --cpu {}: the samples carry no CPU (record with -a, -C or --sample-cpu)", cli.path,
                            cli.cpus));
  }
  if (builder.decided() && !(cli.branch_history && branch_counts)) {
    // Like perf: asking for callchains of a file without them is an error, not an empty graph.
    if (!builder.any_callchain() && (folded || flat || (graph && chains_asked))) {
      return fail(fmt::format("{}: -g {}: the file has no callchains (record with -g or --call-graph)", cli.path,
                              cli.callchain));
    }
    // The parent is found on the callchain.
    if (!builder.any_callchain() && use_parent) {
      return fail(fmt::format("{}: --sort parent (or -p) needs callchains, and the file has none (record with -g)",
                              cli.path));
    }
  }
  {
    // Like perf's "Processing events..." bar: only on a terminal, only for a large file.
    const bool sized = !reader->is_pipe() && !reader->is_directory() && !cli.quiet;
    util::ProgressBar progress("tperf report: reading", sized ? reader->data_size() : 0);
    builder.run([&](uint64_t bytes) { progress.update(bytes); });
  }
  problems.insert(problems.end(), builder.problems().begin(), builder.problems().end());
  const bool children = builder.children();

  output::ReportColumns columns;
  columns.children = children;
  columns.callee_order = children && !cli.inverted && chain_spec.order == analysis::CallchainSpec::Order::kCallee;
  columns.show_samples = cli.show_samples;
  columns.show_period = cli.show_period;
  columns.show_cpu_utilization = cli.show_cpu_utilization;
  columns.percent_limit = cli.percent_limit;
  columns.graph = graph;
  columns.folded = folded;
  columns.flat = flat;
  columns.fractal = fractal;
  columns.branch_counts = branch_counts;
  columns.graph_min_percent = graph_threshold;
  columns.graph_value = chain_spec.value;
  columns.print_limit = chain_spec.print_limit;
  columns.time_slices = cli.time;
  columns.hierarchy = cli.hierarchy;
  columns.field_sep = cli.field_sep;
  std::vector<std::string> filter_lines;
  // perf names a one-item filter in the header and leaves its column out, when that column is
  // one of the sort keys.
  auto has_key = [&](analysis::SortKey k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  if (comm_filter.size() == 1 && has_key(analysis::SortKey::kComm)) {
    filter_lines.push_back("comm: " + comm_filter[0]);
    columns.elide_comm = !cli.hierarchy;
  }
  if (dso_filter.size() == 1 && has_key(analysis::SortKey::kDso)) {
    filter_lines.push_back("dso: " + dso_filter[0]);
    columns.elide_dso = !cli.hierarchy;
  }
  // The entries that read as addresses are not names (analysis::SampleSelection).
  if (const auto names = analysis::SampleSelection({}, symbol_filter).names();
      names.size() == 1 && has_key(analysis::SortKey::kSym)) {
    filter_lines.push_back("symbol: " + names[0]);
    columns.elide_sym = !cli.hierarchy;
  }
  if (off_cpu) {
    filter_lines.push_back(analysis::describe_off_cpu(*off_cpu));
    if (off_cpu->source() == analysis::OffCpuSource::kSchedSwitch || off_cpu->offcpu_time_states_known()) {
      filter_lines.push_back("off-CPU by state: " + analysis::describe_off_cpu_states(*off_cpu));
    } else if (off_cpu->source() == analysis::OffCpuSource::kOffcpuTimeEvent) {
      filter_lines.push_back("off-CPU by state: not recorded (perf's offcpu-time samples keep no state; all count as sleeping)");
    }
    if (cli.wall_clock) {
      filter_lines.push_back(fmt::format(
          "weights: wall-clock nanoseconds: on-CPU (cpu-clock/task-clock periods) plus off-CPU{}; samples: samples and switches",
          wall_skipped ? " (events whose periods are no time left out)" : ""));
    } else {
      filter_lines.push_back(wanted_state ? fmt::format("weights: off-CPU nanoseconds while {}, samples: switches",
                                                      analysis::off_cpu_state_name(*wanted_state))
                                        : "weights: off-CPU nanoseconds, samples: switches");
    }
  }
  columns.relative = cli.percentage == "relative";
  if (!fields.empty()) {
    // Rows: by the --sort keys first, then by the -F fields in their order; keys -F does not
    // show (--sort's, -p's parent) get columns at the end.
    using Field = analysis::ReportField;
    columns.fields = fields;
    for (analysis::SortKey k : sort_keys) columns.order.push_back({Field::Kind::kKey, k});
    for (const Field& f : fields) {
      if (std::find(columns.order.begin(), columns.order.end(), f) == columns.order.end()) columns.order.push_back(f);
    }
    for (analysis::SortKey k : keys) {
      const Field f{Field::Kind::kKey, k};
      if (std::find(columns.fields.begin(), columns.fields.end(), f) == columns.fields.end()) columns.fields.push_back(f);
      if (std::find(columns.order.begin(), columns.order.end(), f) == columns.order.end()) columns.order.push_back(f);
    }
  }
  auto thread_comm = [&](int32_t tid) -> const std::string* {
    const session::Thread* t = machine.find_thread(tid);
    return t ? t->comm() : nullptr;
  };
  // perf stops after the header hint when no event kept a sample (--time outside the
  // recording, an empty file).
  builder.setup_events();
  const auto& events = builder.events();
  const auto& group_slots = builder.group_slots();
  const auto& group_size = builder.group_size();
  const bool any_samples = std::any_of(events.begin(), events.end(), [](const auto& e) { return e.samples > 0; });
  if (!any_samples) {
    if (!cli.hint_replaced) output::print_report_header_hint(stdout);
    std::fflush(stdout);
    fmt::print(stderr, "Error:\nThe {} data has no samples!\n", cli.path);
  } else {
    if (!cli.quiet) output::print_report_preamble(stdout, builder.lost_samples(), filter_lines, !cli.hint_replaced);
    if (summary) output::print_unwind_summary(stdout, builder.unwind_stats(), /*dwarf_unwound=*/true);
  }
  columns.quiet = cli.quiet;
  columns.jobs = cli.jobs.jobs;
  for (size_t i = 0; i < events.size() && i < reader->attrs().size(); ++i) {
    columns.plural_events = group_size[i] > 1;
    columns.member_totals.clear();
    if (group_slots[i].member != 0) continue;  // shown in its leader's section
    if (events[i].hist.members() > 1) {
      // The leader's section: every member's samples and periods, named after the group.
      uint64_t samples = 0, period = 0;
      std::string names;
      for (unsigned m = 0; m < group_size[i]; ++m) {
        const auto& member = events[i + m];
        samples += member.samples;
        period += member.period;
        columns.member_totals.push_back(member.period);
        names += fmt::format("{}{}", m ? ", " : "", output::script_event_name(reader->attrs()[i + m]));
      }
      if (samples == 0) continue;
      std::string group_name;
      for (const auto& g : reader->features().group_desc) {
        if (g.leader_idx == i && !g.name.empty() && g.name != "{anon_group}") group_name = g.name;
      }
      output::print_report_section(stdout, fmt::format("{} {{ {} }}", group_name.empty() ? "anon group" : group_name, names),
                                   samples, period, events[i].hist, columns, thread_comm);
      continue;
    }
    if (events[i].samples == 0) continue;
    // An event without a stored name is named as perf's evsel__name names it, the modifiers of
    // its exclude bits included, the same name script prints.
    const std::string event_name = output::script_event_name(reader->attrs()[i]);
    output::print_report_section(stdout,
                                 static_cast<int>(i) == wall_section ? fmt::format("wall-clock ({} + on-CPU time)", event_name)
                                                                     : event_name,
                                 events[i].samples, events[i].period, events[i].hist,
                                 columns, thread_comm);
  }
  if (cli.threads) thread_values.print(stdout);
  std::fflush(stdout);
  preloader.wait();  // every load's warning, whether or not a sample needed its DSO
  for (const auto& w : symbolizer.take_warnings()) {
    if (!cli.quiet) fmt::print(stderr, "tperf report: warning: {}\n", w);
  }
  if (cli.mem_stats) print_mem_stats("report", machine);
  int status = report_reader_problems("report", *reader);
  for (const auto& p : problems) {
    fmt::print(stderr, "tperf report: {}: {}\n", reader->path(), p);
    status = 2;
  }
  return status;
}

// What perf prints of the file's header before its report, after --header, --header-only or -I
// (each rule below checked against perf 6.1 on a file and a pipe-mode file):
// - the "# ========" block (a file's features in it) for --header/--header-only, not with -q;
// - --header-only stops there: with -q only on a pipe, and not for --tasks/--mmaps/--stats (with
//   -q perf gives the report or the listing instead);
// - a pipe's features, which perf prints while it reads them from the stream, whenever one of the
//   three asked (-q or not), but not before a task list or --stats: after the block, or after
//   perf's hint line when there is no block.
// `input`: the path as given ("-" for standard input, whose time perf shows as "captured on").
// Returns the exit status when the run ends here, else nullopt; `cli.hint_replaced` then says
// whether what was printed takes the place of the hint line.
std::optional<int> print_report_header(ReportCliOptions& cli, const std::string& input) {
  const bool block = (cli.header || cli.header_only) && !cli.quiet;
  const bool asked = cli.header || cli.header_only || cli.show_info;
  if (!asked) return std::nullopt;
  auto reader = perfdata::Reader::open(cli.path);
  const bool pipe = reader->is_pipe();
  const bool tasks = cli.tasks || cli.mmaps || cli.stats;  // a listing in place of the report
  const bool stop = cli.header_only && (!cli.quiet || (pipe && !tasks));
  const bool pipe_features = pipe && (stop || !tasks);
  if (!block && !pipe_features) return std::nullopt;
  const bool hint = !block && !cli.quiet;
  if (hint) output::print_report_header_hint(stdout);
  output::HeaderFormatOptions format;
  format.full = cli.show_info;
  format.no_extras = true;
  format.file_records = false;  // the report reads them
  format.block = block;
  format.pipe_features = pipe_features;
  if (print_file_header("report", *reader, input, format) != 0) return 2;
  if (stop) return 0;
  cli.hint_replaced = block || hint;
  return std::nullopt;
}

// --stats: every record read, counted as perf's --stats counts them.
int run_report_stats(const ReportCliOptions& cli) {
  auto reader = perfdata::Reader::open(cli.path);
  const analysis::RecordCensus census = analysis::take_record_census(*reader, /*decode=*/false);
  output::print_report_stats(stdout, *reader, census);
  return report_reader_problems("report", *reader);
}

int run_report(const ReportCliOptions& given) {
  ReportCliOptions cli = given;
  if (!cli.percent_type.empty()) {
    static constexpr const char* kTypes[] = {"global-period", "local-period", "global-hits", "local-hits"};
    if (std::find(std::begin(kTypes), std::end(kTypes), cli.percent_type) == std::end(kTypes)) {
      return fail(fmt::format("--percent-type {}: global-period, local-period, global-hits or local-hits expected",
                              cli.percent_type));
    }
  }
  if (!cli.prefix_strip.empty() && cli.prefix.empty()) return fail("--prefix-strip requires --prefix (as in perf)");
  if (cli.stats && (cli.tasks || cli.mmaps)) return fail("--tasks and --mmaps can't be used together with --stats");
  if (cli.hierarchy && !cli.fields.empty()) return fail("--hierarchy and --fields options cannot be used together (as in perf)");
  if (!cli.field_sep.empty() && (cli.hierarchy || cli.mem_mode || analysis::wants_weight_report(cli.sort) || cli.branch_stack)) {
    return fail("-t/--field-separator with --hierarchy, --mem-mode, weight sort keys or -b is not supported by tperf yet");
  }
  if (cli.hierarchy && (cli.mem_mode || analysis::wants_weight_report(cli.sort) || cli.branch_stack)) {
    return fail("--hierarchy with --mem-mode, weight sort keys or -b is not supported by tperf yet");
  }
  // perf filters each level of a hierarchy by the filters of its own key and sums the hidden
  // entries into the levels above: not done yet.
  if (cli.hierarchy && (!cli.comms.empty() || !cli.dsos.empty() || !cli.pids.empty() || !cli.tids.empty() ||
                        !cli.symbol_names.empty() || cli.exclude_other)) {
    return fail("--hierarchy with --comm, --dso, --pid, --tid, -S or -x is not supported by tperf yet");
  }
  // A stream whose header is printed before its report is read twice: from a copy.
  std::optional<util::SpooledInput> spool;
  if ((cli.header || cli.show_info || (cli.header_only && cli.quiet)) && !util::rereadable_input(cli.path)) {
    spool.emplace(cli.path);
    cli.path = spool->path();
  }
  if (std::optional<int> status = print_report_header(cli, given.path)) return *status;
  if (cli.stats) return run_report_stats(cli);
  if (cli.tasks || cli.mmaps) return run_tasks(cli);
  if (cli.mem_mode || analysis::wants_weight_report(cli.sort)) {
    const bool filtered = !cli.comms.empty() || !cli.dsos.empty() || !cli.pids.empty() || !cli.tids.empty() ||
                          !cli.cpus.empty() || !cli.symbol_names.empty() || !cli.time.empty() || cli.hide_unresolved;
    if (filtered || !cli.parent_pattern.empty() || (!cli.fields.empty() && !cli.mem_mode)) {
      return fail("--mem-mode and weight sort keys: -p and the filters (-U among them; and -F without --mem-mode) are "
                  "not supported yet");
    }
    symbols::SymbolizerOptions so;
    cli.symbols.apply_to(&so);
    return run_mem_report({.path = cli.path,
                           .sort = cli.sort,
                           .fields = cli.fields,
                           .show_samples = cli.show_samples,
                           .quiet = cli.quiet,
                           .plain = !cli.mem_mode,
                           .jobs = cli.jobs.jobs,
                           .hint_replaced = cli.hint_replaced},
                          so);
  }
  if (!cli.off_cpu && !cli.wall_clock && !cli.branch_history) {
    BranchReportOptions b{cli.path, cli.sort, cli.show_samples, cli.show_period, cli.percent_limit, cli.quiet,
                          cli.mem_stats, cli.symbols, "", cli.callchain, cli.jobs.jobs, cli.hint_replaced};
    const std::pair<bool, const char*> plain_only[] = {
        {!cli.fields.empty(), "-F"},          {cli.children, "--children"},
        {!cli.parent_pattern.empty(), "-p"}, {!cli.comms.empty(), "--comm"},   {!cli.dsos.empty(), "--dso"},
        {!cli.pids.empty(), "--pid"},        {!cli.tids.empty(), "--tid"},     {!cli.cpus.empty(), "--cpu"},
        {!cli.symbol_names.empty(), "-S"},   {!cli.time.empty(), "--time"},    {cli.percentage != "absolute", "--percentage"},
        {cli.threads, "-T"},                 {cli.hide_unresolved, "-U"},      {cli.hierarchy, "--hierarchy"},
        {!cli.field_sep.empty(), "-t"}};
    for (const auto& [given, name] : plain_only) {
      if (given && b.unsupported.empty()) b.unsupported = name;
    }
    int status = 0;
    if (run_branch_report_if_applies(b, cli.branch_stack, cli.no_branch_stack, &status)) return status;
  }
  return run_hist_report(cli);
}

}  // namespace

void add_report_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ReportCliOptions>();
  auto* cmd = app.add_subcommand("report", "Summarize a profile, like perf report");
  opt->input.add_to(*cmd);
  cmd->add_flag("--tasks", opt->tasks, "list the tasks (pid, tid, ppid, comm) as a tree, exited ones included");
  cmd->add_flag("--mmaps", opt->mmaps, "like --tasks, with the maps of each task");
  cmd->add_flag("--mem-stats", opt->mem_stats, "print what the machine model holds (threads, maps, DSOs) at the end");
  cmd->add_flag("-f,--force", opt->force, "accepted for perf compatibility");
  cmd->add_flag("--stdio", opt->stdio, "text output (the default and only one)");
  cmd->add_flag("--group", opt->group, "show the events of a group side by side (the default for files with groups)");
  cmd->add_flag("--no-group", opt->no_group, "one section per event, groups or not");
  const char* annotate_only = "accepted for perf compatibility: perf uses it in annotation, its TUI or -D, not in a --stdio report";
  cmd->add_option("--percent-type", opt->percent_type, annotate_only);
  cmd->add_option("--prefix", opt->prefix, annotate_only);
  cmd->add_option("--prefix-strip", opt->prefix_strip, annotate_only);
  cmd->add_option("--objdump", opt->objdump, annotate_only);
  cmd->add_flag("--asm-raw", opt->asm_raw, annotate_only);
  cmd->add_option("-M,--disassembler-style", opt->disassembler_style, annotate_only);
  cmd->add_flag("--source,!--no-source", opt->source, annotate_only);
  cmd->add_option("--samples", opt->samples, annotate_only);
  cmd->add_option("--pretty", opt->pretty, annotate_only);
  cmd->add_flag("--ignore-vmlinux", opt->ignore_vmlinux, "accepted for perf compatibility: tperf reads no vmlinux");
  cmd->add_flag("--ns", opt->nanosecs, "accepted for perf compatibility: perf shows nanoseconds in the time key only");
  cmd->add_flag("--show-on-off-events", opt->show_on_off_events,
                "accepted for perf compatibility: it goes with --switch-on/--switch-off, which tperf has not");
  cmd->add_flag("-U,--hide-unresolved", opt->hide_unresolved,
                "leave out the samples whose address has no symbol (from the totals too) and the callchain frames "
                "without one");
  // perf 6.1 turns its ordering off only when it dumps the records (-D), which report does not.
  cmd->add_flag("--disable-order", opt->disable_order,
                "accepted for perf compatibility: perf keeps the time order unless it dumps the raw records, as the "
                "report does here");
  cmd->add_option("-t,--field-separator", opt->field_sep,
                  "separate the columns by this text (values left-aligned, no rule under the names; as perf)");
  cmd->add_flag("--hierarchy", opt->hierarchy,
                "the sort keys as levels of a tree: each key's entries under the one before, Self only (as perf)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no header lines, no unwinding summary, no warnings (as perf report -q)");
  cmd->add_flag("--header", opt->header,
                "print the file's header (as --header-only) before the report, in place of perf's hint line");
  cmd->add_flag("--header-only", opt->header_only, "print the file's header and stop (as `tperf header --no-extras`)");
  cmd->add_flag("-I,--show-info", opt->show_info,
                "with --header/--header-only: also the features perf prints only with -I (CPU and NUMA topology...)");
  cmd->add_flag("--stats", opt->stats,
                "print the records of each type and each event's samples and LOST_SAMPLES records instead of the "
                "report (as perf report --stats)");
  cmd->add_flag("--no-unwind-summary", opt->no_unwind_summary,
                "leave out the unwinding quality block (for output equal to perf report's)");
  cmd->add_option("-s,--sort", opt->sort, "sort keys: comm, pid, tid, dso, sym, symoff, cpu, srcline, parent (default comm,dso,sym)");
  opt->inline_frames.add_to(*cmd);
  cmd->add_option("-F,--fields", opt->fields,
                  "output columns in this order: overhead, overhead_children, sample, period and sort keys "
                  "(the rows sort by --sort, then by these)");
  cmd->add_flag("--children", opt->children, "accumulate callees' cost into callers (default with callchains)");
  cmd->add_flag("--no-children", opt->no_children, "self cost only");
  cmd->add_option("-g,--call-graph", opt->callchain,
                  "callchain display, perf's syntax: print_type,threshold[,print_limit],order,sort_key[,branch],value "
                  "(graph|flat|fractal|folded|none, caller|callee, function|address, percent|period|count)");
  cmd->add_flag("-n,--show-nr-samples", opt->show_samples, "add a Samples column");
  cmd->add_flag("--show-total-period", opt->show_period, "add a Period column");
  cmd->add_flag("--show-cpu-utilization", opt->show_cpu_utilization,
                "add sys and usr columns: the share of each entry's samples taken in the kernel and in user space");
  cmd->add_option("--percent-limit", opt->percent_limit, "hide entries below this percentage");
  cmd->add_option("--max-stack", opt->max_stack, "callchain frames used at most (default 127)");
  cmd->add_flag("-G,--inverted", opt->inverted, "caller-based callchains whatever -g says (as perf 6.1's -G)");
  opt->symbols.add_to(*cmd);
  opt->symbols.add_source_path_to(*cmd);
  opt->jobs.add_to(*cmd);
  cmd->add_option("--comm,--comms", opt->comms, "only samples of these comms (comma separated)");
  cmd->add_option("-d,--dso,--dsos", opt->dsos, "only samples in these DSOs (short names, comma separated)");
  cmd->add_option("--pid", opt->pids, "only samples of these pids");
  cmd->add_option("--tid", opt->tids, "only samples of these tids");
  cmd->add_option("-C,--cpu", opt->cpus, "only samples on these cpus (0-3,5)");
  cmd->add_option("-S,--symbols", opt->symbol_names, "only samples in these symbols (names or 0xADDR, comma separated)");
  cmd->add_option("-p,--parent", opt->parent_pattern,
                  "regex of the parent symbols (adds the parent sort key; default pattern ^sys_|^do_page_fault)");
  cmd->add_flag("-x,--exclude-other", opt->exclude_other, "only entries with a parent match (see -p)");
  cmd->add_option("--percentage", opt->percentage,
                  "percentages of filtered reports: absolute (of all samples, the default) or relative (of those shown)");
  cmd->add_option("--time", opt->time,
                  "time span(s) of interest: start,stop (seconds) [start,stop ...], or percentages: 10%/2, 0%-10%,30%-40%");
  cmd->add_flag("--off-cpu", opt->off_cpu,
                "weigh by the time threads spent switched out (sched:sched_switch samples, SWITCH records, or "
                "perf's offcpu-time event); -n counts switches");
  cmd->add_flag("--wall-clock", opt->wall_clock,
                "on-CPU time (cpu-clock/task-clock periods) and off-CPU time together, in one section");
  cmd->add_flag("-T,--threads", opt->threads, "per-thread counter values (perf record -s) after the report");
  cmd->add_flag("--mem-mode", opt->mem_mode,
                "memory samples (data_src, weight) by perf's memory sort keys: local_weight, weight, mem, sym, dso, "
                "symbol_daddr, dso_daddr, snoop, tlb, locked, blocked, local_ins_lat, ins_lat");
  cmd->add_flag("-b,--branch-stack", opt->branch_stack,
                "branch mode: each branch of the samples' branch stacks is one entry (default for files recorded with -b)");
  cmd->add_flag("--no-branch-stack", opt->no_branch_stack, "the plain report of a file whose samples have branch stacks");
  cmd->add_flag("--branch-history", opt->branch_history,
                "add the branch stacks to the callchains: each sample's taken branches, oldest first, with their "
                "cycles, prediction and type (default sort srcline,symbol,dso)");
  cmd->add_option("--state", opt->state, "with --off-cpu: only the time spent runnable (preempted) or sleeping");
  cmd->callback([opt, cmd, &status] {
    opt->path = opt->input.resolve(*cmd);
    status = run_guarded("report", opt->path, [&] { return run_report(*opt); });
  });
}

}  // namespace tperf::cli
