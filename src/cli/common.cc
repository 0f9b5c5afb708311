#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"

#include "analysis/profile_builder.h"
#include "output/header_format.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "session/machine.h"
#include "session/ordered_events.h"
#include "symbols/debug_cache.h"
#include "symbols/symbolizer.h"

namespace tperf::cli {

void InputOption::add_to(CLI::App& cmd, bool with_positional) {
  cmd.add_option("-i,--input", path, "input file, directory or - for stdin (default perf.data)");
  if (with_positional) cmd.add_option("file", positional, "input file (same as -i)");
}

std::string InputOption::resolve(const CLI::App& cmd) const {
  bool given = cmd.count("--input") > 0 || !positional.empty();
  if (!given) {
    struct stat st;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISFIFO(st.st_mode)) return "-";
  }
  return get();
}

void JobsOption::add_to(CLI::App& cmd) {
  cmd.add_option("-j,--jobs", jobs,
                 "threads (default: one per core): 1 reads and applies the records, adds the samples and builds "
                 "the call graphs on one thread (symbol tables load on a worker); 2 or more reads, unpacks and "
                 "orders the records on a thread of its own (a pipe is read on one), report adds samples and builds "
                 "call graphs on two more, and script formats its samples on that many; the output is the same");
}

void SymbolCliOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--symfs", symfs, "look for files (binaries, debug files) under this directory");
  cmd.add_option("--kallsyms", kallsyms, "kernel symbols from this kallsyms file");
  cmd.add_flag("--demangle,!--no-demangle", demangle,
               "demangle symbol names (the default); --no-demangle shows them as they are in the files");
  cmd.add_flag("--demangle-kernel", demangle_kernel, "demangle kernel symbol names too");
}

void SymbolCliOptions::add_source_path_to(CLI::App& cmd) {
  cmd.add_flag("--full-source-path", full_source_path,
               "source lines with the file's whole path (as DWARF gives it) instead of its name alone");
}

void SymbolCliOptions::apply_to(symbols::SymbolizerOptions* options) const {
  options->symfs = symfs;
  options->kallsyms = kallsyms;
  options->demangle = demangle;
  options->demangle_kernel = demangle_kernel;
  options->full_source_path = full_source_path;
  options->debug_cache = symbols::default_cache_dir();
}

void InlineCliOptions::add_to(CLI::App& cmd, bool with_inline_flag) {
  if (with_inline_flag) {
    cmd.add_flag("--inline", inline_frames,
                 "show the functions inlined at each frame unwound from a stack copy (--call-graph dwarf), as perf 6.1 "
                 "does; the default");
  }
  cmd.add_flag("--no-inline", no_inline,
               "do not expand the inline chains of frames unwound from --call-graph dwarf stacks (perf expands them by "
               "default)");
}

void StackTableCliOptions::add_to(CLI::App& cmd) {
  cmd.add_flag("--off-cpu", off_cpu,
               "the time threads spent switched out (in nanoseconds) instead of samples, as tperf report --off-cpu");
  cmd.add_flag("--wall-clock", wall_clock,
               "on-CPU time (cpu-clock/task-clock periods) and off-CPU time together, as tperf report --wall-clock");
  inline_frames.add_to(cmd, false);
  symbols.add_to(cmd);
}

void StackTableCliOptions::apply_to(analysis::ProfileOptions* options) const {
  options->off_cpu = off_cpu;
  options->wall_clock = wall_clock;
  options->inline_frames = inline_frames.expand();
  symbols.apply_to(&options->symbols);
}

void print_mem_stats(const char* command, const session::Machine& machine) {
  auto s = machine.mem_stats();
  std::fflush(stdout);
  fmt::print(stderr,
             "tperf {}: memory: threads {} held ({} exited), peak {}, released {}; address spaces {}, peak {}; "
             "maps {}, peak {}; dsos {}; strings {} ({} bytes); model ~{} KiB\n",
             command, s.threads, s.threads_exited, s.threads_peak, s.threads_released, s.address_spaces,
             s.address_spaces_peak, s.maps, s.maps_peak, s.dsos, s.strings, s.string_bytes, (s.approx_bytes + 1023) / 1024);
}

int print_file_header(const char* command, perfdata::Reader& reader, const std::string& name,
                      const output::HeaderFormatOptions& format) {
  const std::string error = output::print_header(reader, name, format);
  std::fflush(stdout);
  if (error.empty()) return 0;
  fmt::print(stderr, "tperf {}: {}: {}\n", command, name, error);
  return 2;
}

int report_reader_problems(const char* command, const perfdata::Reader& reader) {
  std::fflush(stdout);
  for (const auto& w : reader.warnings()) fmt::print(stderr, "tperf {}: {}: warning: {}\n", command, reader.path(), w);
  int status = 0;
  for (const auto& e : reader.errors()) {
    fmt::print(stderr, "tperf {}: {}: {}\n", command, reader.path(), e.what());
    status = 2;
  }
  for (const auto& w : reader.features().warnings) {
    fmt::print(stderr, "tperf {}: {}: {}\n", command, reader.path(), w);
    status = 2;
  }
  return status;
}

int report_reader_problems(const char* command, const perfdata::Reader& reader, const session::OrderedEvents& ordered) {
  int status = report_reader_problems(command, reader);
  for (const auto& e : ordered.deferred_errors()) {
    fmt::print(stderr, "tperf {}: {}: {}\n", command, reader.path(), e.what());
    status = 2;
  }
  return status;
}

int run_guarded(const char* command, const std::string& path, const std::function<int()>& body) {
  try {
    return body();
  } catch (const perfdata::FormatError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tperf {}: {}: {}\n", command, path, e.what());
  } catch (const perfdata::IoError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tperf {}: {}\n", command, e.what());
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    fmt::print(stderr, "tperf {}: {}: out of memory\n", command, path);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tperf {}: {}: {}\n", command, path, e.what());
  }
  return 2;
}

}  // namespace tperf::cli
