// `tperf data convert --to-json OUT`: perf's JSON export (`perf data convert --to-json`, perf
// 6.1's layout), written by output::PerfJsonWriter from the shared replay path. The samples
// come in time order, resolved in the machine model as report resolves them.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "analysis/sample_path.h"
#include "analysis/time_filter.h"
#include "cli/commands.h"
#include "output/perf_json.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "symbols/resolver.h"
#include "symbols/symbolizer.h"

namespace tperf::cli {

namespace {

struct DataConvertCliOptions {
  InputOption input;
  std::string path;  // resolved
  std::string to_json;
  std::string to_ctf;
  bool force = false;
  bool verbose = false;
  bool all = false;
  bool tod = false;
  std::string time;
  JobsOption jobs;
  SymbolCliOptions symbols;
};

int fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "tperf data convert: {}\n", message);
  return 2;
}

int run_data_convert(const DataConvertCliOptions& cli) {
  if (!cli.to_ctf.empty()) {
    return fail("--to-ctf: CTF output is not supported by tperf (perf writes it with libbabeltrace); use --to-json");
  }
  if (cli.to_json.empty()) return fail("give --to-json FILE (the one output format tperf writes)");
  // As perf: these two are refused for JSON before anything is opened.
  if (cli.all) return fail("--all is not supported for JSON output (perf does not support it either)");
  if (cli.tod) return fail("--tod is not supported for JSON output (perf does not support it either)");

  auto reader = perfdata::Reader::open(cli.path);
  std::vector<analysis::TimeRange> time_ranges;
  if (!cli.time.empty()) {
    if (auto e = analysis::parse_time_ranges(cli.time, &time_ranges, analysis::sample_time_bounds(*reader)); !e.empty()) {
      return fail(fmt::format("--time {}: {}", cli.time, e));
    }
  }
  // The input's modification time, from the descriptor perf would have open: the file itself, a
  // directory's header file, or standard input.
  std::optional<std::time_t> captured_on;
  {
    struct stat st {};
    int rc = -1;
    if (cli.path == "-") {
      rc = fstat(STDIN_FILENO, &st);
    } else {
      rc = ::stat(reader->header_file().c_str(), &st);
    }
    if (rc == 0) captured_on = st.st_mtime;
  }

  // The output, as perf opens it: a file that is there already is kept unless --force. "-" is
  // standard output (perf would make a file of that name).
  const bool to_stdout = cli.to_json == "-";
  std::FILE* out = stdout;
  if (!to_stdout) {
    const int fd = ::open(cli.to_json.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | (cli.force ? O_TRUNC : O_EXCL), 0666);
    if (fd < 0) {
      if (errno == EEXIST) return fail(fmt::format("{}: the output file exists; --force overwrites it", cli.to_json));
      return fail(fmt::format("{}: cannot create: {}", cli.to_json, std::strerror(errno)));
    }
    out = fdopen(fd, "w");
    if (out == nullptr) {
      ::close(fd);
      return fail(fmt::format("{}: cannot create: {}", cli.to_json, std::strerror(errno)));
    }
  }

  const std::unique_ptr<session::Machine> machine = analysis::make_report_machine(*reader);
  symbols::SymbolizerOptions sym_options;
  cli.symbols.apply_to(&sym_options);
  symbols::Symbolizer symbolizer(*machine, sym_options);
  symbols::Resolver resolver(*machine, &symbolizer);
  output::PerfJsonWriter writer(out);
  // A pipe's features come as records ahead of its samples (perf record writes them first): its
  // headers are written at the first sample, or at the end, with what those said. (perf writes
  // them before reading any record: empty; perf 6.1 crashes on a pipe.)
  if (!reader->is_pipe()) writer.begin(*reader, captured_on);

  uint64_t skipped = 0;
  std::optional<bool> with_cpu;  // some event samples the cpu (perf's combined sample type)
  perfdata::Sample sample;
  std::vector<std::string> problems;
  {
    analysis::SymbolPreloader preloader(*machine, symbolizer);
    analysis::ReplayHandlers handlers;
    handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
      reader->decode_sample(rec, sample, perfdata::SampleParts::kChainInPlace);
      writer.begin(*reader, captured_on);
      if (analysis::time_skipped(time_ranges, sample.time)) {
        ++skipped;
        return;
      }
      if (!with_cpu) {
        uint64_t types = 0;
        for (const auto& a : reader->attrs()) types |= a.attr.sample_type;
        with_cpu = (types & perfdata::kSampleCpu) != 0;
      }
      const session::Thread& thread =
          machine->findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
      writer.add_sample(sample, static_cast<uint8_t>(rec.misc & perfdata::kMiscCpumodeMask), *with_cpu, thread,
                        resolver);
    };
    handlers.jobs = cli.jobs.jobs;
    problems = analysis::replay(*reader, *machine, symbolizer, &preloader, handlers).problems;
  }
  writer.begin(*reader, captured_on);  // a stream without samples
  const bool written = writer.end();
  const bool closed = to_stdout || std::fclose(out) == 0;
  for (const auto& w : symbolizer.take_warnings()) fmt::print(stderr, "tperf data convert: warning: {}\n", w);
  if (!written || !closed) {
    return fail(fmt::format("{}: write error", to_stdout ? std::string("standard output") : cli.to_json));
  }
  fmt::print(stderr, "[ tperf data convert: Converted '{}' into JSON data '{}' ]\n", cli.path, cli.to_json);
  fmt::print(stderr, "[ tperf data convert: Converted and wrote {:.3f} MB ({} samples) ]\n",
             static_cast<double>(writer.bytes()) / 1024.0 / 1024.0, writer.samples());
  if (skipped) fmt::print(stderr, "[ tperf data convert: Skipped {} samples ]\n", skipped);
  int status = report_reader_problems("data convert", *reader);
  for (const auto& p : problems) {
    fmt::print(stderr, "tperf data convert: {}: {}\n", reader->path(), p);
    status = 2;
  }
  return status;
}

}  // namespace

void add_data_command(CLI::App& app, int& status) {
  auto* data = app.add_subcommand("data", "Operations on perf.data files, as perf data (convert --to-json)");
  data->require_subcommand(1);
  auto opt = std::make_shared<DataConvertCliOptions>();
  auto* cmd = data->add_subcommand(
      "convert", "Write a perf.data file's samples as JSON, as perf data convert --to-json does (perf 6.1's layout)");
  opt->input.add_to(*cmd, /*with_positional=*/false);
  cmd->add_option("--to-json", opt->to_json, "the JSON file to write (- for standard output)");
  cmd->add_option("--to-ctf", opt->to_ctf, "perf's CTF output: not supported, refused");
  cmd->add_flag("-f,--force", opt->force, "overwrite the output file if it exists");
  cmd->add_flag("-v,--verbose", opt->verbose, "accepted for perf compatibility");
  cmd->add_flag("--all", opt->all, "perf's option for CTF output (all events): refused for JSON, as perf does");
  cmd->add_flag("--tod", opt->tod, "perf's option for CTF output (wall-clock times): refused for JSON, as perf does");
  cmd->add_option("--time", opt->time,
                  "time span(s) of interest, as report's --time (later perf versions take it too); "
                  "the samples outside are skipped and counted");
  opt->jobs.add_to(*cmd);
  opt->symbols.add_to(*cmd);
  cmd->callback([opt, cmd, &status] {
    opt->path = opt->input.resolve(*cmd);
    status = run_guarded("data convert", opt->path, [&] { return run_data_convert(*opt); });
  });
}

}  // namespace tperf::cli
