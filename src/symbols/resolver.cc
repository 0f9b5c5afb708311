#include "symbols/resolver.h"

#include "perfdata/abi.h"
#include "session/machine.h"

namespace tperf::symbols {

Resolver::Resolver(const session::Machine& machine, Symbolizer* symbolizer)
    : machine_(machine), symbolizer_(symbolizer) {}

Resolver::~Resolver() = default;

const session::Map* Resolver::find_map(const session::Thread* thread, uint8_t cpumode, uint64_t addr, bool widen) {
  const session::Map* m = machine_.find_map(thread, cpumode, addr);
  if (!m && widen && symbolizer_ && (cpumode & perfdata::kMiscCpumodeMask) == perfdata::kMiscKernel) {
    m = symbolizer_->widened_kernel_map(addr);
  }
  return m;
}

Resolved Resolver::symbol_in(const session::Map& map, int32_t pid, uint64_t addr) {
  if (!symbolizer_) return {nullptr, addr};
  if (map.dso && map.dso->kernel) pid = -1;
  uint64_t at = addr;
  const SymbolTable* table = symbolizer_->fixed_table(map, pid, &at);
  if (!table) return symbolizer_->resolve(map, pid, addr);
  if (!slots_) slots_ = std::make_unique<Slot[]>(size_t{1} << kSlotBits);  // zeroed: all empty
  const uint64_t h = (at ^ reinterpret_cast<uintptr_t>(table) * 0x2545F4914F6CDD1DULL) * 0x9E3779B97F4A7C15ULL;
  Slot& slot = slots_[h >> (64 - kSlotBits)];
  if (slot.table != table || slot.addr != at) slot = {table, at, table->find(at)};
  return {slot.sym, at};
}

ResolvedFrame Resolver::resolve(const session::Thread* thread, uint8_t cpumode, uint64_t addr) {
  ResolvedFrame f;
  f.map = find_map(thread, cpumode, addr);
  f.at = f.map ? symbol_in(*f.map, thread ? thread->pid() : -1, addr) : Resolved{nullptr, addr};
  return f;
}

ResolvedFrame Resolver::resolve(const session::Thread* thread, uint8_t cpumode, uint64_t addr,
                                const session::Map* map) {
  if (!map) return resolve(thread, cpumode, addr);
  return {map, symbol_in(*map, thread ? thread->pid() : -1, addr)};
}

}  // namespace tperf::symbols
