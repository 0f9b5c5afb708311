#include "analysis/task_tree.h"

#include <algorithm>
#include <unordered_map>

#include "session/machine.h"

namespace tperf::analysis {

namespace {
constexpr uint32_t kPerfThreadBuckets = 256;
}

std::vector<TaskTreeEntry> task_tree(const session::Machine& machine) {
  std::vector<const session::Thread*> threads = machine.threads();  // by tid
  std::stable_sort(threads.begin(), threads.end(), [](const session::Thread* a, const session::Thread* b) {
    return static_cast<uint32_t>(a->tid()) % kPerfThreadBuckets < static_cast<uint32_t>(b->tid()) % kPerfThreadBuckets;
  });

  const size_t n = threads.size();
  std::unordered_map<int32_t, size_t> index_of;
  index_of.reserve(n);
  for (size_t i = 0; i < n; ++i) index_of.emplace(threads[i]->tid(), i);

  std::vector<std::vector<size_t>> children(n);
  std::vector<bool> listed(n, false);
  std::vector<size_t> roots;
  for (size_t i = 0; i < n; ++i) {
    // Walk up from this thread, linking each unlisted one under its parent, until a listed
    // thread or a root. A cycle (corrupt ppids) ends because every step lists a thread.
    for (size_t cur = i; !listed[cur];) {
      listed[cur] = true;
      int32_t ppid = threads[cur]->ppid();
      auto parent = ppid == -1 ? index_of.end() : index_of.find(ppid);
      if (parent == index_of.end() || parent->second == cur) {
        roots.push_back(cur);
        break;
      }
      children[parent->second].push_back(cur);
      cur = parent->second;
    }
  }

  std::vector<TaskTreeEntry> out;
  out.reserve(n);
  std::vector<bool> printed(n, false);
  std::vector<std::pair<size_t, int>> stack;  // explicit: process trees can be very deep
  auto print_from = [&](size_t root) {
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto [i, level] = stack.back();
      stack.pop_back();
      if (printed[i]) continue;
      printed[i] = true;
      out.push_back({threads[i], level});
      for (auto it = children[i].rbegin(); it != children[i].rend(); ++it) stack.emplace_back(*it, level + 1);
    }
  };
  for (size_t root : roots) print_from(root);
  // Threads whose ppids form a cycle (a damaged file) hang under no root; list them anyway.
  for (size_t i = 0; i < n; ++i) {
    if (!printed[i]) print_from(i);
  }
  return out;
}

}  // namespace tperf::analysis
