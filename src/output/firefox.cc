#include "output/firefox.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <unordered_map>

#include "output/json_text.h"

namespace tperf::output {

namespace {

using analysis::kNoIndex;

constexpr uint32_t kCategoryUser = 0, kCategoryKernel = 1;

// One Gecko thread's tables, interned as the samples come.
struct GeckoThread {
  int32_t pid = 0, tid = 0;
  std::string name;
  std::vector<std::string> strings;
  std::unordered_map<std::string, uint32_t> string_index;
  struct Frame {
    uint32_t location;
    uint32_t line;
    uint32_t category;
  };
  std::vector<Frame> frames;
  std::unordered_map<std::string, uint32_t> frame_index;  // by location string and line
  std::vector<std::pair<uint32_t, uint32_t>> stacks;       // (prefix or kNoIndex, frame)
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> stack_index;
  std::unordered_map<uint32_t, uint32_t> of_profile_stack;  // profile stack node -> stack row
  std::vector<std::pair<uint32_t, uint64_t>> samples;       // (stack row or kNoIndex, time)

  uint32_t string(const std::string& s) {
    auto [it, fresh] = string_index.try_emplace(s, static_cast<uint32_t>(strings.size()));
    if (fresh) strings.push_back(s);
    return it->second;
  }
};

std::string location_of(const analysis::Profile& p, const analysis::ProfileFrame& f) {
  const std::string& fn = f.function == kNoIndex ? std::string("[unknown]") : p.functions[f.function].name;
  const std::string dso = f.mapping == kNoIndex ? "[unknown]" : p.mappings[f.mapping].short_name;
  return fmt::format("{} (in {})", fn, dso);
}

// The stack row of a profile stack node in `t`, adding its callers first (without recursion:
// unwound stacks can be thousands of frames deep).
uint32_t stack_row(const analysis::Profile& p, GeckoThread& t, uint32_t node) {
  std::vector<uint32_t> missing;  // nodes without a row, innermost first
  uint32_t prefix = kNoIndex;
  for (uint32_t n = node; n != kNoIndex; n = p.stacks[n].parent) {
    if (auto it = t.of_profile_stack.find(n); it != t.of_profile_stack.end()) {
      prefix = it->second;
      break;
    }
    missing.push_back(n);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    const analysis::ProfileFrame& f = p.frames[p.stacks[*it].frame];
    std::string location = location_of(p, f);
    const std::string frame_key = fmt::format("{}\n{}", location, f.line);
    auto [fit, fresh_frame] = t.frame_index.try_emplace(frame_key, static_cast<uint32_t>(t.frames.size()));
    if (fresh_frame) t.frames.push_back({t.string(location), f.line, f.kernel ? kCategoryKernel : kCategoryUser});
    auto [sit, fresh_stack] = t.stack_index.try_emplace({prefix, fit->second}, static_cast<uint32_t>(t.stacks.size()));
    if (fresh_stack) t.stacks.emplace_back(prefix, fit->second);
    t.of_profile_stack.emplace(*it, sit->second);
    prefix = sit->second;
  }
  return prefix;
}

void append_nullable(std::string& out, uint32_t v) {
  if (v == kNoIndex) {
    out += "null";
  } else {
    out += fmt::format_int(v).c_str();
  }
}

std::string info_value(const analysis::Profile& p, const std::string& key) {
  for (const auto& [k, v] : p.info) {
    if (k == key) return v;
  }
  return "";
}

}  // namespace

std::string breakpad_id(const std::string& hex) {
  if (hex.empty()) return "";
  std::string b = hex.substr(0, 32);
  b.resize(32, '0');
  for (char& c : b) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto byte = [&](int i) { return b.substr(static_cast<size_t>(2 * i), 2); };
  std::string out;
  for (int i : {3, 2, 1, 0, 5, 4, 7, 6}) out += byte(i);
  out += b.substr(16);
  out += '0';
  return out;
}

std::string encode_firefox(const analysis::Profile& p) {
  // Threads by (thread, event), first met first.
  std::map<std::pair<uint32_t, uint32_t>, GeckoThread> threads;
  auto thread_of = [&](uint32_t thread, uint32_t event) -> GeckoThread& {
    auto [it, fresh] = threads.try_emplace({thread, event});
    if (fresh) {
      const analysis::ProfileThread& pt = p.threads[thread];
      it->second.pid = pt.pid;
      it->second.tid = pt.tid;
      it->second.name = p.events.size() > 1 ? fmt::format("{} {}", pt.comm, p.events[event].name) : pt.comm;
    }
    return it->second;
  };
  if (!p.samples.empty()) {
    for (const analysis::ProfileSample& s : p.samples) {
      GeckoThread& t = thread_of(s.thread, s.event);
      t.samples.emplace_back(stack_row(p, t, s.stack), s.time - p.first_time);
    }
  } else {
    // Without the time line every sample of a stack sits at time 0.
    for (const analysis::ProfileCount& c : p.counts) {
      GeckoThread& t = thread_of(c.thread, c.event);
      const uint32_t row = stack_row(p, t, c.stack);
      for (uint64_t i = 0; i < c.samples; ++i) t.samples.emplace_back(row, 0);
    }
  }

  // The sampling interval: the first event's mean period when it is a time.
  double interval_ms = 1.0;
  if (!p.events.empty() && p.events[0].unit == "nanoseconds") {
    uint64_t n = 0, w = 0;
    for (const analysis::ProfileCount& c : p.counts) {
      if (c.event == 0) {
        n += c.samples;
        w += c.weight;
      }
    }
    if (n > 0 && w > 0) interval_ms = static_cast<double>(w) / static_cast<double>(n) / 1e6;
  }

  std::string out;
  out += "{\"meta\":{";
  out += fmt::format("\"interval\":{},", interval_ms);
  out += "\"processType\":0,\"product\":";
  const std::string host = info_value(p, "hostname");
  append_json_string(out, host.empty() ? "tperf" : "tperf (" + host + ")");
  out += ",\"stackwalk\":1,\"debug\":0,\"gcpoison\":0,\"asyncstack\":1,\"startTime\":0,\"shutdownTime\":null,"
         "\"version\":24,\"presymbolicated\":true,\"markerSchema\":[],"
         "\"categories\":[{\"name\":\"User\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
         "{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]}]},";

  const std::string arch = info_value(p, "arch");
  out += "\"libs\":[";
  for (size_t i = 0; i < p.mappings.size(); ++i) {
    const analysis::ProfileMapping& m = p.mappings[i];
    if (i) out += ',';
    out += fmt::format("{{\"start\":{},\"end\":{},\"offset\":{},\"name\":", m.start, m.limit, m.offset);
    append_json_string(out, m.short_name);
    out += ",\"path\":";
    append_json_string(out, m.path);
    out += ",\"debugName\":";
    append_json_string(out, m.short_name);
    out += ",\"debugPath\":";
    append_json_string(out, m.path);
    out += ",\"breakpadId\":";
    append_json_string(out, breakpad_id(m.build_id));
    out += ",\"codeId\":";
    if (m.build_id.empty()) {
      out += "null";
    } else {
      append_json_string(out, m.build_id);
    }
    out += ",\"arch\":";
    append_json_string(out, arch);
    out += '}';
  }
  out += "],\"threads\":[";

  bool first_thread = true;
  for (auto& [key, t] : threads) {
    out += first_thread ? "{" : ",{";
    first_thread = false;
    out += fmt::format("\"tid\":{},\"pid\":{},\"name\":", t.tid, t.pid);
    append_json_string(out, t.name);
    out += ",\"processType\":\"default\",\"registerTime\":0,\"unregisterTime\":null,"
           "\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,\"category\":4,\"data\":5},"
           "\"data\":[]},"
           "\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"responsiveness\":2},\"data\":[";
    for (size_t i = 0; i < t.samples.size(); ++i) {
      out += i ? ",[" : "[";
      append_nullable(out, t.samples[i].first);
      out += ',';
      append_json_ms(out, t.samples[i].second);
      out += ",0]";
    }
    out += "]},\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
           "\"implementation\":3,\"optimizations\":4,\"line\":5,\"column\":6,\"category\":7,\"subcategory\":8},"
           "\"data\":[";
    for (size_t i = 0; i < t.frames.size(); ++i) {
      const GeckoThread::Frame& f = t.frames[i];
      out += fmt::format("{}[{},false,0,null,null,", i ? "," : "", f.location);
      if (f.line) {
        out += fmt::format_int(f.line).c_str();
      } else {
        out += "null";
      }
      out += fmt::format(",null,{},0]", f.category);
    }
    out += "]},\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[";
    for (size_t i = 0; i < t.stacks.size(); ++i) {
      out += i ? ",[" : "[";
      append_nullable(out, t.stacks[i].first);
      out += fmt::format(",{}]", t.stacks[i].second);
    }
    out += "]},\"stringTable\":[";
    for (size_t i = 0; i < t.strings.size(); ++i) {
      if (i) out += ',';
      append_json_string(out, t.strings[i]);
    }
    out += "]}";
  }
  out += "],\"processes\":[],\"pausedRanges\":[]}\n";
  return out;
}

}  // namespace tperf::output
