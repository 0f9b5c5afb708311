// `tperf collapse`: folded stacks, one "comm;outer;...;leaf COUNT" line per distinct stack, as
// `perf script | stackcollapse-perf.pl` prints them, straight from perf.data.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "analysis/profile_builder.h"
#include "cli/commands.h"
#include "output/collapse.h"

namespace tperf::cli {

namespace {

struct CollapseCliOptions {
  InputOption input;
  std::string path;
  std::string output = "-";
  output::CollapseOptions collapse;
  bool annotate_all = false;
  StackTableCliOptions stacks;
};

int run_collapse(const CollapseCliOptions& cli) {
  analysis::ProfileOptions po;
  cli.stacks.apply_to(&po);
  const analysis::Profile profile = analysis::build_profile(cli.path, po);

  output::CollapseOptions co = cli.collapse;
  if (cli.annotate_all) co.annotate_kernel = co.annotate_jit = true;
  std::string error;
  const output::CollapsedStacks stacks = output::collapse_stacks(profile, co, &error);
  if (!error.empty()) {
    fmt::print(stderr, "tperf collapse: {}: {}\n", cli.path, error);
    return 2;
  }
  std::FILE* out = stdout;
  if (cli.output != "-") {
    out = std::fopen(cli.output.c_str(), "w");
    if (out == nullptr) {
      fmt::print(stderr, "tperf collapse: {}: cannot create: {}\n", cli.output, std::strerror(errno));
      return 2;
    }
  }
  output::write_collapsed(out, stacks);
  const bool write_failed = std::ferror(out) != 0;
  if (out != stdout ? std::fclose(out) != 0 || write_failed : std::fflush(out) != 0 || write_failed) {
    fmt::print(stderr, "tperf collapse: {}: write error\n", cli.output == "-" ? "standard output" : cli.output);
    return 2;
  }
  // stackcollapse-perf.pl says so too when it keeps only the first event type it met.
  if (stacks.other_events && cli.collapse.event.empty()) {
    fmt::print(stderr, "tperf collapse: only events of type {} (choose another with --event-filter)\n",
               profile.events[stacks.event].name);
  }
  int status = 0;
  for (const std::string& p : profile.problems) {
    fmt::print(stderr, "tperf collapse: {}: {}\n", cli.path, p);
    status = 2;
  }
  return status;
}

}  // namespace

void add_collapse_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<CollapseCliOptions>();
  auto* cmd = app.add_subcommand(
      "collapse", "Folded stacks for flame graphs, as perf script | stackcollapse-perf.pl prints them");
  opt->input.add_to(*cmd);
  cmd->add_option("-o,--output", opt->output, "output file (default: standard output)");
  cmd->add_flag("--pid", opt->collapse.include_pid, "process names as comm-PID");
  cmd->add_flag("--tid", opt->collapse.include_tid, "process names as comm-PID/TID");
  cmd->add_flag("--period", opt->collapse.period, "sum the sample periods instead of counting samples");
  cmd->add_flag("--kernel", opt->collapse.annotate_kernel, "mark kernel functions with _[k]");
  cmd->add_flag("--jit", opt->collapse.annotate_jit, "mark functions of /tmp/perf-PID.map with _[j]");
  cmd->add_flag("--all", opt->annotate_all, "all marks (--kernel --jit)");
  cmd->add_flag("--addrs", opt->collapse.addrs, "frames without a symbol as [dso <address>]");
  cmd->add_option("--event-filter", opt->collapse.event,
                  "only samples of this event (default: the first event met, as stackcollapse-perf.pl)");
  opt->stacks.add_to(*cmd);
  cmd->callback([opt, cmd, &status] {
    opt->path = opt->input.resolve(*cmd);
    status = run_guarded("collapse", opt->path, [&] { return run_collapse(*opt); });
  });
}

}  // namespace tperf::cli
