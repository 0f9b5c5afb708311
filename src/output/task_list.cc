#include "util/text.h"
#include "output/task_list.h"

#include <fmt/format.h>

#include <string>

#include "analysis/task_tree.h"
#include "session/machine.h"

namespace tperf::output {

void print_task_list(std::FILE* out, const session::Machine& machine, bool with_maps) {
  fmt::print(out, "# {:>8} {:>8} {:>8}  {}\n", "pid", "tid", "ppid", "comm");
  std::string line;
  for (const analysis::TaskTreeEntry& e : analysis::task_tree(machine)) {
    const session::Thread& t = *e.thread;
    line.clear();
    util::append_format(line, "  {:>8} {:>8} {:>8} |{:{}}", t.pid(), t.tid(), t.ppid(), "", e.level);
    // The maps are indented to where the comm starts.
    const size_t indent = line.size();
    if (const std::string* comm = t.comm()) {
      line += *comm;
    } else {
      util::append_format(line, ":{}", t.tid());
    }
    line += '\n';
    std::fputs(line.c_str(), out);
    if (!with_maps || !t.maps()) continue;
    for (const session::Map& m : t.maps()->maps()) {
      fmt::print(out, "{:{}}  {:x}-{:x} {}{}{}{} {:08x} {} {}\n", "", indent, m.start, m.end, m.prot & 1 ? 'r' : '-',
                 m.prot & 2 ? 'w' : '-', m.prot & 4 ? 'x' : '-', m.flags & 1 ? 's' : 'p', m.pgoff, m.ino,
                 m.dso && m.dso->name ? *m.dso->name : std::string());
    }
  }
}

}  // namespace tperf::output
