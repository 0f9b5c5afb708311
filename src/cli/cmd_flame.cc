// `tperf flame`: the recording's stack table (analysis::build_profile) written as one
// self-contained interactive flame page (output/flame_page), or with --svg as a static SVG flame
// graph (output/flame_svg).
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "analysis/profile_builder.h"
#include "cli/commands.h"
#include "output/flame_page.h"
#include "output/flame_svg.h"
#include "output/unwind_summary.h"

namespace tperf::cli {

namespace {

struct FlameCliOptions {
  InputOption input;
  std::string output;  // "" = flame.html, or flame.svg with --svg
  bool svg = false;
  bool no_timeline = false;
  std::string title;
  std::vector<int32_t> pids, tids;
  StackTableCliOptions stacks;
};

// Writes `text` to `path` whole; "" when done, else why not.
std::string write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return std::strerror(errno);
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written) return std::strerror(write_errno);
  if (!closed) return std::strerror(errno);
  return "";
}

int run_flame(const FlameCliOptions& cli, const std::string& input) {
  analysis::ProfileOptions options;
  options.pids = cli.pids;
  options.tids = cli.tids;
  cli.stacks.apply_to(&options);
  // The page's timeline: every sample's time, and the threads' off-CPU states when the file has
  // sched_switch samples. The SVG has no timeline.
  options.timed_samples = !cli.svg && !cli.no_timeline;
  options.thread_states = !cli.svg && !cli.no_timeline;
  analysis::UnwindStats unwind;
  analysis::Profile profile = analysis::build_profile(input, options, &unwind);
  profile.unwind_summary = output::unwind_summary_text(unwind);

  const std::string output = !cli.output.empty() ? cli.output : cli.svg ? "flame.svg" : "flame.html";
  const std::string title = !cli.title.empty() ? cli.title : fmt::format("tperf flame: {}", input == "-" ? "stdin" : input);
  std::string text;
  if (cli.svg) {
    output::FlameSvgOptions so;
    so.title = title;
    text = output::flame_svg(profile, so);
  } else {
    output::FlamePageOptions po;
    po.title = title;
    text = output::flame_page_html(profile, po);
  }
  if (auto err = write_file(output, text); !err.empty()) {
    std::fflush(stdout);
    fmt::print(stderr, "tperf flame: {}: {}\n", output, err);
    return 2;
  }
  uint64_t samples = 0;
  for (const auto& c : profile.counts) samples += c.samples;
  fmt::print("tperf flame: wrote {} ({} samples, {} call sites, {} bytes)\n", output, samples, profile.stacks.size(),
             text.size());
  // Records skipped as undecodable: the graph is drawn without them, and the status says so.
  std::fflush(stdout);
  for (const auto& p : profile.problems) fmt::print(stderr, "tperf flame: {}: {}\n", input, p);
  return profile.problems.empty() ? 0 : 2;
}

}  // namespace

void add_flame_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<FlameCliOptions>();
  auto* cmd = app.add_subcommand("flame", "Write an interactive flame graph page (one HTML file), or an SVG with --svg");
  opt->input.add_to(*cmd);
  cmd->add_option("-o,--output", opt->output, "output file (default flame.html, flame.svg with --svg)");
  cmd->add_flag("--svg", opt->svg, "write a static SVG flame graph instead of the interactive page");
  cmd->add_flag("--no-timeline", opt->no_timeline,
                "leave the per-thread timeline out of the page (it keeps every sample's time while building)");
  cmd->add_option("--title", opt->title, "title of the page or image (default: tperf flame: FILE)");
  cmd->add_option("--pid", opt->pids, "only samples of these processes (comma-separated)")->delimiter(',');
  cmd->add_option("--tid", opt->tids, "only samples of these threads (comma-separated)")->delimiter(',');
  opt->stacks.add_to(*cmd);
  cmd->callback([opt, cmd, &status] {
    const std::string input = opt->input.resolve(*cmd);
    status = run_guarded("flame", input, [&] { return run_flame(*opt, input); });
  });
}

}  // namespace tperf::cli
