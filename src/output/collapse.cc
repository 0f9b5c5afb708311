#include "output/collapse.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <unordered_map>

namespace tperf::output {

namespace {

// stackcollapse-perf.pl's `s/\+0x[\da-f]+$//`: perf script's "+0x1f" symbol offsets.
void strip_offset(std::string& s) {
  size_t plus = s.rfind("+0x");
  if (plus == std::string::npos || plus + 3 == s.size()) return;
  for (size_t i = plus + 3; i < s.size(); ++i) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return;
  }
  s.resize(plus);
}

// Perl's `split /->/`: fields between the separators, trailing empty fields dropped.
std::vector<std::string> split_arrows(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    size_t a = s.find("->", pos);
    if (a == std::string::npos) {
      parts.push_back(s.substr(pos));
      break;
    }
    parts.push_back(s.substr(pos, a - pos));
    pos = a + 2;
  }
  while (!parts.empty() && parts.back().empty()) parts.pop_back();
  return parts;
}

// `m/\.\(.*\)\./`: a Go method name such as "net/http.(*Client).Do", whose parentheses stay.
bool looks_like_go_method(const std::string& s) {
  size_t open = s.find(".(");
  size_t close = s.rfind(").");
  return open != std::string::npos && close != std::string::npos && close >= open + 2;
}

// `s/\((?!anonymous namespace\)).*//`: everything from the first '(' that does not open
// "(anonymous namespace)" is an argument list, dropped.
void cut_arguments(std::string& s) {
  static constexpr std::string_view kAnon = "(anonymous namespace)";
  size_t pos = 0;
  while ((pos = s.find('(', pos)) != std::string::npos) {
    if (std::string_view(s).substr(pos, kAnon.size()) != kAnon) {
      s.resize(pos);
      return;
    }
    ++pos;
  }
}

// `m:/tmp/perf-\d+\.map:`
bool is_jit_map(const std::string& dso) {
  static constexpr std::string_view kPrefix = "/tmp/perf-";
  size_t pos = 0;
  while ((pos = dso.find(kPrefix, pos)) != std::string::npos) {
    size_t i = pos + kPrefix.size();
    size_t digits = i;
    while (digits < dso.size() && dso[digits] >= '0' && dso[digits] <= '9') ++digits;
    if (digits > i && dso.compare(digits, 4, ".map") == 0) return true;
    ++pos;
  }
  return false;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What perf script prints in a callchain line's parentheses: the DSO's long name, "[unknown]"
// without a map, and "inlined" for an inline frame (its line ends in " (inlined)", no DSO).
std::string dso_column(const analysis::Profile& p, const analysis::ProfileFrame& f) {
  if (f.inlined) return "inlined";
  if (f.mapping == analysis::kNoIndex) return "[unknown]";
  return p.mappings[f.mapping].path;
}

// perf 6.1 prints a user-space callchain address as the offset into the mapped file, a kernel
// one as it is.
uint64_t script_pc(const analysis::ProfileFrame& f) {
  return f.mapping != analysis::kNoIndex && !f.kernel ? f.rel_address : f.address;
}

std::string process_part(const analysis::ProfileThread& t, const CollapseOptions& o) {
  std::string name = t.comm;
  if (o.include_tid) {
    name += fmt::format("-{}/{}", t.pid, t.tid);
  } else if (o.include_pid) {
    name += fmt::format("-{}", t.pid);
  }
  for (char& c : name) {
    if (c == ' ') c = '_';
  }
  return name;
}

}  // namespace

std::vector<std::string> stackcollapse_frame_names(const std::string& sym, const std::string& dso, uint64_t pc,
                                                   const std::string& pname, const CollapseOptions& o) {
  std::string raw = sym;
  strip_offset(raw);
  std::vector<std::string> out;
  if (!raw.empty() && raw[0] == '(') return out;  // stackcollapse skips these ("process names")
  const bool java = pname.compare(0, 4, "java") == 0;
  for (std::string func : split_arrows(raw)) {
    if (func == "[unknown]") {
      // Without a symbol the DSO's file name stands for the function.
      if (dso != "[unknown]") {
        size_t slash = dso.rfind('/');
        func = slash == std::string::npos ? dso : dso.substr(slash + 1);
      } else {
        func = "unknown";
      }
      func = o.addrs ? fmt::format("[{} <{:x}>]", func, pc) : "[" + func + "]";
    }
    for (char& c : func) {
      if (c == ';') c = ':';  // ';' separates the frames of a folded line
    }
    if (!looks_like_go_method(func)) cut_arguments(func);
    std::erase_if(func, [](char c) { return c == '"' || c == '\''; });
    if (java && func.find('/') != std::string::npos && !func.empty() && func[0] == 'L') func.erase(0, 1);
    if (!out.empty()) {
      if (func.find("_[i]") == std::string::npos) func += "_[i]";
    } else if (o.annotate_kernel && (dso.starts_with("[") || ends_with(dso, "vmlinux")) &&
               dso.find("unknown") == std::string::npos) {
      func += "_[k]";
    } else if (o.annotate_jit && is_jit_map(dso)) {
      if (func.find("_[j]") == std::string::npos) func += "_[j]";
    }
    out.push_back(std::move(func));
  }
  return out;
}

CollapsedStacks collapse_stacks(const analysis::Profile& p, const CollapseOptions& o, std::string* error) {
  CollapsedStacks result;
  if (!o.event.empty()) {
    for (uint32_t e = 0; e < p.events.size(); ++e) {
      if (p.events[e].name == o.event) {
        result.event = e;
        break;
      }
    }
    if (result.event == analysis::kNoIndex) {
      std::string names;
      for (const auto& e : p.events) names += (names.empty() ? "" : ", ") + e.name;
      *error = fmt::format("no event '{}' in the file (it has: {})", o.event, names.empty() ? "none" : names);
      return result;
    }
  } else if (!p.counts.empty()) {
    result.event = p.counts.front().event;  // counts are in first-seen order
  }

  // A frame's names depend on the process part only through the Java tidying: computed once per
  // frame for the others.
  std::vector<std::optional<std::vector<std::string>>> frame_names(p.frames.size());
  auto names_of = [&](uint32_t fi, const std::string& pname) -> std::vector<std::string> {
    const analysis::ProfileFrame& f = p.frames[fi];
    const std::string& sym = f.function == analysis::kNoIndex ? std::string("[unknown]") : p.functions[f.function].name;
    if (pname.compare(0, 4, "java") == 0) return stackcollapse_frame_names(sym, dso_column(p, f), script_pc(f), pname, o);
    if (!frame_names[fi]) frame_names[fi] = stackcollapse_frame_names(sym, dso_column(p, f), script_pc(f), pname, o);
    return *frame_names[fi];
  };

  std::map<std::string, uint64_t> folded;
  std::unordered_map<uint32_t, std::string> pnames;
  for (const analysis::ProfileCount& c : p.counts) {
    if (c.event != result.event) {
      result.other_events = true;
      continue;
    }
    auto [it, fresh] = pnames.try_emplace(c.thread);
    if (fresh) it->second = process_part(p.threads[c.thread], o);
    std::string line = it->second;
    if (c.stack != analysis::kNoIndex) {
      for (uint32_t fi : p.frames_root_first(c.stack)) {
        for (const std::string& n : names_of(fi, it->second)) {
          line += ';';
          line += n;
        }
      }
    }
    folded[line] += o.period ? c.weight : c.samples;
  }
  // std::map orders by std::string's compare, bytewise as perl's `cmp` without `use locale`.
  result.lines.assign(folded.begin(), folded.end());
  return result;
}

void write_collapsed(std::FILE* out, const CollapsedStacks& stacks) {
  std::string buf;
  for (const auto& [stack, count] : stacks.lines) {
    buf += stack;
    buf += ' ';
    buf += fmt::format_int(count).c_str();
    buf += '\n';
    if (buf.size() > (1 << 16)) {
      std::fwrite(buf.data(), 1, buf.size(), out);
      buf.clear();
    }
  }
  std::fwrite(buf.data(), 1, buf.size(), out);
}

}  // namespace tperf::output
