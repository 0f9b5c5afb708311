#include "output/flame_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "output/flame_page.h"

namespace tperf::output {

using analysis::kNoIndex;

namespace {

constexpr double kRow = 16;         // px per frame row
constexpr double kPad = 10;         // left/right margin
constexpr double kTop = 44;         // title and subtitle
constexpr double kBottom = 8;
constexpr double kCharWidth = 6.6;  // 11px monospace: 0.6 em per character
constexpr double kMinWidth = 0.1;   // narrower frames are left out (they would not show)

// One node of the tree merged by function: the same function reached through the same
// functions is one frame, whatever addresses or threads the samples had.
struct Node {
  uint32_t parent = kNoIndex;
  uint32_t function = kNoIndex;
  FrameKind kind = FrameKind::kUser;
  uint32_t depth = 0;
  uint64_t samples = 0;  // inclusive
  uint64_t value = 0;    // inclusive, the measure drawn
  std::vector<uint32_t> children;
};

// Text as XML character data: markup characters escaped, and bytes that are not UTF-8 or not
// allowed in XML 1.0 (control characters) replaced, so any symbol name keeps the file well-formed.
std::string xml_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out.push_back(c < 0x20 && c != '\t' ? '?' : static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {
      // Overlong forms, UTF-16 surrogates and U+FFFE/U+FFFF are not XML characters either.
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0) &&
           !(c == 0xef && c1 == 0xbf && static_cast<unsigned char>(s[i + 2]) >= 0xbe);
    }
    if (ok && len == 4) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

// The first `chars` characters (code points) of `s`, with ".." when cut.
std::string fit_label(std::string_view s, size_t chars) {
  size_t count = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) ++count;
  }
  if (count <= chars) return std::string(s);
  const size_t keep = chars - 2;
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) {
      if (n == keep) break;
      ++n;
    }
  }
  return std::string(s.substr(0, i)) + "..";
}

uint32_t fnv(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// A fill by kind, the name's hash varying the shade so that neighbours stay apart: user code
// warm, kernel blue, inlined green-blue, unknown grey.
std::string fill_of(FrameKind kind, std::string_view name) {
  const double v = (fnv(name) % 1000) / 1000.0;
  int r, g, b;
  switch (kind) {
    case FrameKind::kKernel: r = 120 + static_cast<int>(40 * v); g = 160 + static_cast<int>(30 * v); b = 220; break;
    case FrameKind::kInlined: r = 90 + static_cast<int>(40 * v); g = 190; b = 170 + static_cast<int>(30 * v); break;
    case FrameKind::kUnknown: r = g = b = 180 + static_cast<int>(30 * v); break;
    default: r = 225 + static_cast<int>(30 * v); g = 90 + static_cast<int>(120 * v); b = 50 + static_cast<int>(20 * v);
  }
  return fmt::format("rgb({},{},{})", r, g, b);
}

}  // namespace

std::string flame_svg(const analysis::Profile& p, const FlameSvgOptions& options) {
  uint32_t event = options.event;
  if (event == kNoIndex || event >= p.events.size()) {
    std::vector<uint64_t> per_event(p.events.size());
    for (const auto& c : p.counts) {
      if (c.event < per_event.size()) per_event[c.event] += c.samples;
    }
    event = per_event.empty() ? kNoIndex
                              : static_cast<uint32_t>(std::max_element(per_event.begin(), per_event.end()) - per_event.begin());
  }

  // Stack node -> merged node, resolved lazily from the root down (a parent may be listed after
  // its child in principle; the walk up handles that without recursion).
  std::vector<Node> nodes(1);
  std::vector<uint32_t> merged(p.stacks.size(), kNoIndex);
  std::unordered_map<uint64_t, uint32_t> child_of;
  std::vector<uint32_t> path;
  auto merged_node = [&](uint32_t stack) {
    if (stack >= p.stacks.size()) return 0u;
    for (uint32_t s = stack; s != kNoIndex && s < p.stacks.size() && merged[s] == kNoIndex; s = p.stacks[s].parent) {
      path.push_back(s);
    }
    uint32_t parent = 0;
    if (!path.empty()) {
      const uint32_t above = p.stacks[path.back()].parent;
      if (above != kNoIndex && above < p.stacks.size()) parent = merged[above];
    } else {
      return merged[stack];
    }
    while (!path.empty()) {
      const uint32_t s = path.back();
      path.pop_back();
      const uint32_t frame = p.stacks[s].frame;
      const bool valid = frame < p.frames.size();
      uint32_t fn = valid ? p.frames[frame].function : kNoIndex;
      if (fn >= p.functions.size()) fn = kNoIndex;
      const uint64_t key = (static_cast<uint64_t>(parent) << 32) | fn;
      auto [it, fresh] = child_of.try_emplace(key, static_cast<uint32_t>(nodes.size()));
      if (fresh) {
        Node n;
        n.parent = parent;
        n.function = fn;
        n.kind = valid ? frame_kind(p, frame) : FrameKind::kUnknown;
        n.depth = nodes[parent].depth + 1;
        nodes.push_back(std::move(n));
        nodes[parent].children.push_back(it->second);
      }
      merged[s] = it->second;
      parent = it->second;
    }
    return parent;
  };
  for (const auto& c : p.counts) {
    if (c.event != event) continue;
    const uint32_t n = c.stack == kNoIndex ? 0 : merged_node(c.stack);
    nodes[n].samples += c.samples;
    nodes[n].value += options.by_samples ? c.samples : c.weight;
  }
  // Children were made after their parents: adding from the back makes the sums inclusive.
  for (size_t i = nodes.size(); i-- > 1;) {
    nodes[nodes[i].parent].samples += nodes[i].samples;
    nodes[nodes[i].parent].value += nodes[i].value;
  }
  auto name_of = [&](const Node& n) -> std::string_view {
    return n.function == kNoIndex ? std::string_view("[unknown]") : std::string_view(p.functions[n.function].name);
  };

  const double width = std::max(options.width, 2 * kPad + 100);
  const double inner = width - 2 * kPad;
  const uint64_t total = nodes[0].value;
  const double scale = total > 0 ? inner / static_cast<double>(total) : 0;

  // Place the frames wide enough to draw first: the image is as tall as the deepest of those,
  // not as the deepest stack (one sample deep in the kernel would make it mostly empty).
  std::vector<std::pair<uint32_t, double>> placed;  // (node, x), depth-first
  uint32_t max_depth = 0;
  if (total > 0) {
    for (Node& n : nodes) {
      std::sort(n.children.begin(), n.children.end(), [&](uint32_t a, uint32_t b) {
        if (nodes[a].value != nodes[b].value) return nodes[a].value > nodes[b].value;
        return name_of(nodes[a]) < name_of(nodes[b]);
      });
    }
    std::vector<std::pair<uint32_t, double>> todo{{0, kPad}};
    while (!todo.empty()) {
      const auto [id, x] = todo.back();
      todo.pop_back();
      placed.emplace_back(id, x);
      max_depth = std::max(max_depth, nodes[id].depth);
      double cx = x;
      for (uint32_t c : nodes[id].children) {
        const double cw = static_cast<double>(nodes[c].value) * scale;
        if (cw < kMinWidth) break;  // heaviest first: the rest are narrower still
        todo.emplace_back(c, cx);
        cx += cw;
      }
    }
  }
  const double height = kTop + (max_depth + 1) * kRow + kBottom;
  const std::string unit = options.by_samples ? "samples"
                           : event == kNoIndex ? "period"
                                               : (p.events[event].unit == "nanoseconds" ? "ns" : p.events[event].unit);

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += fmt::format(
      "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">\n",
      width, height);
  out += "<style>text{font-family:\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:11px;fill:#111}"
         ".title{font-size:16px;font-family:sans-serif}.sub{font-size:12px;font-family:sans-serif;fill:#555}</style>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#f8f8f8\"/>\n", width, height);
  out += fmt::format("<text class=\"title\" x=\"{}\" y=\"20\" text-anchor=\"middle\">{}</text>\n", width / 2,
                     xml_text(options.title));
  std::string sub = event == kNoIndex ? "no samples"
                                      : fmt::format("{}: {} samples, {} {}", p.events[event].name, nodes[0].samples, total, unit);
  out += fmt::format("<text class=\"sub\" x=\"{}\" y=\"36\" text-anchor=\"middle\">{}</text>\n", width / 2, xml_text(sub));

  for (const auto& [id, x] : placed) {
    const Node& n = nodes[id];
    const double w = static_cast<double>(n.value) * scale;
    const double y = kTop + (max_depth - n.depth) * kRow;
    const std::string name = id == 0 ? std::string("all") : std::string(name_of(n));
    const std::string fill = id == 0 ? std::string("rgb(200,196,214)") : fill_of(n.kind, name);
    out += fmt::format(
        "<g class=\"frame\"><title>{} ({} samples, {} {}, {:.2f}%)</title>"
        "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.4f}\" height=\"{}\" fill=\"{}\" rx=\"2\" ry=\"2\"/>",
        xml_text(name), n.samples, n.value, unit, 100.0 * static_cast<double>(n.value) / static_cast<double>(total), x,
        y, w, kRow - 1, fill);
    const double room = (w - 6) / kCharWidth;
    if (room >= 3) {
      out += fmt::format("<text x=\"{:.2f}\" y=\"{}\">{}</text>", x + 3, y + kRow - 4.5,
                         xml_text(fit_label(name, static_cast<size_t>(room))));
    }
    out += "</g>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace tperf::output
