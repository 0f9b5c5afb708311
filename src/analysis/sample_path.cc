#include "analysis/sample_path.h"

#include <fmt/format.h>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "session/ordered_events.h"
#include "symbols/symbolizer.h"
#include "util/workqueue.h"

namespace tperf::analysis {

namespace {

char level_of(uint8_t cpumode) {
  switch (cpumode) {
    case perfdata::kMiscKernel: return 'k';
    case perfdata::kMiscHypervisor: return 'H';
    case perfdata::kMiscGuestKernel: return 'g';
    case perfdata::kMiscGuestUser: return 'u';
    default: return '.';
  }
}

}  // namespace

void register_idle_task(session::Machine& machine) {
  perfdata::CommEvent idle;
  idle.pid = idle.tid = 0;
  idle.comm = "swapper";
  machine.on_comm(idle, 0);
}

std::unique_ptr<session::Machine> make_report_machine(const perfdata::Reader& reader) {
  session::Machine::Options mo;
  mo.keep_exited = true;
  mo.keep_maps_on_exec = true;
  auto machine = std::make_unique<session::Machine>(mo);
  register_idle_task(*machine);
  if (!reader.is_pipe()) machine->dsos().apply_build_ids(reader.features().build_ids);
  return machine;
}

void process_non_sample(const perfdata::Reader& reader, const perfdata::Record& rec, uint64_t time,
                        session::Machine& machine, symbols::Symbolizer& symbolizer) {
  if (rec.type == perfdata::kRecordKsymbol) {
    const perfdata::EventAttr* attr = reader.attr_of(rec);
    unsigned trailer = attr ? perfdata::sample_id_trailer_size(attr->attr) : 0;
    symbolizer.on_ksymbol(perfdata::decode_ksymbol(rec.body(), rec.misc, trailer, reader.swapped(), rec.offset + 8));
  }
  machine.process(reader, rec, time);
}

const session::Map* find_sample_map(const session::Machine& machine, symbols::Symbolizer& symbolizer,
                                    const session::Thread* thread, uint8_t cpumode, uint64_t addr) {
  const session::Map* m = machine.find_map(thread, cpumode, addr);
  if (!m && (cpumode & perfdata::kMiscCpumodeMask) == perfdata::kMiscKernel) m = symbolizer.widened_kernel_map(addr);
  return m;
}

analysis::Location locate(symbols::Symbolizer& symbolizer, const session::Map* map, int32_t pid, uint8_t cpumode,
                          uint64_t ip, bool frame) {
  analysis::Location loc;
  loc.level = level_of(cpumode);
  loc.addr = ip;
  if (!map) return loc;
  loc.dso = map->dso;
  symbols::Resolved r = symbolizer.resolve(*map, map->dso && map->dso->kernel ? -1 : pid, ip);
  if (r.sym) {
    loc.sym = r.sym;
    loc.sym_start = r.sym->start;
  }
  // Addresses in the kernel image are shown as they are; in a module, as its offset.
  bool kernel_image = map->dso && map->dso->kernel && map->dso->name && map->dso->name->starts_with("[");
  if (!frame && !kernel_image) loc.addr = map->map_ip(ip);
  // symoff counts from the symbol in the DSO's terms.
  if (r.sym && !frame) loc.addr = r.addr;
  return loc;
}

analysis::HistEntry sample_entry(session::Machine& machine, symbols::Symbolizer& symbolizer,
                                 const session::Thread& thread, const perfdata::Sample& sample, uint8_t cpumode,
                                 const session::Map* map) {
  analysis::HistEntry self;
  self.comm = thread.comm_at(sample.time);
  if (!self.comm) self.comm = machine.strings().intern(fmt::format(":{}", thread.tid()));
  self.pid = thread.pid();
  self.tid = thread.tid();
  self.cpu = sample.has(perfdata::kSampleCpu) ? static_cast<int32_t>(sample.cpu) : -1;
  self.loc = locate(symbolizer, map, thread.pid(), cpumode, sample.ip, false);
  return self;
}

SymbolPreloader::SymbolPreloader(const session::Machine& machine, symbols::Symbolizer& symbolizer)
    : machine_(machine),
      symbolizer_(symbolizer),
      loaders_(std::make_unique<util::WorkQueue>(0, util::WorkQueueOptions{.name = "tperf-syms"})) {}

SymbolPreloader::~SymbolPreloader() = default;  // runs what is queued, then joins

void SymbolPreloader::on_new_maps() {
  const auto& all = machine_.dsos().all();
  if (all.size() == seen_ && unmapped_.empty()) return;
  for (; seen_ < all.size(); ++seen_) unmapped_.push_back(all[seen_].get());
  std::vector<const session::Dso*> ready;
  std::erase_if(unmapped_, [&](const session::Dso* d) {
    if (!d->kernel && d->first_pid < 0) return false;
    ready.push_back(d);
    return true;
  });
  symbolizer_.preload_async(ready, *loaders_);
}

ReplayResult replay(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                    SymbolPreloader* preloader, const ReplayHandlers& handlers) {
  ReplayResult result;
  std::vector<std::string>& problems = result.problems;
  // A pipe names its build ids in the stream (HEADER_BUILD_ID records), and a DSO's build id
  // decides which file gives its symbols (for the kernel: whether /proc/kallsyms may): loading
  // ahead on a worker would race with them. Symbols then load at first use, in stream order.
  if (reader.is_pipe()) preloader = nullptr;
  session::OrderedEvents::Options ordered_options;
  ordered_options.merge_deferred_callchains = handlers.merge_deferred_callchains;
  uint64_t last_time = 0;    // the newest timestamp delivered
  uint64_t retire_time = 0;  // the newest one before the previous FINISHED_ROUND
  session::OrderedEvents ordered(reader, [&](const perfdata::Record& rec, uint64_t time) {
    if (handlers.stop && handlers.stop()) return;
    if (time > last_time) last_time = time;
    try {
      if (rec.type == perfdata::kRecordSample) {
        if (handlers.on_sample) handlers.on_sample(rec, time);
        return;
      }
      if (rec.type == perfdata::kRecordLostSamples) {
        result.lost_samples += perfdata::decode_lost_samples(rec.body(), reader.swapped(), rec.offset + 8);
      } else if (rec.type == perfdata::kRecordLost) {
        ++result.lost_records;
        result.lost_events += perfdata::decode_lost(rec.body(), reader.swapped(), rec.offset + 8).lost;
      }
      if (handlers.applies && !handlers.applies(rec)) return;
      if (handlers.on_other) handlers.on_other(rec, time);
      process_non_sample(reader, rec, time, machine, symbolizer);
      switch (rec.type) {
        case perfdata::kRecordMmap:
        case perfdata::kRecordMmap2:
          if (preloader) preloader->on_new_maps();
          break;
        case perfdata::kRecordKsymbol:
          machine.kernel_maps().touch();
          break;
        case perfdata::kRecordFinishedRound:
          // Threads that exited before the previous round can no longer be named by a record.
          machine.retire_exited(retire_time);
          retire_time = last_time;
          break;
        default:
          break;
      }
      if (handlers.on_applied) handlers.on_applied(rec, time);
    } catch (const perfdata::FormatError& e) {
      problems.push_back(e.what());
    }
  }, ordered_options);
  const uint64_t data_start = reader.is_pipe() ? 0 : reader.header().data.offset;
  perfdata::Record rec;
  uint64_t n = 0;
  while (reader.next(rec)) {
    if (handlers.stop && handlers.stop()) break;
    ordered.push(rec);
    if (handlers.on_progress && (++n & 1023) == 0) handlers.on_progress(rec.offset > data_start ? rec.offset - data_start : 0);
  }
  if (!handlers.stop || !handlers.stop()) ordered.flush_all();
  for (const auto& e : ordered.deferred_errors()) problems.push_back(e.what());
  result.deferred = ordered.deferred_stats();
  return result;
}

EventHists::EventHists() = default;
EventHists::~EventHists() = default;
EventHists::EventHists(EventHists&&) noexcept = default;
EventHists& EventHists::operator=(EventHists&&) noexcept = default;

EventHists load_event_hists(const std::string& path, const std::vector<analysis::SortKey>& keys,
                            const symbols::SymbolizerOptions& options) {
  EventHists out;
  out.reader = perfdata::Reader::open(path);
  perfdata::Reader& reader = *out.reader;
  out.machine = make_report_machine(reader);
  session::Machine& machine = *out.machine;
  out.symbolizer = std::make_unique<symbols::Symbolizer>(machine, options);
  symbols::Symbolizer& symbolizer = *out.symbolizer;

  perfdata::Sample sample;
  ReplayHandlers handlers;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    int ai = reader.attr_index_of(rec);
    if (ai < 0) return;
    reader.decode_sample(rec, sample);
    // Pipe files announce their events as they go.
    while (out.hists.size() <= static_cast<size_t>(ai)) out.hists.emplace_back(keys);
    session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    // Without PERIOD in the samples every one stands for the fixed period of its event (-c).
    const uint64_t period =
        sample.has(perfdata::kSamplePeriod) ? sample.period : reader.attrs()[static_cast<size_t>(ai)].attr.sample_period;
    out.hists[static_cast<size_t>(ai)].add(
        sample_entry(machine, symbolizer, thread, sample, cpumode,
                     find_sample_map(machine, symbolizer, &thread, cpumode, sample.ip)),
        period);
  };
  out.problems = replay(reader, machine, symbolizer, nullptr, handlers).problems;
  while (out.hists.size() < reader.attrs().size()) out.hists.emplace_back(keys);
  return out;
}

}  // namespace tperf::analysis
