// tperf: a Linux sampling profiler toolkit that reads and writes perf.data.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <string>

#include "cli/commands.h"

namespace {

// The subcommand a command line runs (nullptr when argv names none), for the error line.
const CLI::App* command_of(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    try {
      return app.get_subcommand(arg);
    } catch (const CLI::OptionNotFound&) {
      return nullptr;
    }
  }
  return nullptr;
}

// One line naming what was wrong with the command line, like perf's "Error: unknown option
// `bogus'" (perf then prints its usage). An unknown option is named first whatever else is wrong
// (CLI11 checks required arguments before it complains about extra ones).
std::string describe(const CLI::ParseError& e, const CLI::App* command) {
  if (command != nullptr) {
    for (const auto& extra : command->remaining()) {
      if (extra.size() > 1 && extra[0] == '-' && extra != "--") return fmt::format("unknown option '{}'", extra);
    }
  }
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // "The following argument(s) was/were not expected: ARG ...": the first one is named.
    const auto colon = what.find(": ");
    std::string first = colon == std::string::npos ? what : what.substr(colon + 2);
    first = first.substr(0, first.find(' '));
    if (!first.empty() && first[0] == '-') return fmt::format("unknown option '{}'", first);
    return fmt::format("unexpected argument '{}'", first);
  }
  for (char& c : what) {
    if (c == '\n') c = ' ';
  }
  while (!what.empty() && what.back() == ' ') what.pop_back();
  return what;
}

}  // namespace

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
  tperf::cli::add_flame_command(app, status);
  tperf::cli::add_collapse_command(app, status);
  tperf::cli::add_export_command(app, status);
  tperf::cli::add_data_command(app, status);
  // perf takes the last of a value option given twice (-s dso -s comm sorts by comm); CLI11
  // refuses the second unless told otherwise. Lists (-F, -e) keep every value, flags count.
  for (CLI::App* command : app.get_subcommands({})) {
    for (CLI::Option* option : command->get_options()) {
      if (option->get_type_size_max() >= 1 && option->get_items_expected_max() == 1) {
        option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      }
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const CLI::App* command = command_of(app, argc, argv);
    fmt::print(stderr, "tperf{}{}: {}\n", command ? " " : "", command ? command->get_name() : "", describe(e, command));
    return tperf::cli::kUsageExitStatus;
  }
  return status;
}
