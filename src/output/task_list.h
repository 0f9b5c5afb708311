// `report --tasks` / `--mmaps` text as perf 6.1 prints it: one line per thread (pid, tid, ppid,
// comm indented by depth in the task tree), with --mmaps each thread's maps under it.
#pragma once

#include <cstdio>

namespace tperf::session {
class Machine;
}

namespace tperf::output {

void print_task_list(std::FILE* out, const session::Machine& machine, bool with_maps);

}  // namespace tperf::output
