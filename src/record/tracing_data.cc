#include "record/tracing_data.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

#include "perfdata/abi.h"

namespace tperf::record {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {} (needed for tracepoint events)", path));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

void put_bytes(std::vector<uint8_t>& out, const std::string& s) { out.insert(out.end(), s.begin(), s.end()); }

}  // namespace

std::vector<uint8_t> build_tracing_data(const std::vector<EventSpec>& events) {
  std::string dir = tracefs_dir();
  if (dir.empty()) throw std::runtime_error("tracefs is not mounted (needed for tracepoint events)");
  // System -> event names, in the order first seen.
  std::vector<std::string> systems;
  std::map<std::string, std::vector<std::string>> by_system;
  for (const auto& e : events) {
    if (!e.is_tracepoint()) continue;
    std::string base = e.name.substr(0, e.name.find(':', e.name.find(':') + 1));
    std::string sys = base.substr(0, base.find(':')), name = base.substr(base.find(':') + 1);
    if (!by_system.count(sys)) systems.push_back(sys);
    auto& names = by_system[sys];
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }

  std::vector<uint8_t> out;
  out.reserve(1 << 16);
  put_bytes(out, std::string("\x17\x08" "Dtracing", 10));
  put_bytes(out, std::string("0.6", 4));  // version string with its NUL
  out.push_back(0);                       // little-endian (x86, arm64 as perf runs them)
  out.push_back(static_cast<uint8_t>(sizeof(long)));
  put<uint32_t>(out, static_cast<uint32_t>(::sysconf(_SC_PAGESIZE)));

  std::string header_page = slurp(dir + "/events/header_page");
  put_bytes(out, std::string("header_page", 12));
  put<uint64_t>(out, header_page.size());
  put_bytes(out, header_page);
  std::string header_event = slurp(dir + "/events/header_event");
  put_bytes(out, std::string("header_event", 13));
  put<uint64_t>(out, header_event.size());
  put_bytes(out, header_event);

  put<uint32_t>(out, 0);  // ftrace's own events: none recorded
  // The "ftrace" system is stored above by perf; everything else per system.
  put<uint32_t>(out, static_cast<uint32_t>(systems.size()));
  for (const auto& sys : systems) {
    put_bytes(out, sys);
    out.push_back(0);
    const auto& names = by_system[sys];
    put<uint32_t>(out, static_cast<uint32_t>(names.size()));
    for (const auto& name : names) {
      std::string format = slurp(fmt::format("{}/events/{}/{}/format", dir, sys, name));
      put<uint64_t>(out, format.size());
      put_bytes(out, format);
    }
  }
  put<uint32_t>(out, 0);  // kallsyms
  put<uint32_t>(out, 0);  // printk formats
  put<uint64_t>(out, 0);  // saved cmdlines
  return out;
}

}  // namespace tperf::record
