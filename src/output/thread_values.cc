#include "output/thread_values.h"

#include <fmt/format.h>

#include <algorithm>

#include "output/script_format.h"
#include "perfdata/byte_reader.h"

namespace tperf::output {

void ThreadValues::add_record(const perfdata::Reader& reader, const perfdata::Record& rec) {
  perfdata::ByteReader r(rec.body(), reader.swapped(), rec.offset + 8);
  const int32_t pid = static_cast<int32_t>(r.u32("read pid"));
  const int32_t tid = static_cast<int32_t>(r.u32("read tid"));
  const uint64_t value = r.u64("read value");
  const int ai = reader.attr_index_of(rec);
  const int counter = ai < 0 ? 0 : ai;
  if (static_cast<size_t>(counter) >= reader.attrs().size()) return;
  add(pid, tid, counter, script_event_name(reader.attrs()[static_cast<size_t>(counter)]), value);
}

void ThreadValues::add(int32_t pid, int32_t tid, int counter, const std::string& name, uint64_t value) {
  auto c = std::find(counters_.begin(), counters_.end(), counter);
  const size_t column = static_cast<size_t>(c - counters_.begin());
  if (c == counters_.end()) {
    counters_.push_back(counter);
    names_.push_back(name);
  }
  auto t = std::find_if(threads_.begin(), threads_.end(), [&](const Thread& x) { return x.pid == pid && x.tid == tid; });
  if (t == threads_.end()) {
    threads_.push_back({pid, tid, {}});
    t = threads_.end() - 1;
  }
  if (t->values.size() <= column) t->values.resize(column + 1);
  t->values[column] += value;  // one READ per event fd (per CPU): perf adds them
}

void ThreadValues::print(std::FILE* out) const {
  size_t pid_w = 3, tid_w = 3;
  std::vector<size_t> widths;
  for (const auto& n : names_) widths.push_back(n.size());
  for (const Thread& t : threads_) {
    pid_w = std::max(pid_w, fmt::formatted_size("{}", t.pid));
    tid_w = std::max(tid_w, fmt::formatted_size("{}", t.tid));
    for (size_t j = 0; j < widths.size(); ++j) {
      widths[j] = std::max(widths[j], fmt::formatted_size("{}", j < t.values.size() ? t.values[j] : 0));
    }
  }
  std::string text = fmt::format("# {:>{}}  {:>{}}", "PID", pid_w, "TID", tid_w);
  for (size_t j = 0; j < names_.size(); ++j) text += fmt::format("  {:>{}}", names_[j], widths[j]);
  text += '\n';
  for (const Thread& t : threads_) {
    text += fmt::format("  {:>{}}  {:>{}}", t.pid, pid_w, t.tid, tid_w);
    for (size_t j = 0; j < widths.size(); ++j) {
      text += fmt::format("  {:>{}}", j < t.values.size() ? t.values[j] : 0, widths[j]);
    }
    text += '\n';
  }
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace tperf::output
