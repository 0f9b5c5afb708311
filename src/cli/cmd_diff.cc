// `tperf diff`: perf diff for two or more perf.data files: each event's histogram (by dso,sym
// unless -s says otherwise) of the first file, the baseline, next to the same event's in the
// others, with the change of each entry's share (-c delta-abs, delta, ratio, wdiff).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "analysis/diff.h"
#include "analysis/hist.h"
#include "cli/commands.h"
#include "analysis/sample_path.h"
#include "output/diff_format.h"
#include "perfdata/reader.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"

namespace tperf::cli {

namespace {

struct DiffCliOptions {
  std::vector<std::string> files;
  std::string sort = "dso,sym";
  std::string compute = "delta-abs";
  bool force = false;
  SymbolCliOptions symbols;
};

int fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "tperf diff: {}\n", message);
  return 2;
}

// -c METHOD[:ARGS]: "wdiff:W1,W2" takes two non-zero weights, the others nothing.
std::string parse_compute(const std::string& spec, analysis::DiffOptions* out) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const bool has_args = colon != std::string::npos;
  if (name == "delta" || name == "delta-abs" || name == "ratio") {
    if (has_args) return fmt::format("-c {}: '{}' takes no arguments", spec, name);
    out->compute = name == "delta"       ? analysis::DiffCompute::kDelta
                   : name == "delta-abs" ? analysis::DiffCompute::kDeltaAbs
                                         : analysis::DiffCompute::kRatio;
    return "";
  }
  if (name == "wdiff") {
    const std::string args = has_args ? spec.substr(colon + 1) : "";
    const size_t comma = args.find(',');
    char* end1 = nullptr;
    char* end2 = nullptr;
    if (comma != std::string::npos && comma > 0 && comma + 1 < args.size()) {
      const std::string w1 = args.substr(0, comma), w2 = args.substr(comma + 1);
      out->wdiff_w1 = std::strtoll(w1.c_str(), &end1, 10);
      out->wdiff_w2 = std::strtoll(w2.c_str(), &end2, 10);
      if (!*end1 && !*end2 && out->wdiff_w1 && out->wdiff_w2) {
        out->compute = analysis::DiffCompute::kWdiff;
        return "";
      }
    }
    return fmt::format("-c {}: wrong weights, use 'wdiff:W1,W2' (two non-zero integers)", spec);
  }
  return fmt::format("-c {}: not a computation method (delta, delta-abs, ratio, wdiff:W1,W2)", spec);
}

int run_diff(const DiffCliOptions& cli) {
  std::vector<analysis::SortKey> keys;
  if (auto err = analysis::parse_sort_keys(cli.sort, &keys); !err.empty()) return fail(err);
  for (analysis::SortKey k : keys) {
    if (k == analysis::SortKey::kSrcline || k == analysis::SortKey::kParent || k == analysis::SortKey::kTrace) {
      return fail(fmt::format("--sort {}: tperf diff compares by comm, pid, tid, dso, sym, symoff and cpu only",
                              k == analysis::SortKey::kSrcline ? "srcline"
                              : k == analysis::SortKey::kParent ? "parent"
                                                                : "trace"));
    }
  }
  analysis::DiffOptions options;
  if (auto err = parse_compute(cli.compute, &options); !err.empty()) return fail(err);
  // Like perf: no file named compares perf.data.old with perf.data; one names the new file.
  std::vector<std::string> paths = cli.files;
  if (paths.empty()) paths = {"perf.data.old", "perf.data"};
  if (paths.size() == 1) paths.insert(paths.begin(), "perf.data.old");

  symbols::SymbolizerOptions so;
  cli.symbols.apply_to(&so);
  std::vector<analysis::EventHists> files;
  for (const std::string& path : paths) {
    int status = run_guarded("diff", path, [&] {
      files.push_back(analysis::load_event_hists(path, keys, so));
      return 0;
    });
    if (status) return status;
  }

  const perfdata::Reader& base_reader = *files[0].reader;
  bool first = true;
  for (size_t ai = 0; ai < base_reader.attrs().size(); ++ai) {
    const perfdata::PerfEventAttr& attr = base_reader.attrs()[ai].attr;
    // perf pairs an event with the first of the other file's with the same type and config.
    std::vector<const analysis::Hist*> others;
    for (size_t f = 1; f < files.size(); ++f) {
      const analysis::Hist* match = nullptr;
      const auto& attrs = files[f].reader->attrs();
      for (size_t j = 0; j < attrs.size() && j < files[f].hists.size(); ++j) {
        if (attrs[j].attr.type == attr.type && attrs[j].attr.config == attr.config) {
          match = &files[f].hists[j];
          break;
        }
      }
      others.push_back(match);
    }
    analysis::Diff diff = analysis::diff_hists(files[0].hists[ai], others, options);
    output::DiffSection section;
    section.event_name = base_reader.attrs()[ai].name;
    section.first = first;
    section.paths = paths;
    section.keys = keys;
    section.compute = options.compute;
    output::print_diff_section(stdout, section, diff, [&](size_t file, int32_t tid) -> const std::string* {
      const session::Thread* t = files[file].machine->find_thread(tid);
      return t ? t->comm() : nullptr;
    });
    first = false;
  }
  std::fflush(stdout);

  int status = 0;
  for (analysis::EventHists& f : files) {
    for (const auto& w : f.symbolizer->take_warnings()) fmt::print(stderr, "tperf diff: warning: {}\n", w);
    status = std::max(status, report_reader_problems("diff", *f.reader));
    for (const auto& p : f.problems) {
      fmt::print(stderr, "tperf diff: {}: {}\n", f.reader->path(), p);
      status = 2;
    }
  }
  return status;
}

}  // namespace

void add_diff_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<DiffCliOptions>();
  auto* cmd = app.add_subcommand("diff", "Compare profiles, like perf diff: baseline file first, then the new one(s)");
  cmd->add_option("files", opt->files, "perf.data files (default perf.data.old perf.data; one: perf.data.old vs it)");
  cmd->add_option("-s,--sort", opt->sort, "sort keys: comm, pid, tid, dso, sym, symoff, cpu (default dso,sym)");
  cmd->add_option("-c,--compute", opt->compute, "delta, delta-abs (default), ratio or wdiff:W1,W2");
  cmd->add_flag("-f,--force", opt->force, "accepted for perf compatibility");
  opt->symbols.add_to(*cmd);
  cmd->callback([opt, &status] {
    status = run_guarded("diff", opt->files.empty() ? "perf.data" : opt->files.back(), [&] { return run_diff(*opt); });
  });
}

}  // namespace tperf::cli
