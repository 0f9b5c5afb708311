// tperf: a Linux sampling profiler toolkit that reads and writes perf.data.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"tperf: the Linux sampling profiler toolkit (reads and writes perf.data)"};
  app.require_subcommand(1);
  int status = 0;
  tperf::cli::add_dump_command(app, status);
  tperf::cli::add_header_command(app, status);
  tperf::cli::add_stats_command(app, status);
  tperf::cli::add_convert_command(app, status);
  tperf::cli::add_script_command(app, status);
  tperf::cli::add_record_command(app, status);
  tperf::cli::add_report_command(app, status);
  tperf::cli::add_diff_command(app, status);
  CLI11_PARSE(app, argc, argv);
  return status;
}
