// `perf report --stdio` text (perf 6.1 layout): the preamble, one section per event with its
// "# Samples"/"# Event count" lines, the column header sized to the widest value, and one row
// per hist entry (Children/Self or Overhead, Samples, Period, then the sort keys).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/callchain_spec.h"
#include "analysis/hist.h"

namespace tperf::output {

struct ReportColumns {
  bool children = false;      // Children and Self instead of Overhead
  bool show_samples = false;  // -n
  bool show_period = false;   // --show-total-period
  bool show_cpu_utilization = false;  // --show-cpu-utilization: sys and usr after the overhead
  double percent_limit = 0;   // --percent-limit: rows below are not printed
  bool graph = false;         // draw each entry's callchain tree (-g graph)
  bool folded = false;        // ... as folded lines instead (-g folded)
  bool flat = false;          // ... as flat chains instead (-g flat)
  bool fractal = false;       // -g fractal: graph percentages of the parent branch
  bool branch_counts = false; // --branch-history on branch stacks: frames with their branch counts
  double graph_min_percent = 0.5;  // -g graph,THRESHOLD
  analysis::CallchainSpec::Value graph_value = analysis::CallchainSpec::Value::kPercent;  // -g's value word
  unsigned long print_limit = 0;  // -g's print limit (0: none)
  bool callee_order = false;  // -g callee: with Children, equal entries of one thread shallowest first
  // Columns perf leaves out because a single-value filter fixes them (--comm X, --dso X).
  bool elide_comm = false;
  bool elide_dso = false;
  bool quiet = false;  // -q: no '#' lines (the section's counts and the column header)
  // An event group shown side by side (--group): each member's total period, the leader's
  // first; each value column then shows one value per member. Empty: a single event.
  std::vector<uint64_t> member_totals;
  // perf says "of events" for a group leader's section (with or without --group).
  bool plural_events = false;
  bool elide_sym = false;   // -S X
  // --percentage relative: the "# Samples"/"# Event count" lines and every percentage are of the
  // samples the filters kept, not of all.
  bool relative = false;
  std::string time_slices;  // --time as given, which perf names in each "# Samples" line
  // -F: the columns in this order instead of the default layout, the rows in `order` (the --sort
  // keys, then the -F fields). Empty: perf's default columns and order.
  std::vector<analysis::ReportField> fields;
  std::vector<analysis::ReportField> order;
  // Threads that format the rows (-j): 0 = one per CPU. The text is the same for every count.
  unsigned jobs = 1;
  // --hierarchy: the sort keys as levels of a tree (perf's hierarchy mode), values are Self.
  bool hierarchy = false;
  // -t/--field-separator: the columns joined by it instead of two spaces, values left-aligned
  // after one space, no rule under the column names; in key cells each occurrence of its first
  // character becomes '.'. Empty: none.
  std::string field_sep;
};

// The current comm of a thread (the Pid:Command column), nullptr when unknown.
using ThreadCommFn = std::function<const std::string*(int32_t tid)>;

// The first lines alone: all perf prints when no sample is left to show.
void print_report_header_hint(std::FILE* out);

// "# To display the perf.data header info..." (`hint`: false after --header, whose header block
// takes its place), the filter lines ("# comm: NAME" for a single --comm, "# dso: NAME" for a
// single --dso) and the lost-samples block.
void print_report_preamble(std::FILE* out, uint64_t lost_samples, const std::vector<std::string>& filter_lines = {},
                           bool hint = true);

// One event's section. `nr_samples` and `total_period` are the event's totals (the percentages'
// base); the hist may hold fewer samples when filters dropped some.
void print_report_section(std::FILE* out, std::string_view event_name, uint64_t nr_samples, uint64_t total_period,
                          const analysis::Hist& hist, const ReportColumns& columns, const ThreadCommFn& thread_comm);

// Width perf gives an unresolved address (0x + 16 digits) in the sym column, and the dso column
// width it reserves when any entry lacks a symbol.
inline constexpr size_t kUnresolvedWidth = 16;

// The cells of the key columns as perf prints them (report and diff): "[.] name" or the address
// ("[k] 0xffff..."), "[.] name+0x12", and perf's three-digit cpu.
std::string address_text(char level, uint64_t addr);
std::string sym_text(const analysis::HistEntry& e);
// The same, appended to `out` (a report's rows: one scratch string for all, no format parsed).
void append_address_text(std::string& out, char level, uint64_t addr);
void append_sym_text(std::string& out, const analysis::HistEntry& e);
// How wide the Symbol column must be for `e` (perf's hists__calc_col_len): "[k] " and the name for
// a symbol, whatever is printed past it (" (inlined)", a data object's "+0x..."); the address
// text for an entry without one.
size_t sym_column_width(const analysis::HistEntry& e);
std::string symoff_text(const analysis::HistEntry& e);
std::string cpu_text(int32_t cpu);

// perf's sample count in the section line: 1K for 1,001..999,999, 3 followed by a space for 3.
std::string abbreviated_count(uint64_t n);

}  // namespace tperf::output
