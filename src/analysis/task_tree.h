// The task tree of `report --tasks`: every thread the machine holds, each under its parent
// (ppid), in the order perf 6.1 lists them, with its depth.
#pragma once

#include <cstdint>
#include <vector>

namespace tperf::session {
class Machine;
class Thread;
}  // namespace tperf::session

namespace tperf::analysis {

struct TaskTreeEntry {
  const session::Thread* thread;
  int level;  // 0 for a root (no parent known or ppid -1)
};

// perf visits threads bucket by bucket of its thread table (tid mod 256, ascending tid within a
// bucket) and hangs each under its parent in that visiting order, so siblings come in that order
// too; the tree is then printed depth first. A thread whose parent is not in the machine is a
// root here (perf 6.1 refuses the whole listing then).
std::vector<TaskTreeEntry> task_tree(const session::Machine& machine);

}  // namespace tperf::analysis
