// `tperf report`: perf report for a perf.data file. --tasks / --mmaps list the task tree (every
// thread seen, exited ones included) like perf 6.1.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "output/task_list.h"
#include "perfdata/reader.h"
#include "session/machine.h"
#include "session/ordered_events.h"

namespace tperf::cli {

namespace {

struct ReportCliOptions {
  InputOption input;
  std::string path;  // resolved
  bool tasks = false;
  bool mmaps = false;
  bool mem_stats = false;
  bool force = false;
};

// perf names the idle task of the host before reading anything.
void register_idle_task(session::Machine& machine) {
  perfdata::CommEvent idle;
  idle.pid = idle.tid = 0;
  idle.comm = "swapper";
  machine.on_comm(idle, 0);
}

int run_tasks(const ReportCliOptions& cli) {
  auto reader = perfdata::Reader::open(cli.path);
  session::Machine::Options mo;
  mo.keep_exited = true;        // a task listing shows every task
  mo.keep_maps_on_exec = true;  // perf 6.1 keeps the old maps under the new ones
  session::Machine machine(mo);
  register_idle_task(machine);
  // Like perf's task mode: only the task records (and with --mmaps the map records) build the
  // model; samples do not create threads.
  session::OrderedEvents ordered(*reader, [&](const perfdata::Record& rec, uint64_t time) {
    switch (rec.type) {
      case perfdata::kRecordComm:
      case perfdata::kRecordFork:
      case perfdata::kRecordExit:
        machine.process(*reader, rec, time);
        break;
      case perfdata::kRecordMmap:
      case perfdata::kRecordMmap2:
        if (cli.mmaps) machine.process(*reader, rec, time);
        break;
      default:
        break;
    }
  });
  perfdata::Record rec;
  while (reader->next(rec)) ordered.push(rec);
  ordered.flush_all();
  output::print_task_list(stdout, machine, cli.mmaps);
  if (cli.mem_stats) print_mem_stats("report", machine);
  return report_reader_problems("report", *reader);
}

int run_report(const ReportCliOptions& cli) {
  if (cli.tasks || cli.mmaps) return run_tasks(cli);
  std::fflush(stdout);
  fmt::print(stderr, "tperf report: only --tasks and --mmaps are implemented so far\n");
  return 2;
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
  cmd->callback([opt, cmd, &status] {
    opt->path = opt->input.resolve(*cmd);
    status = run_guarded("report", opt->path, [&] { return run_report(*opt); });
  });
}

}  // namespace tperf::cli
