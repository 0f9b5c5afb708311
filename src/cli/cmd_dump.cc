// `tperf dump`: one line per record in file order (offset, size, type and decoded fields), in
// the spirit of `perf report -D`; `--callchain` adds the chain of each sample on indented lines
// (output/dump_format.h).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "output/dump_format.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"

namespace tperf::cli {

namespace {

using namespace perfdata;

struct DumpOptions {
  InputOption input;
  output::DumpFormatOptions format;
};

int run_dump(const DumpOptions& opt) {
  auto reader = Reader::open(opt.input.get());
  uint64_t combined_type = 0;
  Record rec;
  Sample sample;
  std::string line;
  std::FILE* out = stdout;
  while (reader->next(rec)) {
    line.clear();
    if (rec.type == kRecordHeaderAttr || combined_type == 0) {
      combined_type = 0;
      for (const auto& ea : reader->attrs()) combined_type |= ea.attr.sample_type;
    }
    output::append_dump_line(*reader, rec, combined_type, opt.format, sample, line);
    std::fwrite(line.data(), 1, line.size(), out);
  }
  return report_reader_problems("dump", *reader);
}

}  // namespace

void add_dump_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<DumpOptions>();
  auto* cmd = app.add_subcommand("dump", "Print every record: offset, size, type and decoded fields (like perf report -D)");
  opt->input.add_to(*cmd);
  cmd->add_flag("--callchain", opt->format.callchain, "print sample callchains");
  cmd->callback([opt, &status] { status = run_guarded("dump", opt->input.get(), [&] { return run_dump(*opt); }); });
}

}  // namespace tperf::cli
