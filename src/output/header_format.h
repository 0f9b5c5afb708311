// `tperf header`'s text: what `perf report --header-only` (perf 6.1) prints for a file, line
// for line, then tperf's own section: records by type, unknown record types and feature bits, and
// every warning the reader raised.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tperf::perfdata {
class Reader;
struct EventAttr;
}

namespace tperf::output {

// What perf script made of a pipe's ATTR records as they arrived, before any feature: the name
// each event got from its attr (by attr index; "" none), or the message of the output-field
// check that failed (see script_names_on_arrival()).
struct ArrivedEventNames {
  std::vector<std::string> names;
  std::string error;
};

struct HeaderFormatOptions {
  bool full = false;       // -I: also the features perf prints only with --header-only -I
  bool no_extras = false;  // only perf's block, without tperf's section
  // Whether the records of a file (not a pipe) are read after its header, for tperf's section and
  // the damage they may hold. `report --header` leaves them to the report, as perf does.
  bool file_records = true;
  // The "# ========" block (a file's features in it), and a pipe's features after it (perf prints
  // those while it reads the stream: whenever --header, --header-only or -I asked for them, -q
  // or not, but not for --tasks).
  bool block = true;
  bool pipe_features = true;
  // perf script's handling of a pipe's ATTR records, run once they are read (at the first record
  // of another type), before any feature. The EVENT_DESC feature does not replace the names it
  // gives, so the group line shows them until an EVENT_UPDATE renames the event; an error ends
  // the reading there. Unset: nothing is done (perf report).
  std::function<ArrivedEventNames(const std::vector<perfdata::EventAttr>&)> on_pipe_attrs;
};

// Prints the header block of `reader`'s file to standard output, reading every record (pipe-mode
// features arrive as records; the record counts need them all; a file's only with
// `file_records`). `input`: the path the user gave
// ("-" for standard input), whose mtime perf shows as "captured on". Returns the message of the
// damage that stopped the reading, "" when the file was read to its end.
std::string print_header(perfdata::Reader& reader, const std::string& input, const HeaderFormatOptions& opt);

}  // namespace tperf::output
