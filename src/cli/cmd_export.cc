// `tperf export --format pprof|firefox|speedscope`: the recording's stack table in a format
// other tools load (pprof, the Firefox Profiler, speedscope).
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "analysis/profile_builder.h"
#include "cli/commands.h"
#include "util/text.h"
#include "output/firefox.h"
#include "output/pprof.h"
#include "output/speedscope.h"

namespace tperf::cli {

namespace {

struct ExportCliOptions {
  InputOption input;
  std::string path;
  std::string format;
  std::string output;
  std::string pids;
  std::string tids;
  bool srcline = false;
  StackTableCliOptions stacks;
};

int fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "tperf export: {}\n", message);
  return 2;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The whole file at once: a failed export leaves no half-written file behind with the right name.
int write_file(const std::string& path, const std::string& bytes) {
  if (path == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
      return fail("standard output: write error");
    }
    return 0;
  }
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return fail(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !written) {
    std::remove(tmp.c_str());
    return fail(fmt::format("{}: write error", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  }
  return 0;
}

int run_export(const ExportCliOptions& cli) {
  analysis::ProfileOptions po;
  // The Firefox Profiler and speedscope show the time line; pprof has no place for it.
  po.timed_samples = cli.format != "pprof";
  po.srclines = cli.srcline;
  if (!util::parse_number_list(cli.pids, false, &po.pids)) return fail(fmt::format("--pid {}: not a list of numbers", cli.pids));
  if (!util::parse_number_list(cli.tids, false, &po.tids)) return fail(fmt::format("--tid {}: not a list of numbers", cli.tids));
  cli.stacks.apply_to(&po);
  const analysis::Profile profile = analysis::build_profile(cli.path, po);

  std::string bytes;
  std::string output = cli.output;
  if (cli.format == "pprof") {
    if (output.empty()) output = "perf.pb.gz";
    bytes = output::gzip_compress(output::encode_pprof(profile));
  } else if (cli.format == "firefox") {
    if (output.empty()) output = "perf.firefox.json";
    bytes = output::encode_firefox(profile);
    // The Firefox Profiler opens gzipped files as they are.
    if (ends_with(output, ".gz")) bytes = output::gzip_compress(bytes);
  } else {
    if (output.empty()) output = "perf.speedscope.json";
    bytes = output::encode_speedscope(profile, cli.path);
  }
  if (int status = write_file(output, bytes); status != 0) return status;
  int status = 0;
  for (const std::string& p : profile.problems) {
    fmt::print(stderr, "tperf export: {}: {}\n", cli.path, p);
    status = 2;
  }
  return status;
}

}  // namespace

void add_export_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ExportCliOptions>();
  auto* cmd = app.add_subcommand("export", "Write the profile for pprof, the Firefox Profiler or speedscope");
  opt->input.add_to(*cmd);
  cmd->add_option("--format", opt->format, "pprof (gzipped profile.proto), firefox (Gecko profile JSON) or speedscope")
      ->required()
      ->check(CLI::IsMember({"pprof", "firefox", "speedscope"}));
  cmd->add_option("-o,--output", opt->output,
                  "output file, - for standard output (default perf.pb.gz, perf.firefox.json, perf.speedscope.json; "
                  "a firefox file named *.gz is gzipped)");
  cmd->add_option("--pid", opt->pids, "only samples of these pids (comma separated)");
  cmd->add_option("--tid", opt->tids, "only samples of these tids (comma separated)");
  cmd->add_flag("--srcline", opt->srcline, "file and line of every frame from the debug information");
  opt->stacks.add_to(*cmd);
  cmd->callback([opt, cmd, &status] {
    opt->path = opt->input.resolve(*cmd);
    status = run_guarded("export", opt->path, [&] { return run_export(*opt); });
  });
}

}  // namespace tperf::cli
