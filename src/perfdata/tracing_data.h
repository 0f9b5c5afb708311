// The TRACING_DATA payload (file-mode feature, pipe-mode HEADER_TRACING_DATA record): what perf
// stored of tracefs when it recorded tracepoints (trace-cmd's layout). Read here: the event
// format files, for the names perf gives tracepoint events that no EVENT_DESC or EVENT_UPDATE
// names, and for the field layout of an event's raw data (off-CPU analysis of sched_switch).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tperf::perfdata {

// Tracepoint id -> "system:name". `offset` is the payload's file offset, for errors. Throws
// FormatError (with the offset of the bad field) when the payload is malformed; the byte order
// of its sizes is the payload's own (its endianness byte).
std::map<uint64_t, std::string> tracepoint_names(std::span<const uint8_t> data, uint64_t offset);

// One event format file of the payload: its system ("sched"), its text ("name: sched_switch\nID:
// ...\nformat:\n\tfield:..."), a view into `data`, and the text's file offset.
struct TracingEventFormat {
  std::string_view system;
  std::string_view text;
  uint64_t offset = 0;
};
// Every section of the payload (views into it), for a reader that evaluates the formats
// (output/trace_format): the layout of trace-cmd's tracing.dat header, version 0.5 and 0.6.
struct TracingDataLayout {
  std::string_view version;  // "0.6"
  bool big_endian = false;
  uint8_t long_size = 0;
  uint32_t page_size = 0;
  std::string_view header_page;                  // the ring buffer page header's format
  std::vector<TracingEventFormat> ftrace_formats;  // system "ftrace"
  std::vector<TracingEventFormat> events;
  std::string_view kallsyms;        // "ADDR TYPE NAME" lines; empty when perf left them out
  std::string_view printk_formats;  // "ADDR : \"FORMAT\"" lines
  std::string_view saved_cmdlines;  // "PID COMM" lines (version 0.6 and later)
};
// Throws FormatError (with the offset of the bad field) when the payload is malformed; sections
// after the event formats that are missing or cut short are left empty, as perf reads them.
TracingDataLayout tracing_data_layout(std::span<const uint8_t> data, uint64_t offset);

// Every event format file of the payload, in its order. Throws FormatError (with the offset of
// the bad field) when the payload is malformed before the last of them.
std::vector<TracingEventFormat> tracing_data_event_formats(std::span<const uint8_t> data, uint64_t offset);

// The format text of tracepoint `system:name`, or nullopt when the payload does not hold it.
// Throws as tracing_data_event_formats.
std::optional<std::string> tracing_data_event_format(std::span<const uint8_t> data, std::string_view system,
                                                     std::string_view name, uint64_t offset);

}  // namespace tperf::perfdata
