// What the user asked to sample (-e): perf's event names (software events, hardware events,
// tracepoints such as sched:sched_switch) with perf's modifiers (:u :k :p :H :G), turned into the
// type/config/exclude bits of a perf_event_attr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tperf::record {

struct EventSpec {
  std::string name;  // as given, modifiers included ("cpu-clock:u"); the EVENT_DESC name
  uint32_t type = 0;
  uint64_t config = 0;
  bool exclude_user = false;
  bool exclude_kernel = false;
  bool exclude_hv = false;
  bool exclude_guest = true;  // perf's default (H) unless :G
  bool exclude_host = false;
  unsigned precise_ip = 0;
  bool is_tracepoint() const;
  bool needs_pmu() const;  // hardware, cache and raw events
};

// Where tracefs is mounted (/sys/kernel/tracing or /sys/kernel/debug/tracing), "" if neither.
std::string tracefs_dir();

// Parses one event ("cpu-clock", "page-faults:u", "sched:sched_switch", "cycles:pp"). Throws
// std::invalid_argument with a message naming the event (unknown name, unknown modifier, unknown
// tracepoint) — hardware events are accepted here; has_cpu_pmu() tells whether they can open.
EventSpec parse_event(const std::string& text);
// A comma-separated -e list; a tracepoint name with a comma is not a thing, so split on commas.
std::vector<EventSpec> parse_event_list(const std::string& text);

// True when the machine has a core PMU (/sys/bus/event_source/devices/cpu or cpu_core/cpu_atom).
bool has_cpu_pmu();

}  // namespace tperf::record
