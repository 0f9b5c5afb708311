#include "output/speedscope.h"

#include <fmt/format.h>

#include <map>
#include <tuple>
#include <unordered_map>

#include "output/json_text.h"

namespace tperf::output {

namespace {

using analysis::kNoIndex;

// The speedscope frames: one per (name, file, line); the profile's frames (one per address) map
// onto them.
struct SharedFrames {
  std::map<std::tuple<std::string, std::string, uint32_t>, uint32_t> index;
  std::vector<const std::tuple<std::string, std::string, uint32_t>*> frames;
  std::vector<uint32_t> of_profile_frame;

  explicit SharedFrames(const analysis::Profile& p) : of_profile_frame(p.frames.size()) {
    for (size_t i = 0; i < p.frames.size(); ++i) {
      const analysis::ProfileFrame& f = p.frames[i];
      std::string name = f.function == kNoIndex ? "[unknown]" : p.functions[f.function].name;
      std::string file = f.file;
      if (file.empty() && f.function != kNoIndex) file = p.functions[f.function].file;
      if (file.empty() && f.mapping != kNoIndex) file = p.mappings[f.mapping].path;
      auto [it, fresh] = index.try_emplace({std::move(name), std::move(file), f.line},
                                           static_cast<uint32_t>(frames.size()));
      if (fresh) frames.push_back(&it->first);
      of_profile_frame[i] = it->second;
    }
  }
};

// speedscope's units: the time units and "none".
const char* unit_of(const analysis::ProfileEvent& e) { return e.unit == "nanoseconds" ? "nanoseconds" : "none"; }

struct ThreadEventSamples {
  std::vector<uint32_t> stacks;
  std::vector<uint64_t> weights;
  uint64_t total = 0;
};

}  // namespace

std::string encode_speedscope(const analysis::Profile& p, const std::string& name) {
  SharedFrames shared(p);

  // Samples per (thread, event), in time order when the profile has the time line.
  std::map<std::pair<uint32_t, uint32_t>, ThreadEventSamples> profiles;
  if (!p.samples.empty()) {
    for (const analysis::ProfileSample& s : p.samples) {
      ThreadEventSamples& t = profiles[{s.thread, s.event}];
      t.stacks.push_back(s.stack);
      t.weights.push_back(s.weight);
      t.total += s.weight;
    }
  } else {
    for (const analysis::ProfileCount& c : p.counts) {
      ThreadEventSamples& t = profiles[{c.thread, c.event}];
      t.stacks.push_back(c.stack);
      t.weights.push_back(c.weight);
      t.total += c.weight;
    }
  }

  std::string out;
  out += "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"tperf\",\"name\":";
  append_json_string(out, name);
  out += ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[";
  for (size_t i = 0; i < shared.frames.size(); ++i) {
    const auto& [fname, file, line] = *shared.frames[i];
    out += i ? ",{\"name\":" : "{\"name\":";
    append_json_string(out, fname);
    if (!file.empty()) {
      out += ",\"file\":";
      append_json_string(out, file);
    }
    if (line != 0) out += fmt::format(",\"line\":{}", line);
    out += '}';
  }
  out += "]},\"profiles\":[";

  // A stack's frame list, root first, as JSON text: written once per distinct stack.
  std::unordered_map<uint32_t, std::string> stack_text;
  auto stack_json = [&](uint32_t stack) -> const std::string& {
    auto [it, fresh] = stack_text.try_emplace(stack);
    if (fresh) {
      std::string& s = it->second;
      s += '[';
      if (stack != kNoIndex) {
        bool first = true;
        for (uint32_t fi : p.frames_root_first(stack)) {
          if (!first) s += ',';
          first = false;
          s += fmt::format_int(shared.of_profile_frame[fi]).c_str();
        }
      }
      s += ']';
    }
    return it->second;
  };

  bool first_profile = true;
  for (const auto& [key, t] : profiles) {
    const analysis::ProfileThread& thread = p.threads[key.first];
    const analysis::ProfileEvent& event = p.events[key.second];
    std::string title = fmt::format("{} ({}/{})", thread.comm, thread.pid, thread.tid);
    if (p.events.size() > 1) title += " " + event.name;
    out += first_profile ? "{\"type\":\"sampled\",\"name\":" : ",{\"type\":\"sampled\",\"name\":";
    first_profile = false;
    append_json_string(out, title);
    out += fmt::format(",\"unit\":\"{}\",\"startValue\":0,\"endValue\":{},\"samples\":[", unit_of(event), t.total);
    for (size_t i = 0; i < t.stacks.size(); ++i) {
      if (i) out += ',';
      out += stack_json(t.stacks[i]);
    }
    out += "],\"weights\":[";
    for (size_t i = 0; i < t.weights.size(); ++i) {
      if (i) out += ',';
      out += fmt::format_int(t.weights[i]).c_str();
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace tperf::output
