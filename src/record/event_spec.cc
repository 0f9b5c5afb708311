#include "record/event_spec.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <stdexcept>
#include <utility>

#include "perfdata/abi.h"

namespace tperf::record {

namespace {

using namespace perfdata;

struct NamedEvent {
  const char* name;
  uint32_t type;
  uint64_t config;
};

// perf's symbolic names (tools/perf/util/parse-events.c tables, restated).
constexpr NamedEvent kNamedEvents[] = {
    {"cpu-clock", kTypeSoftware, kSwCpuClock},
    {"task-clock", kTypeSoftware, kSwTaskClock},
    {"page-faults", kTypeSoftware, kSwPageFaults},
    {"faults", kTypeSoftware, kSwPageFaults},
    {"minor-faults", kTypeSoftware, kSwPageFaultsMin},
    {"major-faults", kTypeSoftware, kSwPageFaultsMaj},
    {"context-switches", kTypeSoftware, kSwContextSwitches},
    {"cs", kTypeSoftware, kSwContextSwitches},
    {"cpu-migrations", kTypeSoftware, kSwCpuMigrations},
    {"migrations", kTypeSoftware, kSwCpuMigrations},
    {"alignment-faults", kTypeSoftware, kSwAlignmentFaults},
    {"emulation-faults", kTypeSoftware, kSwEmulationFaults},
    {"dummy", kTypeSoftware, kSwDummy},
    {"bpf-output", kTypeSoftware, kSwBpfOutput},
    {"cgroup-switches", kTypeSoftware, kSwCgroupSwitches},
    {"cycles", kTypeHardware, 0},
    {"cpu-cycles", kTypeHardware, 0},
    {"instructions", kTypeHardware, 1},
    {"cache-references", kTypeHardware, 2},
    {"cache-misses", kTypeHardware, 3},
    {"branch-instructions", kTypeHardware, 4},
    {"branches", kTypeHardware, 4},
    {"branch-misses", kTypeHardware, 5},
    {"bus-cycles", kTypeHardware, 6},
    {"stalled-cycles-frontend", kTypeHardware, 7},
    {"idle-cycles-frontend", kTypeHardware, 7},
    {"stalled-cycles-backend", kTypeHardware, 8},
    {"idle-cycles-backend", kTypeHardware, 8},
    {"ref-cycles", kTypeHardware, 9},
};

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void apply_modifiers(EventSpec& e, const std::string& mods) {
  if (mods.empty()) return;  // perf's defaults: everything, guest excluded
  // perf's modifier rules: naming a privilege level excludes the ones not named; :u alone also
  // excludes the guest; H and G choose between host and guest.
  bool excluded = false, gh = false;
  bool eu = false, ek = false, eh = false, eG = false, eH = false;
  for (char c : mods) {
    switch (c) {
      case 'u':
        if (!excluded) excluded = eu = ek = eh = true;
        if (!gh) eG = true;
        eu = false;
        break;
      case 'k':
        if (!excluded) excluded = eu = ek = eh = true;
        ek = false;
        break;
      case 'h':
        if (!excluded) excluded = eu = ek = eh = true;
        eh = false;
        break;
      case 'G':
        if (!gh) gh = eG = eH = true;
        eG = false;
        break;
      case 'H':
        if (!gh) gh = eG = eH = true;
        eH = false;
        break;
      case 'p': ++e.precise_ip; break;
      case 'P': e.precise_ip = 3; break;
      default:
        throw std::invalid_argument(fmt::format("event '{}': unknown modifier '{}' (known: u k h p P H G)", e.name, c));
    }
  }
  if (e.precise_ip > 3) throw std::invalid_argument(fmt::format("event '{}': at most :ppp", e.name));
  e.exclude_user = eu;
  e.exclude_kernel = ek;
  e.exclude_hv = eh;
  e.exclude_guest = eG;
  e.exclude_host = eH;
}

}  // namespace

bool EventSpec::is_tracepoint() const { return type == kTypeTracepoint; }
bool EventSpec::needs_pmu() const { return type == kTypeHardware || type == kTypeHwCache || type == kTypeRaw; }

std::string tracefs_dir() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (is_dir(std::string(dir) + "/events")) return dir;
  }
  return "";
}

bool has_cpu_pmu() {
  for (const char* dir : {"/sys/bus/event_source/devices/cpu", "/sys/bus/event_source/devices/cpu_core",
                          "/sys/bus/event_source/devices/cpu_atom", "/sys/bus/event_source/devices/armv8_pmuv3_0"}) {
    if (is_dir(dir)) return true;
  }
  return false;
}

EventSpec parse_event(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty event name");
  EventSpec e;
  e.name = text;
  // "sys:name[:mods]" is a tracepoint; "name[:mods]" a symbolic or raw event.
  std::string base = text, mods;
  auto first = text.find(':');
  auto second = first == std::string::npos ? std::string::npos : text.find(':', first + 1);
  bool tracepoint = false;
  if (first != std::string::npos) {
    std::string head = text.substr(0, first);
    bool named = false;
    for (const auto& n : kNamedEvents) named = named || head == n.name;
    bool raw = head.size() > 1 && head[0] == 'r' && head.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos;
    if (named || raw) {
      base = head;
      mods = text.substr(first + 1);
    } else {
      tracepoint = true;
      base = second == std::string::npos ? text : text.substr(0, second);
      if (second != std::string::npos) mods = text.substr(second + 1);
    }
  }
  if (tracepoint) {
    auto colon = base.find(':');
    std::string sys = base.substr(0, colon), name = base.substr(colon + 1);
    if (sys.empty() || name.empty() || sys.find('/') != std::string::npos || name.find('/') != std::string::npos ||
        sys[0] == '.' || name[0] == '.') {
      throw std::invalid_argument(fmt::format("event '{}': not a tracepoint name (subsystem:event)", text));
    }
    std::string dir = tracefs_dir();
    if (dir.empty()) {
      throw std::invalid_argument(fmt::format(
          "event '{}': tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)", text));
    }
    std::string id_path = fmt::format("{}/events/{}/{}/id", dir, sys, name);
    std::ifstream in(id_path);
    uint64_t id = 0;
    if (!(in >> id)) {
      throw std::invalid_argument(fmt::format("event '{}': unknown tracepoint ({} is not readable)", text, id_path));
    }
    e.type = kTypeTracepoint;
    e.config = id;
  } else {
    bool found = false;
    for (const auto& n : kNamedEvents) {
      if (base == n.name) {
        e.type = n.type;
        e.config = n.config;
        found = true;
        break;
      }
    }
    if (!found && base.size() > 1 && base[0] == 'r' &&
        base.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos && base.size() <= 17) {
      e.type = kTypeRaw;
      e.config = std::stoull(base.substr(1), nullptr, 16);
      found = true;
    }
    if (!found) {
      throw std::invalid_argument(fmt::format(
          "event '{}': unknown event (software: cpu-clock, task-clock, page-faults, minor-faults, major-faults, "
          "context-switches, cpu-migrations, dummy; tracepoints: subsystem:name as in {}/events)",
          text, tracefs_dir().empty() ? "/sys/kernel/tracing" : tracefs_dir()));
    }
  }
  apply_modifiers(e, mods);
  return e;
}

std::vector<EventSpec> parse_event_list(const std::string& text) {
  std::vector<EventSpec> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string one = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!one.empty()) out.push_back(parse_event(one));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) throw std::invalid_argument(fmt::format("no event in '{}'", text));
  return out;
}

}  // namespace tperf::record
