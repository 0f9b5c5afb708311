// The replay driver on two threads hands every record to the handlers exactly as it does on one:
// the same records, in the same order, with every field of each (where it lies in the file or the
// decompressed stream, which file of a directory, its header, bytes, payload and time), and the
// same ones told as repeats. Files built with our writer in each layout the batches describe in
// their own way: plain, byte-swapped, zstd, mapped, a `--threads` directory, and records with a
// payload or a size that is not a multiple of 8.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/sample_path.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "perfdata/records.h"
#include "perfdata/writer.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"
#include "test_util.h"
#include "util/build_id.h"

namespace tperf {
namespace {

using perfdata::RecordBuilder;
using perfdata::Writer;
using test::TempDir;

// cpu-clock samples with callchains, as `perf record -e cpu-clock -c 10000 -g` writes them.
perfdata::PerfEventAttr chain_attr() {
  return test::cpu_clock_attr(perfdata::kSampleIp | perfdata::kSampleTid | perfdata::kSampleTime |
                                  perfdata::kSamplePeriod | perfdata::kSampleCpu | perfdata::kSampleCallchain,
                              10000);
}

// What a file holds besides samples.
struct Extras {
  bool aux_payload = false;  // AUXTRACE records, each followed by a payload outside its size
  bool odd_size = false;     // records of an unknown user type whose size is not a multiple of 8
};

// Records of two threads on two cpus, written round by round with the cpus' records apart (as
// perf writes one ring buffer after the other), so that ordering interleaves them, in bursts of
// ten. Runs of equal samples (repeats) and samples that differ only in period or stack, a COMM now
// and then. `swap`: the file is written in the other byte order (the crafted bodies are swapped
// here, the builder swaps the rest).
void write_records(Writer& w, const RecordBuilder& rb, Extras extras, bool swap, int rounds) {
  uint64_t time = 1000;
  for (int r = 0; r < rounds; ++r) {
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
      const uint32_t tid = 100 + cpu;
      for (int i = 0; i < 700; ++i) {
        const uint64_t t = time + static_cast<uint64_t>(i / 10) * 20 + cpu * 10 + static_cast<uint64_t>(i % 10);
        perfdata::Sample s;
        s.pid = s.tid = tid;
        s.cpu = cpu;
        s.time = t;
        s.ip = 0xffffffff81000000ULL + static_cast<uint64_t>((i / 5) % 13) * 16;
        s.period = 10000 + static_cast<uint64_t>(i % 11 == 0);
        s.callchain = {perfdata::kContextKernel, s.ip, 0xffffffff81001000ULL};
        for (int d = 0; d < 1 + (i / 7) % 9; ++d) s.callchain.push_back(0xffffffff81002000ULL + 8 * static_cast<uint64_t>(d));
        w.write_record(rb.sample(s, perfdata::kMiscKernel));
        if (i % 250 == 3) {
          perfdata::CommEvent c;
          c.pid = c.tid = static_cast<int32_t>(tid);
          c.comm = fmt::format("w{}-{}", tid, i);
          perfdata::SampleId sid;
          sid.pid = sid.tid = tid;
          sid.time = t + 1;
          sid.cpu = cpu;
          w.write_record(rb.comm(c, sid));
        }
        if (extras.aux_payload && i % 300 == 7) {
          std::vector<uint8_t> payload(24 + static_cast<size_t>(i % 3) * 8, static_cast<uint8_t>(i));
          std::vector<uint8_t> body(40, 0);
          const uint64_t size = swap ? __builtin_bswap64(payload.size()) : payload.size();
          const uint32_t on_cpu = swap ? __builtin_bswap32(cpu) : cpu;
          std::memcpy(body.data(), &size, 8);
          std::memcpy(body.data() + 28, &on_cpu, 4);
          w.write_record(rb.record(perfdata::kRecordAuxtrace, 0, body));
          w.write_bytes(payload);
        }
        if (extras.odd_size && i % 333 == 5) {
          const std::vector<uint8_t> body(static_cast<size_t>(4 + i % 3), static_cast<uint8_t>(0x5a));
          w.write_record(rb.record(90, 0, body));
        }
      }
    }
    time += 14000;
    w.write_record(rb.finished_round());
  }
}

struct Layout {
  const char* name;
  Writer::Options writer;
  bool map = false;
  bool directory = false;
  Extras extras;
};

std::string write_layout(const TempDir& dir, const Layout& l) {
  const perfdata::PerfEventAttr a = chain_attr();
  if (!l.directory) {
    const std::string path = dir.file(std::string(l.name) + ".data");
    Writer w(l.writer);
    w.open(path);
    w.add_attr(a, {1}, "cpu-clock");
    write_records(w, w.builder(0), l.extras, l.writer.swap, 4);
    w.finish();
    return path;
  }
  const std::string path = dir.file(l.name);
  std::filesystem::create_directories(path);
  {
    Writer w(l.writer);
    w.open(path + "/data");
    w.add_attr(a, {1}, "cpu-clock");
    w.set_dir_format(1);
    write_records(w, w.builder(0), l.extras, l.writer.swap, 1);
    w.finish();
  }
  for (int part = 0; part < 2; ++part) {
    Writer::Options o = l.writer;
    o.headerless = true;
    Writer w(o);
    w.open(fmt::format("{}/data.{}", path, part));
    w.add_attr(a, {1}, "cpu-clock");
    write_records(w, RecordBuilder(a), l.extras, l.writer.swap, 2);
    w.finish();
  }
  return path;
}

struct Delivered {
  std::vector<std::string> lines;  // one per record handed to a handler
  size_t samples = 0, repeats = 0, others = 0;
  size_t from_compressed = 0, stable = 0, other_file = 0, payloads = 0, odd_sizes = 0;
  std::vector<std::string> problems;
};

// A record's every field as a handler sees it (whether it came as a repeat aside).
std::string describe(const perfdata::Record& rec, uint64_t time) {
  std::string bytes;
  for (uint8_t b : rec.bytes) bytes += fmt::format("{:02x}", b);
  std::string payload;
  for (uint8_t b : rec.payload) payload += fmt::format("{:02x}", b);
  return fmt::format("t={} off={:#x} soff={:#x} comp={} file={} type={} misc={} size={} bytes={} payload={}/{}",
                     time, rec.offset, rec.stream_offset, rec.from_compressed, rec.file_index, rec.type, rec.misc,
                     rec.size, bytes, rec.payload_size, payload);
}

Delivered replay_with(const std::string& path, const Layout& l, unsigned jobs) {
  Delivered out;
  perfdata::Reader::Options ro;
  ro.map = l.map;
  auto reader = perfdata::Reader::open(path, ro);
  std::unique_ptr<session::Machine> machine = analysis::make_report_machine(*reader);
  symbols::Symbolizer symbolizer(*machine, {});
  analysis::ReplayHandlers h;
  h.jobs = jobs;
  auto count = [&](const perfdata::Record& rec) {
    out.from_compressed += rec.from_compressed;
    out.stable += rec.stable;
    out.other_file += rec.file_index != 0;
    out.payloads += rec.payload_size != 0;
    out.odd_sizes += rec.bytes.size() % 8 != 0;
  };
  h.on_sample = [&](const perfdata::Record& rec, uint64_t time) {
    ++out.samples;
    count(rec);
    out.lines.push_back(describe(rec, time));
  };
  h.on_repeat = [&](const perfdata::Record& rec, uint64_t time) {
    ++out.repeats;
    count(rec);
    out.lines.push_back(describe(rec, time));
  };
  h.on_other = [&](const perfdata::Record& rec, uint64_t time) {
    ++out.others;
    count(rec);
    out.lines.push_back(describe(rec, time));
  };
  out.problems = analysis::replay(*reader, *machine, symbolizer, nullptr, h).problems;
  return out;
}

TEST(ReplayTest, TwoThreadsDeliverEveryRecordAsOneThreadDoes) {
  TempDir dir;
  const Extras all{.aux_payload = true, .odd_size = true};
  const std::vector<Layout> layouts = {
      {"plain", {}, false, false, {}},
      {"plain_extras", {}, false, false, all},
      {"swapped", {.swap = true}, false, false, all},
      {"zstd", {.compression_level = 3}, false, false, all},
      {"zstd_swapped", {.swap = true, .compression_level = 3}, false, false, {}},
      {"mapped", {}, true, false, all},
      {"directory", {}, false, true, {}},
  };
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    const std::string path = write_layout(dir, l);
    const Delivered one = replay_with(path, l, 1);
    const Delivered two = replay_with(path, l, 2);
    EXPECT_TRUE(one.problems.empty()) << one.problems.front();
    EXPECT_TRUE(two.problems.empty()) << two.problems.front();
    // Set-up: each layout holds what it is there for, and enough records for many batches.
    EXPECT_GT(one.samples + one.repeats, 5000u);
    EXPECT_GT(one.repeats, 1000u) << "set-up: too few repeated samples";
    EXPECT_GT(one.others, 10u);
    if (l.writer.compression_level) {
      EXPECT_GT(one.from_compressed, one.lines.size() * 9 / 10);
    }
    if (l.map) {
      EXPECT_GT(one.stable, one.lines.size() / 2);
    }
    if (l.directory) {
      EXPECT_GT(one.other_file, 1000u);
    }
    if (l.extras.aux_payload) {
      EXPECT_GT(one.payloads, 10u);
    }
    if (l.extras.odd_size) {
      EXPECT_GT(one.odd_sizes, 10u);
    }
    ASSERT_EQ(one.lines.size(), two.lines.size());
    for (size_t i = 0; i < one.lines.size(); ++i) ASSERT_EQ(one.lines[i], two.lines[i]) << "record " << i;
    // A repeat is missed on two threads only at the start of a batch.
    EXPECT_LE(two.repeats, one.repeats);
    EXPECT_GT(two.repeats, one.repeats * 9 / 10);
  }
}

// 3,000 samples of one thread, in rounds of 500, of an event that can sample the kernel: the one
// at `kernel_at` (-1: none) taken in the kernel, the others in user space; `ids`: the file's
// build-id table (none when empty).
std::string write_kernel_watch_file(const std::string& path, int kernel_at,
                                    const std::vector<perfdata::BuildIdEntry>& ids = {}) {
  Writer w;
  w.open(path);
  w.add_attr(chain_attr(), {1}, "cpu-clock");
  if (!ids.empty()) w.set_build_ids(ids);
  const RecordBuilder rb = w.builder(0);
  for (int i = 0; i < 3000; ++i) {
    perfdata::Sample s;
    s.pid = s.tid = 100;
    s.time = 1000 + static_cast<uint64_t>(i);
    s.period = 10000;
    const bool kernel = i == kernel_at;
    s.ip = kernel ? 0xffffffff81000010ULL : 0x401000 + static_cast<uint64_t>(i % 7) * 16;
    s.callchain = {kernel ? perfdata::kContextKernel : perfdata::kContextUser, s.ip};
    w.write_record(rb.sample(s, kernel ? perfdata::kMiscKernel : perfdata::kMiscUser));
    if (i % 500 == 499) w.write_record(rb.finished_round());
  }
  w.finish();
  return path;
}

// Replays `path` as a report does (symbols loaded ahead) on `jobs` threads, calling
// `on_sample(samples delivered before this one, symbolizer)` for each sample; checks that it went
// without problems and delivered all 3,000. Returns whether an early kallsyms read began.
bool replay_kernel_watch_file(const std::string& path, unsigned jobs,
                              const std::function<void(size_t, const symbols::Symbolizer&)>& on_sample) {
  auto reader = perfdata::Reader::open(path);
  std::unique_ptr<session::Machine> machine = analysis::make_report_machine(*reader);
  symbols::Symbolizer symbolizer(*machine, {});
  analysis::SymbolPreloader preloader(*machine, symbolizer);
  analysis::ReplayHandlers h;
  h.jobs = jobs;
  size_t samples = 0;
  h.on_sample = [&](const perfdata::Record&, uint64_t) { on_sample(samples++, symbolizer); };
  const analysis::ReplayResult r = analysis::replay(*reader, *machine, symbolizer, &preloader, h);
  preloader.wait();
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(samples, 3000u);
  return symbolizer.kernel_symbols_read_early();
}

// The kernel's symbols are read ahead from the first sample taken in the kernel on, on one thread
// or two, and not at all for a file whose event could sample the kernel but never did.
TEST(ReplayTest, KernelSymbolsAreReadAheadOnlyOnceAKernelSampleComes) {
  TempDir dir;
  ASSERT_FALSE(chain_attr().flag(perfdata::kFlagExcludeKernel)) << "set-up: the event must be able to sample the kernel";
  const std::string user_only = write_kernel_watch_file(dir.file("user.data"), -1);
  const std::string one_kernel = write_kernel_watch_file(dir.file("kernel.data"), 2500);
  for (unsigned jobs : {1u, 2u}) {
    for (const auto& [path, expect] : {std::pair{user_only, false}, std::pair{one_kernel, true}}) {
      SCOPED_TRACE(fmt::format("{} -j {}", path, jobs));
      bool early_before_kernel = false;
      const bool early = replay_kernel_watch_file(path, jobs, [&](size_t before, const symbols::Symbolizer& sym) {
        // On one thread the read begins as the kernel sample (the 2,501st) is read: the samples
        // of the rounds before the last but one (the first 2,000) are delivered before that.
        if (jobs == 1 && before < 2000 && sym.kernel_symbols_read_early()) early_before_kernel = true;
      });
      EXPECT_EQ(early, expect);
      EXPECT_FALSE(early_before_kernel);
    }
  }
}

// A file whose build-id table names the running kernel (perf record lists the DSOs its samples
// hit) has the kernel's symbols read from the start of the replay, before its first sample, on
// one thread or two; one that names user files only, not before its kernel sample; one that names
// another kernel, never (its symbols would come from the build-id cache, not /proc/kallsyms).
TEST(ReplayTest, KernelSymbolsAreReadFromTheStartWhenTheBuildIdTableNamesTheKernel) {
  const std::optional<util::BuildId> running = util::running_kernel_build_id();
  ASSERT_TRUE(running) << "set-up: the running kernel's build id (/sys/kernel/notes)";
  TempDir dir;
  enum class Listed { kRunningKernel, kOtherKernel, kUserFile };
  auto write = [&](const std::string& name, Listed listed) {
    std::vector<perfdata::BuildIdEntry> ids(1);
    ids[0].build_id.assign(20, 0x5a);
    if (listed != Listed::kUserFile) {
      ids[0].misc = perfdata::kMiscKernel;
      ids[0].filename = "[kernel.kallsyms]";
      if (listed == Listed::kRunningKernel) ids[0].build_id.assign(running->bytes.begin(), running->bytes.begin() + running->size);
    } else {
      ids[0].misc = perfdata::kMiscUser;
      ids[0].pid = 100;
      ids[0].filename = "/usr/bin/true";
    }
    return write_kernel_watch_file(dir.file(name), 2500, ids);
  };
  const std::string listed = write("listed.data", Listed::kRunningKernel);
  const std::string other = write("other.data", Listed::kOtherKernel);
  const std::string unlisted = write("unlisted.data", Listed::kUserFile);
  struct Case {
    std::string path;
    bool at_first, at_end;
  };
  for (unsigned jobs : {1u, 2u}) {
    for (const Case& c : {Case{listed, true, true}, Case{unlisted, false, true}, Case{other, false, false}}) {
      SCOPED_TRACE(fmt::format("{} -j {}", c.path, jobs));
      bool early_at_first = false;
      const bool early = replay_kernel_watch_file(c.path, jobs, [&](size_t before, const symbols::Symbolizer& sym) {
        if (before == 0) early_at_first = sym.kernel_symbols_read_early();
      });
      EXPECT_EQ(early_at_first, c.at_first);
      EXPECT_EQ(early, c.at_end);  // the kernel sample begins it, but for another kernel
    }
  }
}

}  // namespace
}  // namespace tperf
