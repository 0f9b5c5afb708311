// libFuzzer target for the perf.data reader: any byte string must either read cleanly or end in
// FormatError/IoError. Every other exception, crash, sanitizer report or hang is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/features.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"

// Folding every byte a span points at into a value the compiler cannot drop (it has external
// linkage) makes ASan check that the views the reader hands out really point into live memory.
uint64_t g_tperf_fuzz_sink = 0;

namespace {

namespace pd = tperf::perfdata;

// Enough to reach every code path of a corpus file; more only slows the fuzzer down.
constexpr uint64_t kMaxRecords = 1'000'000;

uint64_t& g_sink = g_tperf_fuzz_sink;

void touch(std::span<const uint8_t> bytes) {
  uint64_t sum = bytes.size();
  for (uint8_t b : bytes) sum = sum * 31 + b;
  g_sink += sum;
}

void touch_sample(const pd::Sample& s) {
  g_sink += s.ip + s.pid + s.tid + s.time + s.period + s.callchain.size() + s.branches.size() +
            s.read.values.size() + s.regs_user.regs.size() + s.regs_intr.regs.size() + s.branch_counters.size();
  for (uint64_t ip : s.callchain) g_sink += ip;
  for (const pd::BranchEntry& b : s.branches) g_sink += b.from ^ b.to;
  touch(s.raw);
  touch(s.stack_user);
  touch(s.aux);
}

void touch_features(const pd::Features& f) {
  g_sink += f.present.count() + f.hostname.size() + f.osrelease.size() + f.version.size() + f.arch.size() +
            f.cpudesc.size() + f.cpuid.size() + f.nr_cpus_online + f.total_mem_kb + f.cmdline.size() +
            f.event_desc.size() + f.build_ids.size() + f.cpu_topology.cpus.size() + f.numa_topology.size() +
            f.pmu_mappings.size() + f.group_desc.size() + f.caches.size() + f.first_sample_time +
            f.last_sample_time + f.compressed.level + f.clock_data.clockid + f.hybrid_topology.size() +
            f.cpu_pmu_caps.size() + f.warnings.size();
  for (const auto& [bit, raw] : f.raw) {
    g_sink += pd::feature_name(bit).size();
    touch(raw);
  }
  for (const pd::EventDescEntry& e : f.event_desc) g_sink += e.name.size() + e.ids.size();
  for (const pd::BuildIdEntry& b : f.build_ids) g_sink += b.build_id.size() + b.filename.size();
}

void read_all(int fd) {
  std::unique_ptr<pd::Reader> reader = pd::Reader::from_fd(fd, "fuzz", pd::Reader::Options{});
  for (const pd::EventAttr& a : reader->attrs()) g_sink += a.ids.size() + a.name.size();
  pd::Record rec;
  pd::Sample sample;
  for (uint64_t n = 0; n < kMaxRecords && reader->next(rec); ++n) {
    touch(rec.bytes);
    touch(rec.payload);
    g_sink += std::char_traits<char>::length(pd::record_type_name(rec.type));
    g_sink += static_cast<uint64_t>(reader->attr_index_of(rec));
    // A bad sample is an error for that record only; the reader itself goes on.
    try {
      sample.clear();
      if (rec.type == pd::kRecordSample) {
        reader->decode_sample(rec, sample);
        touch_sample(sample);
      } else if (reader->decode_sample_id(rec, sample)) {
        touch_sample(sample);
      }
    } catch (const pd::FormatError&) {
    }
  }
  touch_features(reader->features());
  g_sink += reader->stats().records + reader->warnings().size() + reader->ids().size() + reader->data_size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("perfdata_fuzz", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  if (lseek(fd, 0, SEEK_SET) != 0) std::abort();
  try {
    read_all(fd);
  } catch (const pd::FormatError&) {
  } catch (const pd::IoError&) {
  }
  close(fd);
  return 0;
}
