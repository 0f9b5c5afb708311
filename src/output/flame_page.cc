#include "output/flame_page.h"

#include <fmt/format.h>

#include "output/flame_timeline.h"
#include "output/web_assets.h"

namespace tperf::output {

using analysis::kNoIndex;

FrameKind frame_kind(const analysis::Profile& profile, uint32_t frame) {
  const analysis::ProfileFrame& f = profile.frames[frame];
  if (f.function == kNoIndex || f.function >= profile.functions.size() ||
      profile.functions[f.function].name == "[unknown]") {
    return FrameKind::kUnknown;
  }
  if (f.inlined) return FrameKind::kInlined;
  return f.kernel ? FrameKind::kKernel : FrameKind::kUser;
}

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      // The HTML parser ends a script element at "</script" whatever JSON thinks of it, and
      // "<!--" changes how it scans; escaped, neither can form.
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
                   (static_cast<unsigned char>(s[i + 2]) == 0xa8 || static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
          // U+2028/U+2029 are valid in JSON but were line ends in JavaScript source before ES2019.
          out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
          i += 2;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

namespace {

// A JSON array of the values `get(i)` for i in [0, n).
template <typename Get>
void array(std::string& out, size_t n, Get get) {
  out.push_back('[');
  for (size_t i = 0; i < n; ++i) {
    if (i) out.push_back(',');
    get(out, i);
  }
  out.push_back(']');
}

void index(std::string& out, uint32_t v) {
  if (v == kNoIndex) {
    out += "-1";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

void number(std::string& out, uint64_t v) { fmt::format_to(std::back_inserter(out), "{}", v); }

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

void timeline_json(std::string& out, const FlameTimeline& t) {
  fmt::format_to(std::back_inserter(out), "{{\"start\":{},\"width\":{},\"buckets\":{},\"cells\":{{\"start\":", t.start,
                 t.width, t.buckets);
  auto u32s = [&](const std::vector<uint32_t>& v) { array(out, v.size(), [&](std::string& o, size_t i) { number(o, v[i]); }); };
  auto u64s = [&](const std::vector<uint64_t>& v) { array(out, v.size(), [&](std::string& o, size_t i) { number(o, v[i]); }); };
  auto i64s = [&](const std::vector<int64_t>& v) {
    array(out, v.size(), [&](std::string& o, size_t i) { fmt::format_to(std::back_inserter(o), "{}", v[i]); });
  };
  u32s(t.cell_start);
  out += ",\"count\":";
  u32s(t.cell_count);
  out += ",\"samples\":";
  u64s(t.cell_samples);
  out += ",\"weight\":";
  u64s(t.cell_weight);
  out += "}";
  if (!t.fold_start.empty()) {
    out += ",\n\"folded\":{\"start\":";
    u32s(t.fold_start);
    out += ",\"thread\":";
    u32s(t.fold_thread);
    out += ",\"event\":";
    u32s(t.fold_event);
    out += ",\"samples\":";
    u64s(t.fold_samples);
    out += ",\"weight\":";
    u64s(t.fold_weight);
    out += "}";
  }
  out += ",\n\"hasStates\":";
  out += t.has_states ? "true" : "false";
  out += ",\"states\":{\"thread\":";
  u32s(t.state_thread);
  out += ",\"bucket\":";
  u32s(t.state_bucket);
  out += ",\"runnable\":";
  u64s(t.state_runnable);
  out += ",\"sleeping\":";
  u64s(t.state_sleeping);
  out += "},\n\"threads\":{\"first\":";
  i64s(t.thread_first);
  out += ",\"last\":";
  i64s(t.thread_last);
  out += "}}";
}

}  // namespace

std::string flame_profile_json(const analysis::Profile& p, const FlameTimelineOptions& timeline) {
  std::string out;
  // About 6 bytes per stack node and per count column entry, plus the names.
  out.reserve(64 * 1024 + p.stacks.size() * 14 + p.counts.size() * 40 + p.frames.size() * 12);
  out += "{\"format\":\"tperf-flame-1\",\n\"functions\":{\"name\":";
  array(out, p.functions.size(), [&](std::string& o, size_t i) { o += json_string(p.functions[i].name); });
  out += ",\"file\":";
  array(out, p.functions.size(), [&](std::string& o, size_t i) { o += json_string(p.functions[i].file); });
  out += "},\n\"mappings\":";
  array(out, p.mappings.size(), [&](std::string& o, size_t i) {
    const auto& m = p.mappings[i];
    o += json_string(m.short_name.empty() ? m.path : m.short_name);
  });
  out += ",\n\"frames\":{\"function\":";
  array(out, p.frames.size(), [&](std::string& o, size_t i) { index(o, p.frames[i].function); });
  out += ",\"mapping\":";
  array(out, p.frames.size(), [&](std::string& o, size_t i) { index(o, p.frames[i].mapping); });
  out += ",\"kind\":";
  array(out, p.frames.size(), [&](std::string& o, size_t i) {
    number(o, static_cast<uint64_t>(frame_kind(p, static_cast<uint32_t>(i))));
  });
  out += "},\n\"stacks\":{\"parent\":";
  array(out, p.stacks.size(), [&](std::string& o, size_t i) { index(o, p.stacks[i].parent); });
  out += ",\"frame\":";
  array(out, p.stacks.size(), [&](std::string& o, size_t i) { index(o, p.stacks[i].frame); });
  out += "},\n\"threads\":{\"pid\":";
  array(out, p.threads.size(), [&](std::string& o, size_t i) { fmt::format_to(std::back_inserter(o), "{}", p.threads[i].pid); });
  out += ",\"tid\":";
  array(out, p.threads.size(), [&](std::string& o, size_t i) { fmt::format_to(std::back_inserter(o), "{}", p.threads[i].tid); });
  out += ",\"comm\":";
  array(out, p.threads.size(), [&](std::string& o, size_t i) { o += json_string(p.threads[i].comm); });
  out += "},\n\"events\":{\"name\":";
  array(out, p.events.size(), [&](std::string& o, size_t i) { o += json_string(p.events[i].name); });
  out += ",\"unit\":";
  array(out, p.events.size(), [&](std::string& o, size_t i) { o += json_string(p.events[i].unit); });
  out += "},\n\"counts\":{\"thread\":";
  array(out, p.counts.size(), [&](std::string& o, size_t i) { index(o, p.counts[i].thread); });
  out += ",\"event\":";
  array(out, p.counts.size(), [&](std::string& o, size_t i) { index(o, p.counts[i].event); });
  out += ",\"stack\":";
  array(out, p.counts.size(), [&](std::string& o, size_t i) { index(o, p.counts[i].stack); });
  out += ",\"samples\":";
  array(out, p.counts.size(), [&](std::string& o, size_t i) { number(o, p.counts[i].samples); });
  out += ",\"weight\":";
  array(out, p.counts.size(), [&](std::string& o, size_t i) { number(o, p.counts[i].weight); });
  out += "},\n\"info\":";
  array(out, p.info.size(), [&](std::string& o, size_t i) {
    o += '[';
    o += json_string(p.info[i].first);
    o += ',';
    o += json_string(p.info[i].second);
    o += ']';
  });
  out += ",\n\"lost\":";
  number(out, p.lost_samples);
  out += ",\n\"unwind\":";
  out += json_string(p.unwind_summary);
  // The timeline, when the samples came with their times (absent: the page shows none).
  if (const FlameTimeline t = flame_timeline(p, timeline); t.buckets > 0) {
    out += ",\n\"timeline\":";
    timeline_json(out, t);
  }
  out += "}";
  return out;
}

std::string flame_page_html(const analysis::Profile& profile, const FlamePageOptions& options) {
  const std::string_view tmpl = web::flame_html();
  // The markers are found in the template alone and the pieces joined once, so text inserted
  // for one marker (a function named "@TPERF_JS@") is never taken for another.
  struct Fill {
    std::string_view marker;
    std::string text;
  };
  const std::string title = html_escape(options.title);
  Fill fills[] = {
      {"@TPERF_TITLE@", title},
      {"@TPERF_CSS@", std::string(web::flame_css())},
      {"@TPERF_JS@", std::string(web::flame_js())},
      {"@TPERF_DATA@", flame_profile_json(profile, options.timeline)},
  };
  std::string out;
  out.reserve(tmpl.size() + fills[1].text.size() + fills[2].text.size() + fills[3].text.size() + 2 * title.size());
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t next = std::string_view::npos;
    const Fill* which = nullptr;
    for (const Fill& f : fills) {
      const size_t at = tmpl.find(f.marker, pos);
      if (at < next) {
        next = at;
        which = &f;
      }
    }
    if (which == nullptr) {
      out.append(tmpl.substr(pos));
      break;
    }
    out.append(tmpl.substr(pos, next - pos));
    out += which->text;
    pos = next + which->marker.size();
  }
  return out;
}

}  // namespace tperf::output
