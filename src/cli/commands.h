// The subcommands of the tperf binary. Each add_*_command registers its options on the app and
// a callback that stores the command's exit status in `status`.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tperf::analysis {
struct ProfileOptions;
}  // namespace tperf::analysis

namespace tperf::cli {

void add_dump_command(CLI::App& app, int& status);
void add_header_command(CLI::App& app, int& status);
void add_stats_command(CLI::App& app, int& status);
void add_convert_command(CLI::App& app, int& status);
void add_script_command(CLI::App& app, int& status);
void add_record_command(CLI::App& app, int& status);
void add_report_command(CLI::App& app, int& status);
void add_diff_command(CLI::App& app, int& status);
void add_flame_command(CLI::App& app, int& status);
void add_collapse_command(CLI::App& app, int& status);
void add_export_command(CLI::App& app, int& status);
void add_data_command(CLI::App& app, int& status);

// The exit status of a command line tperf cannot parse (an unknown option, an option without its
// value or with a malformed one), as perf's usage errors (129).
inline constexpr int kUsageExitStatus = 129;

// Runs `body`, turning the errors every command can meet into a one-line message on stderr
// ("tperf CMD: PATH: offset 0x..: what") and exit status 2.
int run_guarded(const char* command, const std::string& path, const std::function<int()>& body);

}  // namespace tperf::cli

namespace tperf::perfdata {
class Reader;
}
namespace tperf::output {
struct HeaderFormatOptions;
}
namespace tperf::session {
class Machine;
class OrderedEvents;
}
namespace tperf::symbols {
struct SymbolizerOptions;
}

namespace tperf::cli {

// After a command has read a file to the end: prints the reader's warnings, then the damage it
// stepped over (errors, malformed feature sections) as "tperf CMD: PATH: offset 0x..: what".
// Returns 2 when the file was damaged, else 0.
int report_reader_problems(const char* command, const perfdata::Reader& reader);
// The same, plus the malformed deferred-callchain records the ordering stage met.
int report_reader_problems(const char* command, const perfdata::Reader& reader, const session::OrderedEvents& ordered);

// Prints the header block of `reader`'s file as `format` asks (output::print_header) and flushes
// standard output. Damage that stopped the reading is said as "tperf CMD: NAME: what" (`name`:
// the input as the user gave it) and makes the status 2; else 0.
int print_file_header(const char* command, perfdata::Reader& reader, const std::string& name,
                      const output::HeaderFormatOptions& format);

// Input-file option shared by the commands that read perf.data: positional FILE or -i FILE,
// default "perf.data", "-" for standard input.
struct InputOption {
  std::string path = "perf.data";
  std::string positional;
  // `with_positional` false: -i alone (perf data convert's words after its options are its output).
  void add_to(CLI::App& cmd, bool with_positional = true);
  const std::string& get() const { return positional.empty() ? path : positional; }
  // The file to read: like perf, with no file named and a pipe on standard input, "-".
  std::string resolve(const CLI::App& cmd) const;
};

// -j N: threads for reading a file (analysis::ReplayHandlers::jobs): 1 reads and applies the
// records on one thread, 2 or more on two; 0, the default, two for every file on a machine with two
// cores or more (a pipe is read on one). The output is the same.
struct JobsOption {
  unsigned jobs = 0;
  void add_to(CLI::App& cmd);
};

// Where symbols come from, for the commands that print them (script, report): --symfs,
// --kallsyms, --demangle/--no-demangle, --demangle-kernel.
struct SymbolCliOptions {
  std::string symfs;
  std::string kallsyms;
  bool demangle = true;
  bool demangle_kernel = false;
  bool full_source_path = false;  // --full-source-path (report and script, as perf)
  void add_to(CLI::App& cmd);
  // --full-source-path, which perf's report and script take.
  void add_source_path_to(CLI::App& cmd);
  void apply_to(symbols::SymbolizerOptions* options) const;
};

// --inline and --no-inline, as report and script (and the stack-table commands, --no-inline alone)
// take them: perf 6.1 expands the frames unwound from stack copies into their inline chains.
struct InlineCliOptions {
  bool inline_frames = false;  // --inline: that default, accepted
  bool no_inline = false;
  void add_to(CLI::App& cmd, bool with_inline_flag = true);
  bool expand() const { return !no_inline; }
};

// What the commands written from the stack table (flame, collapse, export) share: how its stacks
// are weighed (--off-cpu, --wall-clock) and resolved (--no-inline, the symbol options).
struct StackTableCliOptions {
  bool off_cpu = false;
  bool wall_clock = false;
  InlineCliOptions inline_frames;
  SymbolCliOptions symbols;
  void add_to(CLI::App& cmd);
  void apply_to(analysis::ProfileOptions* options) const;
};


// The --mem-stats lines: what the machine model holds and held at most (stderr).
void print_mem_stats(const char* command, const session::Machine& machine);

}  // namespace tperf::cli
