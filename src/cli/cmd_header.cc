// `tperf header`: prints what `perf report --header-only` (perf 6.1) prints for a file, line for
// line, then tperf's own section (output/header_format.h).
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "output/header_format.h"
#include "perfdata/reader.h"

namespace tperf::cli {

namespace {

struct HeaderOptions {
  InputOption input;
  output::HeaderFormatOptions format;
};

int run_header(const HeaderOptions& opt) {
  auto reader = perfdata::Reader::open(opt.input.get());
  const std::string error = output::print_header(*reader, opt.input.get(), opt.format);
  if (!error.empty()) {
    fmt::print(stderr, "tperf header: {}: {}\n", reader->path(), error);
    return 2;
  }
  return 0;
}

}  // namespace

void add_header_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<HeaderOptions>();
  CLI::App* cmd = app.add_subcommand(
      "header", "Print the file header like `perf report --header-only`, then record counts and warnings");
  opt->input.add_to(*cmd);
  cmd->add_flag("-I,--header-full", opt->format.full, "also print the features perf shows only with -I");
  cmd->add_flag("--no-extras", opt->format.no_extras, "print only what perf prints (no record counts or warnings)");
  cmd->callback([opt, &status] {
    status = run_guarded("header", opt->input.get(), [&] { return run_header(*opt); });
  });
}

}  // namespace tperf::cli
