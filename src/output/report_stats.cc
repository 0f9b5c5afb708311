#include "output/report_stats.h"

#include <fmt/format.h>

#include <string>

#include "output/script_format.h"
#include "perfdata/attr.h"

namespace tperf::output {

namespace {

// perf's line for a count; a share of all records after it, except for the total itself and in
// an event's own block.
void print_count(std::FILE* out, std::string_view name, uint64_t n, uint64_t total) {
  if (total) {
    fmt::print(out, "{:>16} events: {:>10}  ({:4.1f}%)\n", name, n, 100.0 * static_cast<double>(n) / static_cast<double>(total));
  } else {
    fmt::print(out, "{:>16} events: {:>10}\n", name, n);
  }
}

}  // namespace

void print_report_stats(std::FILE* out, const perfdata::Reader& reader, const analysis::RecordCensus& census) {
  const perfdata::ReaderStats& st = reader.stats();
  const bool aux = reader.header().features.test(perfdata::kFeatAuxtrace);
  fmt::print(out, "\nAggregated stats:{}\n",
             aux ? " (excludes AUX area (e.g. instruction trace) decoded / synthesized events)" : "");
  print_count(out, "TOTAL", st.records, 0);
  // Types perf has no name for are left out, as perf leaves them.
  for (uint32_t t = 1; t < st.by_type.size(); ++t) {
    if (st.by_type[t] && std::string_view(perfdata::record_type_name(t)) != "UNKNOWN") {
      print_count(out, perfdata::record_type_name(t), st.by_type[t], st.records);
    }
  }
  const auto& events = census.events;
  for (size_t i = 0; i < events.size() && i < reader.attrs().size(); ++i) {
    if (!events[i].samples) continue;  // perf skips the empty ones (a dummy event)
    // A pipe's events are named from their attrs with the modifiers of their exclude bits (perf
    // names them so before the EVENT_UPDATE records that carry their names come in); a file's
    // keep the names it gives.
    perfdata::EventAttr ea = reader.attrs()[i];
    if (reader.is_pipe()) {
      ea.name = perfdata::default_event_name(ea.attr);
      ea.named = false;
    }
    fmt::print(out, "{} stats:\n", script_event_name(ea));
    print_count(out, "SAMPLE", events[i].samples, 0);
    if (events[i].lost_samples) print_count(out, "LOST_SAMPLES", events[i].lost_samples, 0);
  }
}

}  // namespace tperf::output
