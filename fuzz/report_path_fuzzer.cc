// libFuzzer target for the whole reading path: the bytes go through the reader, the ordered
// events, the Machine, the Symbolizer and DWARF unwinder, the report's aggregation and its
// formatter (`tperf report --stdio`, default Children mode, then `--no-children -g folded`, then
// `--branch-history -g callee`, whose walk of branch stacks and callchains indexes into both, then
// -U with --hierarchy and --show-cpu-utilization), `tperf script` (plain, then in file order with every side-band line, -S and
// --stop-bt) and `tperf data convert --to-json`. A damaged file must end in the command's one-line error and exit status 2; any
// crash, sanitizer report, hang or runaway allocation is a bug.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

int g_memfd = -1;
// A small kallsyms for every command: reading the running kernel's (120k lines, 50 ms of kernel
// time each) made the seven command lines of an input take most of a second.
std::string g_kallsyms;

// Runs one tperf command line the way main() does, on the current input.
int run_tperf(std::vector<std::string> args) {
  CLI::App app{"tperf"};
  app.require_subcommand(1);
  int status = 0;
  tperf::cli::add_report_command(app, status);
  tperf::cli::add_script_command(app, status);
  tperf::cli::add_data_command(app, status);
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "report_path_fuzzer: bad command line: %s\n", e.what());
    std::abort();
  }
  return status;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The reports go nowhere; the commands' one-line errors and the fuzzer's own messages stay on
  // stderr (where a sanitizer report goes too).
  int null = ::open("/dev/null", O_WRONLY);
  if (null < 0) std::abort();
  ::dup2(null, STDOUT_FILENO);
  g_memfd = ::memfd_create("report-path-fuzz", 0);
  if (g_memfd < 0) std::abort();
  // No symbol files of this machine's home: the inputs' paths are resolved against an empty
  // build-id cache, as in the tests.
  ::setenv("HOME", "/nonexistent", 1);
  const int ks = ::memfd_create("report-path-fuzz-kallsyms", 0);
  if (ks < 0) std::abort();
  static const char kKallsyms[] =
      "ffffffff81000000 T _text\nffffffff81000000 T _stext\nffffffff81001000 t do_one_initcall\n"
      "ffffffff81002000 T schedule\nffffffffc0000000 t mod_func\t[fuzzmod]\n";
  if (::write(ks, kKallsyms, sizeof kKallsyms - 1) != static_cast<ssize_t>(sizeof kKallsyms - 1)) std::abort();
  g_kallsyms = "/proc/self/fd/" + std::to_string(ks);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (::ftruncate(g_memfd, 0) != 0 || ::lseek(g_memfd, 0, SEEK_SET) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(g_memfd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(g_memfd);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"report", "--stdio", "-i", path},
           {"report", "--stdio", "--no-children", "-g", "folded", "-s", "comm,dso,sym", "-i", path},
           {"report", "--stdio", "--branch-history", "-g", "callee", "-i", path},
           {"script", "-i", path},
           // File order (the ordering stage's other mode), every side-band printer, the sample
           // selection and the chain cut.
           {"script", "--show-round-events", "--show-task-events", "--show-mmap-events", "--show-switch-events",
            "--show-lost-events", "--show-namespace-events", "--show-cgroup-events", "--show-bpf-events", "-S",
            "main,f0,0x1000", "--addr-range", "4096", "--stop-bt", "main", "-i", path},
           // -U, and the hierarchy of three levels with the cpumode columns.
           {"report", "--stdio", "-U", "--no-children", "--hierarchy", "--show-cpu-utilization", "-s", "dso,pid,sym", "-i",
            path},
           // Every callchain entry looked up in the space its context marker names.
           {"data", "convert", "--to-json", "-", "-i", path},
       }) {
    std::vector<std::string> with_kallsyms = args;
    with_kallsyms.insert(with_kallsyms.end() - 2, {"--kallsyms", g_kallsyms});
    int status = run_tperf(with_kallsyms);
    // 0 or the one-line error's 2; anything else means the command failed in a way no input
    // should cause.
    if (status != 0 && status != 2) {
      std::fprintf(stderr, "report_path_fuzzer: %s ended with status %d\n", args[0].c_str(), status);
      std::abort();
    }
  }
  return 0;
}
