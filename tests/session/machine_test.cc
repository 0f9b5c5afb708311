// The machine model on writer-made files fed through Reader + Machine::process: fork (copy, share,
// synthesized), exec, comm history, overlapping maps, kernel maps and KSYMBOL, exit and retire,
// tid reuse, the memory bound over 100,000 short tasks; and against perf itself: `perf report
// --mmaps` on a synthetic file (threads, comms and every map) and `perf report --tasks` on a
// real recording.
#include "session/machine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "session/ordered_events.h"
#include "test_util.h"

namespace tperf::session {
namespace {

using namespace perfdata;
using test::TempDir;

PerfEventAttr sideband_attr() { return test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod); }

// Records of one synthetic session, in the order they are added (times increase unless given).
class Trace {
 public:
  uint64_t now = 1000000;
  uint64_t step = 1000;  // ns between records

  uint64_t tick() { return now += step; }

  void comm(int32_t pid, int32_t tid, const std::string& name, bool exec = false) {
    CommEvent e;
    e.pid = pid;
    e.tid = tid;
    e.comm = name;
    e.exec = exec;
    add(rb_.comm(e, sid(pid, tid, tick())));
  }
  void fork(int32_t pid, int32_t tid, int32_t ppid, int32_t ptid, uint16_t misc = 0) {
    TaskEvent e{pid, ppid, tid, ptid, tick(), misc};
    add(rb_.fork(e, sid(pid, tid, e.time)));
  }
  void exit(int32_t pid, int32_t tid, int32_t ppid, int32_t ptid) {
    TaskEvent e{pid, ppid, tid, ptid, tick(), 0};
    add(rb_.exit(e, sid(pid, tid, e.time)));
  }
  void mmap2(int32_t pid, int32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff, const std::string& file,
             uint64_t ino = 7, uint32_t prot = 5, std::vector<uint8_t> build_id = {}) {
    Mmap2Event e;
    e.pid = pid;
    e.tid = tid;
    e.addr = addr;
    e.len = len;
    e.pgoff = pgoff;
    e.maj = 8;
    e.min = 1;
    e.ino = ino;
    e.prot = prot;
    e.build_id = std::move(build_id);
    e.filename = file;
    add(rb_.mmap2(e, sid(pid, tid, tick())));
  }
  void mmap(int32_t pid, int32_t tid, uint64_t addr, uint64_t len, uint64_t pgoff, const std::string& file,
            uint16_t misc = kMiscUser) {
    MmapEvent e;
    e.misc = misc;
    e.pid = pid;
    e.tid = tid;
    e.addr = addr;
    e.len = len;
    e.pgoff = pgoff;
    e.filename = file;
    add(rb_.mmap(e, sid(pid, tid, tick())));
  }
  void kernel_mmap(uint64_t addr, uint64_t len, uint64_t pgoff, const std::string& file) {
    mmap(-1, 0, addr, len, pgoff, file, kMiscKernel);
  }
  void ksymbol(uint64_t addr, uint32_t len, const std::string& name, bool unregister = false) {
    KsymbolEvent e;
    e.addr = addr;
    e.len = len;
    e.name = name;
    e.flags = unregister ? 1 : 0;
    add(rb_.ksymbol(e, sid(-1, 0, tick())));
  }
  // What perf record writes after each pass over the ring buffers.
  void round() { add(rb_.finished_round()); }
  void sample(int32_t pid, int32_t tid, uint64_t ip, uint16_t misc = kMiscUser) {
    Sample s;
    s.ip = ip;
    s.pid = static_cast<uint32_t>(pid);
    s.tid = static_cast<uint32_t>(tid);
    s.time = tick();
    s.period = 100000;
    add(rb_.sample(s, misc));
  }

  std::string write(const TempDir& dir, const std::string& name = "machine.data") const {
    std::string path = dir.file(name);
    Writer w;
    w.open(path);
    w.add_attr(sideband_attr(), {1}, "cpu-clock");
    for (const auto& r : records_) w.write_record(r);
    w.finish();
    return path;
  }

 private:
  static SampleId sid(int32_t pid, int32_t tid, uint64_t time) {
    SampleId s;
    s.pid = static_cast<uint32_t>(pid);
    s.tid = static_cast<uint32_t>(tid);
    s.time = time;
    return s;
  }
  void add(std::vector<uint8_t> r) { records_.push_back(std::move(r)); }

  RecordBuilder rb_{sideband_attr()};
  std::vector<std::vector<uint8_t>> records_;
};

// Reads `path` and applies every record in file order; `after` runs after each one with its time.
void feed(const std::string& path, Machine& m, const std::function<void(const Record&, uint64_t)>& after = {}) {
  auto reader = Reader::open(path);
  Record rec;
  while (reader->next(rec)) {
    uint64_t time = 0;
    reader->record_time(rec, &time);
    m.process(*reader, rec, time);
    if (after) after(rec, time);
  }
}

void feed(const Trace& t, Machine& m) {
  TempDir dir;
  feed(t.write(dir), m);
}

std::string comm_of(const Thread* t) { return t && t->comm() ? *t->comm() : std::string("(none)"); }

std::string dso_at(const Machine& m, const Thread* t, uint8_t cpumode, uint64_t addr) {
  const Map* map = m.find_map(t, cpumode, addr);
  return map && map->dso ? *map->dso->name : std::string("(none)");
}

// "start-end pgoff dso" per map, for comparing a whole address space at once.
std::vector<std::string> layout(const AddressSpace& a) {
  std::vector<std::string> out;
  for (const Map& m : a.maps()) {
    std::ostringstream s;
    s << std::hex << m.start << "-" << m.end << " " << m.pgoff << " " << (m.dso ? *m.dso->name : "-");
    out.push_back(s.str());
  }
  return out;
}

// ----------------------------------------------------------------------------------------------
// AddressSpace: overlap rules (perf's maps fixup: keep the parts of an older map outside the new
// one; the tail keeps mapping the same file bytes, so its pgoff grows by the cut).

class AddressSpaceTest : public ::testing::Test {
 protected:
  StringPool strings;
  DsoTable dsos{strings};
  AddressSpace space;

  void add(uint64_t start, uint64_t end, uint64_t pgoff, const char* name) {
    Map m;
    m.start = start;
    m.end = end;
    m.pgoff = pgoff;
    m.dso = dsos.intern(name, {}, false);
    space.insert(m);
  }
};

TEST_F(AddressSpaceTest, DisjointMapsStaySortedAndFindIsExact) {
  add(0x3000, 0x4000, 0, "c");
  add(0x1000, 0x2000, 0, "a");
  add(0x2000, 0x3000, 0, "b");  // adjacent on both sides: nothing is cut
  EXPECT_EQ(layout(space), (std::vector<std::string>{"1000-2000 0 a", "2000-3000 0 b", "3000-4000 0 c"}));
  EXPECT_EQ(space.find(0xfff), nullptr);
  EXPECT_EQ(*space.find(0x1000)->dso->name, "a");
  EXPECT_EQ(*space.find(0x1fff)->dso->name, "a");
  EXPECT_EQ(*space.find(0x2000)->dso->name, "b");
  EXPECT_EQ(*space.find(0x3fff)->dso->name, "c");
  EXPECT_EQ(space.find(0x4000), nullptr);
}

TEST_F(AddressSpaceTest, NewMapCutsTheTailOfAnOlderOne) {
  add(0x1000, 0x5000, 0x100, "old");
  add(0x4000, 0x6000, 0, "new");
  EXPECT_EQ(layout(space), (std::vector<std::string>{"1000-4000 100 old", "4000-6000 0 new"}));
}

TEST_F(AddressSpaceTest, NewMapCutsTheHeadOfAnOlderOneAndTheTailKeepsItsFileOffset) {
  add(0x1000, 0x5000, 0x100, "old");
  add(0x0800, 0x2000, 0, "new");
  EXPECT_EQ(layout(space), (std::vector<std::string>{"800-2000 0 new", "2000-5000 1100 old"}));
  // The same address maps to the same file offset as before the cut.
  EXPECT_EQ(space.find(0x3000)->map_ip(0x3000), 0x3000u - 0x1000 + 0x100);
}

TEST_F(AddressSpaceTest, NewMapInTheMiddleSplitsAnOlderOneInThree) {
  add(0x1000, 0x9000, 0x10000, "big");
  add(0x4000, 0x5000, 0, "mid");
  EXPECT_EQ(layout(space),
            (std::vector<std::string>{"1000-4000 10000 big", "4000-5000 0 mid", "5000-9000 14000 big"}));
}

TEST_F(AddressSpaceTest, FullCoverReplaces) {
  add(0x1000, 0x2000, 0, "a");
  add(0x1000, 0x2000, 0x5000, "b");
  EXPECT_EQ(layout(space), (std::vector<std::string>{"1000-2000 5000 b"}));
  add(0x0000, 0x3000, 0, "c");
  EXPECT_EQ(layout(space), (std::vector<std::string>{"0-3000 0 c"}));
}

TEST_F(AddressSpaceTest, ManySmallMapsUnderOneBigAreReplacedAndTheEdgesKept) {
  add(0x0, 0x1000, 0, "left");
  for (uint64_t i = 0; i < 100; ++i) add(0x1000 + i * 0x1000, 0x2000 + i * 0x1000, 0, "small");
  add(0x65000, 0x66000, 0, "right");
  ASSERT_EQ(space.size(), 102u);
  // From the middle of the first small map to the middle of the last one.
  add(0x1800, 0x64800, 0x40, "big");
  EXPECT_EQ(layout(space), (std::vector<std::string>{"0-1000 0 left", "1000-1800 0 small", "1800-64800 40 big",
                                                     "64800-65000 800 small", "65000-66000 0 right"}));
}

TEST_F(AddressSpaceTest, EmptyMapsAreIgnored) {
  add(0x1000, 0x1000, 0, "empty");
  EXPECT_EQ(space.size(), 0u);
}

// ----------------------------------------------------------------------------------------------
// DSOs

TEST(DsoTable, InternsByNameAndBuildId) {
  StringPool strings;
  DsoTable dsos(strings);
  BuildId a, b;
  a.size = b.size = 20;
  a.bytes[0] = 0xab;
  a.bytes[19] = 0x01;
  b.bytes[0] = 0xcd;
  Dso* plain = dsos.intern("/usr/lib/libc.so.6", {}, false);
  EXPECT_EQ(dsos.intern("/usr/lib/libc.so.6", {}, false), plain);
  // A build id fills in the DSO that had none; another build id is another DSO of that name.
  EXPECT_EQ(dsos.intern("/usr/lib/libc.so.6", a, false), plain);
  EXPECT_EQ(plain->build_id, a);
  Dso* other = dsos.intern("/usr/lib/libc.so.6", b, false);
  EXPECT_NE(other, plain);
  EXPECT_EQ(dsos.intern("/usr/lib/libc.so.6", a, false), plain);
  EXPECT_EQ(dsos.intern("/usr/lib/libc.so.6", b, false), other);
  EXPECT_EQ(dsos.intern("/usr/lib/libc.so.6", {}, false), plain);  // no build id: the first of the name
  EXPECT_EQ(dsos.find("/usr/lib/libc.so.6"), plain);
  EXPECT_EQ(dsos.find("/nope"), nullptr);
  EXPECT_EQ(dsos.size(), 2u);
  EXPECT_EQ(a.hex(), "ab00000000000000000000000000000000000001");
  BuildId md5;
  md5.size = 16;
  md5.bytes[15] = 0xff;
  EXPECT_EQ(md5.hex(), "000000000000000000000000000000ff");
  EXPECT_EQ(plain->short_name(), "libc.so.6");
}

TEST(DsoTable, ShortNamesFollowPerf) {
  StringPool strings;
  DsoTable dsos(strings);
  EXPECT_EQ(dsos.intern("[kernel.kallsyms]", {}, true)->short_name(), "[kernel.kallsyms]");
  EXPECT_EQ(dsos.intern("/lib/modules/6.1.0/kernel/net/nf-tables.ko.xz", {}, true)->short_name(), "[nf_tables]");
  EXPECT_EQ(dsos.intern("[vdso]", {}, false)->short_name(), "[vdso]");
  EXPECT_EQ(dsos.intern("/tmp/perf-1234.map", {}, false)->short_name(), "[JIT] tid 1234");
  EXPECT_EQ(dsos.intern("bpf_prog_6deef7357e7b4530_sd_fw_ingress", {}, true)->short_name(),
            "bpf_prog_6deef7357e7b4530_sd_fw_ingress");
}

TEST(DsoTable, BuildIdFeatureEntriesAttachByName) {
  StringPool strings;
  DsoTable dsos(strings);
  Dso* libc = dsos.intern("/usr/lib/libc.so.6", {}, false);
  BuildIdEntry e;
  e.misc = kMiscUser;
  e.pid = 42;
  e.filename = "/usr/lib/libc.so.6";
  e.build_id = std::vector<uint8_t>(20, 0x11);
  BuildIdEntry k;
  k.misc = kMiscKernel;
  k.filename = "[kernel.kallsyms]";
  k.build_id = std::vector<uint8_t>(20, 0x22);
  dsos.apply_build_ids({e, k});
  EXPECT_EQ(libc->build_id.hex(), std::string(40, '1'));
  // The kernel DSO did not exist yet: it is created with its build id, and a later map finds it.
  Dso* kernel = dsos.find("[kernel.kallsyms]");
  ASSERT_NE(kernel, nullptr);
  EXPECT_TRUE(kernel->kernel);
  EXPECT_EQ(kernel->build_id.hex(), std::string(40, '2'));
  EXPECT_EQ(dsos.intern("[kernel.kallsyms]", {}, true), kernel);
}

// ----------------------------------------------------------------------------------------------
// Threads and processes through records

TEST(Machine, ForkOfANewProcessCopiesTheParentsMaps) {
  Trace t;
  t.comm(100, 100, "parent");
  t.mmap2(100, 100, 0x400000, 0x1000, 0, "/bin/parent");
  t.fork(101, 101, 100, 100);
  t.mmap2(100, 100, 0x500000, 0x1000, 0, "/lib/after-fork-parent.so");
  t.mmap2(101, 101, 0x600000, 0x1000, 0, "/lib/after-fork-child.so");
  Machine m;
  feed(t, m);
  const Thread* parent = m.find_thread(100);
  const Thread* child = m.find_thread(101);
  ASSERT_TRUE(parent && child);
  EXPECT_NE(parent->maps(), child->maps());
  EXPECT_EQ(child->ppid(), 100);
  EXPECT_EQ(comm_of(child), "parent");
  EXPECT_EQ(dso_at(m, child, kMiscUser, 0x400010), "/bin/parent");
  EXPECT_EQ(dso_at(m, child, kMiscUser, 0x500010), "(none)");
  EXPECT_EQ(dso_at(m, child, kMiscUser, 0x600010), "/lib/after-fork-child.so");
  EXPECT_EQ(dso_at(m, parent, kMiscUser, 0x500010), "/lib/after-fork-parent.so");
  EXPECT_EQ(dso_at(m, parent, kMiscUser, 0x600010), "(none)");
  EXPECT_EQ(m.mem_stats().address_spaces, 2u);
}

TEST(Machine, ForkOfAThreadSharesTheProcessMaps) {
  Trace t;
  t.comm(100, 100, "app");
  t.mmap2(100, 100, 0x400000, 0x1000, 0, "/bin/app");
  t.fork(100, 102, 100, 100);
  t.mmap2(100, 102, 0x700000, 0x1000, 0, "/lib/loaded-by-thread.so");
  t.comm(100, 102, "worker");
  Machine m;
  feed(t, m);
  const Thread* leader = m.find_thread(100);
  const Thread* thread = m.find_thread(102);
  ASSERT_TRUE(leader && thread);
  EXPECT_EQ(leader->maps(), thread->maps());
  EXPECT_EQ(thread->pid(), 100);
  EXPECT_EQ(thread->ppid(), 100);
  EXPECT_EQ(dso_at(m, leader, kMiscUser, 0x700000), "/lib/loaded-by-thread.so");
  EXPECT_EQ(comm_of(leader), "app");
  EXPECT_EQ(comm_of(thread), "worker");
  EXPECT_EQ(m.mem_stats().address_spaces, 1u);
}

TEST(Machine, SynthesizedForkDoesNotCopyMaps) {
  Trace t;
  t.comm(1, 1, "init");
  t.mmap2(1, 1, 0x400000, 0x1000, 0, "/sbin/init");
  t.fork(300, 300, 1, 1, kMiscForkExec);
  t.comm(300, 300, "daemon");
  t.mmap2(300, 300, 0x800000, 0x1000, 0, "/usr/sbin/daemon");
  Machine m;
  feed(t, m);
  const Thread* d = m.find_thread(300);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->maps()->size(), 1u);
  EXPECT_EQ(dso_at(m, d, kMiscUser, 0x400000), "(none)");
  EXPECT_EQ(dso_at(m, d, kMiscUser, 0x800000), "/usr/sbin/daemon");
  // perf gives it the parent's comm first, then its own.
  ASSERT_EQ(d->comms().size(), 2u);
  EXPECT_EQ(*d->comms()[0].comm, "init");
  EXPECT_EQ(comm_of(d), "daemon");
}

TEST(Machine, ExecEmptiesTheAddressSpaceOfTheWholeProcess) {
  Trace t;
  t.comm(100, 100, "sh");
  t.mmap2(100, 100, 0x400000, 0x1000, 0, "/bin/sh");
  t.fork(100, 101, 100, 100);
  t.comm(100, 100, "true", true);
  t.mmap2(100, 100, 0x500000, 0x1000, 0, "/bin/true");
  for (bool keep : {false, true}) {
    Machine::Options o;
    o.keep_maps_on_exec = keep;
    Machine m(o);
    feed(t, m);
    const Thread* leader = m.find_thread(100);
    const Thread* other = m.find_thread(101);
    ASSERT_TRUE(leader && other);
    EXPECT_EQ(dso_at(m, leader, kMiscUser, 0x500000), "/bin/true");
    EXPECT_EQ(dso_at(m, other, kMiscUser, 0x500000), "/bin/true");
    // perf 6.1 keeps the maps of the old image; by default they are gone.
    EXPECT_EQ(dso_at(m, leader, kMiscUser, 0x400000), keep ? "/bin/sh" : "(none)");
    EXPECT_EQ(dso_at(m, other, kMiscUser, 0x400000), keep ? "/bin/sh" : "(none)");
    EXPECT_EQ(m.mem_stats().maps, keep ? 2u : 1u);
  }
}

TEST(Machine, CommHistoryAndCommAt) {
  Trace t;
  t.comm(100, 100, "bash");  // 1001000
  t.fork(200, 200, 100, 100);  // 1002000: inherits "bash" from then on
  t.comm(200, 200, "make", true);  // 1003000
  t.comm(200, 200, "renamed");  // 1004000 (prctl)
  Machine m;
  feed(t, m);
  const Thread* th = m.find_thread(200);
  ASSERT_TRUE(th);
  ASSERT_EQ(th->comms().size(), 3u);
  EXPECT_EQ(th->comms()[0].time, 1002000u);
  EXPECT_FALSE(th->comms()[0].exec);
  EXPECT_TRUE(th->comms()[1].exec);
  EXPECT_FALSE(th->comms()[2].exec);
  EXPECT_EQ(comm_of(th), "renamed");
  EXPECT_EQ(*th->comm_at(1002000), "bash");
  EXPECT_EQ(*th->comm_at(1002999), "bash");
  EXPECT_EQ(*th->comm_at(1003000), "make");
  EXPECT_EQ(*th->comm_at(1003500), "make");
  EXPECT_EQ(*th->comm_at(1004000), "renamed");
  EXPECT_EQ(*th->comm_at(99999999), "renamed");
  EXPECT_EQ(*th->comm_at(5), "bash");  // before the first: the first
  EXPECT_EQ(th->start_time(), 1002000u);
}

TEST(Machine, ThreadsSeenFirstInSamplesHaveNoCommUntilOneArrives) {
  Trace t;
  t.mmap2(500, 501, 0x400000, 0x1000, 0, "/bin/x");  // no COMM, no FORK: perf makes 500 and 501
  t.comm(500, 501, "x-worker");
  Machine m;
  feed(t, m);
  const Thread* leader = m.find_thread(500);
  const Thread* worker = m.find_thread(501);
  ASSERT_TRUE(leader && worker);
  EXPECT_EQ(leader->comm(), nullptr);  // printed ":500" by perf
  EXPECT_EQ(leader->ppid(), -1);
  EXPECT_EQ(leader->maps(), worker->maps());
  ASSERT_EQ(worker->comms().size(), 1u);
  EXPECT_EQ(*worker->comm_at(0), "x-worker");
  // A thread without a FORK child inherits nothing: no comm.
  Machine m2;
  m2.findnew_thread(600, 600);
  perfdata::TaskEvent f{601, 600, 601, 600, 10, 0};
  m2.on_fork(f);
  EXPECT_EQ(m2.find_thread(601)->comm(), nullptr);
  EXPECT_EQ(m2.find_thread(601)->ppid(), 600);
}

TEST(Machine, KernelAndUserMapsAreLookedUpByCpumode) {
  Trace t;
  t.kernel_mmap(0xffffffff81000000, 0x1276508, 0xffffffff81000000, "[kernel.kallsyms]_text");
  t.kernel_mmap(0xffffffffc0400000, 0x5000, 0, "/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko");
  t.comm(100, 100, "app");
  t.mmap2(100, 100, 0x400000, 0x1000, 0x2000, "/bin/app");
  t.ksymbol(0xffffffffc0800000, 0x100, "bpf_prog_0123456789abcdef_filter");
  t.ksymbol(0xffffffff81001000, 0x40, "inside_the_kernel_image");  // perf adds no map for it
  t.ksymbol(0xffffffffc0900000, 0x100, "bpf_prog_gone");
  t.ksymbol(0xffffffffc0900000, 0x100, "bpf_prog_gone", true);
  Machine m;
  feed(t, m);
  const Thread* app = m.find_thread(100);
  ASSERT_TRUE(app);
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffff81000000), "[kernel.kallsyms]");
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffff81001000), "[kernel.kallsyms]");
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffff81000000 + 0x1276508 - 1), "[kernel.kallsyms]");
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffff81000000 + 0x1276508), "(none)");
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffffc0401000), "/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko");
  EXPECT_EQ(m.find_map(app, kMiscKernel, 0xffffffffc0401000)->dso->short_name(), "[ext4]");
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffffc0800080), "bpf_prog_0123456789abcdef_filter");
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0xffffffffc0900000), "(none)");
  EXPECT_EQ(dso_at(m, app, kMiscUser, 0x400000), "/bin/app");
  // Each address only in its own mode.
  EXPECT_EQ(dso_at(m, app, kMiscKernel, 0x400000), "(none)");
  EXPECT_EQ(dso_at(m, app, kMiscUser, 0xffffffff81000000), "(none)");
  EXPECT_EQ(dso_at(m, app, kMiscHypervisor, 0x400000), "(none)");
  EXPECT_EQ(dso_at(m, nullptr, kMiscKernel, 0xffffffff81000010), "[kernel.kallsyms]");
  EXPECT_EQ(dso_at(m, nullptr, kMiscUser, 0x400000), "(none)");
  const Map* kmap = m.find_map(app, kMiscKernel, 0xffffffff81000000);
  EXPECT_TRUE(kmap->dso->kernel);
  EXPECT_EQ(kmap->pgoff, 0xffffffff81000000u);  // the reference symbol's address
  const Map* umap = m.find_map(app, kMiscUser, 0x400100);
  EXPECT_EQ(umap->map_ip(0x400100), 0x2100u);
  EXPECT_FALSE(umap->dso->kernel);
  // The kernel's maps belong to no thread.
  EXPECT_EQ(m.find_thread(0), nullptr);
  EXPECT_EQ(m.find_thread(-1), nullptr);
}

TEST(Machine, ExitedThreadResolvesAtItsExitTimeAndIsReleasedAfter) {
  for (bool keep : {false, true}) {
    Trace t;
    t.comm(100, 100, "sh");
    t.mmap2(100, 100, 0x400000, 0x1000, 0, "/bin/sh");
    t.fork(200, 200, 100, 100);
    t.comm(200, 200, "short", true);
    t.mmap2(200, 200, 0x500000, 0x1000, 0, "/bin/short");
    t.exit(200, 200, 100, 100);
    uint64_t exit_time = t.now;
    Machine::Options o;
    o.keep_exited = keep;
    Machine m(o);
    feed(t, m);
    // A sample stamped with the exit time comes after the EXIT: retiring up to it keeps the thread.
    m.retire_exited(exit_time);
    const Thread* th = m.find_thread(200);
    ASSERT_TRUE(th);
    EXPECT_TRUE(th->exited());
    EXPECT_EQ(th->exit_time(), exit_time);
    EXPECT_EQ(comm_of(th), "short");
    EXPECT_EQ(dso_at(m, th, kMiscUser, 0x500000), "/bin/short");
    EXPECT_EQ(m.mem_stats().threads_exited, 1u);

    // Samples keep coming for a moment after a task's EXIT (a real recording had one 0.3 ms
    // later): the thread is kept for Options::exit_grace_ns.
    m.retire_exited(exit_time + 300000);
    ASSERT_NE(m.find_thread(200), nullptr);
    EXPECT_EQ(comm_of(m.find_thread(200)), "short");

    m.retire_exited(exit_time + o.exit_grace_ns + 1);
    if (keep) {
      ASSERT_NE(m.find_thread(200), nullptr);
      EXPECT_EQ(comm_of(m.find_thread(200)), "short");
      EXPECT_EQ(m.mem_stats().threads_released, 0u);
    } else {
      EXPECT_EQ(m.find_thread(200), nullptr);
      auto s = m.mem_stats();
      EXPECT_EQ(s.threads, 1u);
      EXPECT_EQ(s.threads_released, 1u);
      EXPECT_EQ(s.address_spaces, 1u);  // the child's process went with its only thread
      EXPECT_EQ(s.maps, 1u);
      // A late sample of that tid makes a new, unnamed thread (what perf does after removal).
      EXPECT_EQ(m.findnew_thread(200, 200).comm(), nullptr);
    }
  }
}

TEST(Machine, AProcessSpaceLivesUntilItsLastThreadIsReleased) {
  Trace t;
  t.comm(100, 100, "app");
  t.mmap2(100, 100, 0x400000, 0x1000, 0, "/bin/app");
  t.fork(100, 101, 100, 100);
  t.exit(100, 100, 1, 1);  // the leader exits first
  uint64_t leader_exit = t.now;
  t.mmap2(100, 101, 0x500000, 0x1000, 0, "/lib/late.so");
  t.exit(100, 101, 100, 100);
  uint64_t last_exit = t.now;
  Machine m;
  feed(t, m);
  const uint64_t grace = Machine::Options{}.exit_grace_ns;
  m.retire_exited(leader_exit + grace + 1);
  EXPECT_EQ(m.find_thread(100), nullptr);
  const Thread* th = m.find_thread(101);
  ASSERT_TRUE(th);
  EXPECT_EQ(dso_at(m, th, kMiscUser, 0x400000), "/bin/app");
  EXPECT_EQ(dso_at(m, th, kMiscUser, 0x500000), "/lib/late.so");
  EXPECT_EQ(m.mem_stats().address_spaces, 1u);
  m.retire_exited(last_exit + grace + 1);
  auto s = m.mem_stats();
  EXPECT_EQ(s.threads, 0u);
  EXPECT_EQ(s.address_spaces, 0u);
  EXPECT_EQ(s.maps, 0u);
  EXPECT_EQ(s.threads_released, 2u);
}

// report's machine (keep_exited with drop_exited_maps): every thread stays, with its comms, but
// the maps of a process go once its last thread is a grace period past its exit; while another
// thread of the process lives, they stay.
TEST(Machine, KeptExitedThreadsGiveUpTheirMapsAfterTheGracePeriod) {
  Trace t;
  t.comm(100, 100, "sh");
  t.mmap2(100, 100, 0x400000, 0x1000, 0, "/bin/sh");
  t.fork(200, 200, 100, 100);
  t.comm(200, 200, "worker", true);
  t.mmap2(200, 200, 0x500000, 0x1000, 0, "/bin/worker");
  t.fork(200, 201, 200, 200);
  t.exit(200, 200, 100, 100);  // the leader goes first; thread 201 still runs
  const uint64_t leader_exit = t.now;
  t.exit(200, 201, 100, 100);
  const uint64_t last_exit = t.now;
  Machine::Options o;
  o.keep_exited = true;
  o.drop_exited_maps = true;
  Machine m(o);
  feed(t, m);
  ASSERT_GT(last_exit, leader_exit);

  m.retire_exited(last_exit);  // within the grace period: nothing goes
  EXPECT_EQ(dso_at(m, m.find_thread(200), kMiscUser, 0x500000), "/bin/worker");
  EXPECT_EQ(m.mem_stats().address_spaces, 2u);

  // Past the leader's exit but within 201's: the space stays for 201, the leader no longer sees it.
  m.retire_exited(leader_exit + o.exit_grace_ns + 1);
  ASSERT_NE(m.find_thread(200), nullptr);
  EXPECT_EQ(comm_of(m.find_thread(200)), "worker");
  EXPECT_EQ(dso_at(m, m.find_thread(200), kMiscUser, 0x500000), "(none)");
  EXPECT_EQ(dso_at(m, m.find_thread(201), kMiscUser, 0x500000), "/bin/worker");
  EXPECT_EQ(m.mem_stats().address_spaces, 2u);

  m.retire_exited(last_exit + o.exit_grace_ns + 1);
  auto s = m.mem_stats();
  EXPECT_EQ(s.threads, 3u);  // kept, named
  EXPECT_EQ(s.threads_released, 0u);
  EXPECT_EQ(s.address_spaces, 1u);  // sh's alone
  EXPECT_EQ(s.maps, 1u);
  ASSERT_NE(m.find_thread(201), nullptr);
  EXPECT_EQ(comm_of(m.find_thread(201)), "worker");
  EXPECT_EQ(dso_at(m, m.find_thread(201), kMiscUser, 0x500000), "(none)");
  EXPECT_EQ(dso_at(m, m.find_thread(100), kMiscUser, 0x400000), "/bin/sh");
  EXPECT_EQ(m.findnew_thread(200, 201).tid(), 201);  // a late sample finds the kept thread
  EXPECT_EQ(m.mem_stats().threads, 3u);
}

TEST(Machine, ForkOfAnExistingTidReplacesTheOldTask) {
  for (bool keep : {false, true}) {
    Trace t;
    t.comm(100, 100, "first-parent");
    t.fork(200, 200, 100, 100);
    t.comm(200, 200, "old", true);
    t.mmap2(200, 200, 0x400000, 0x1000, 0, "/bin/old");
    t.exit(200, 200, 100, 100);
    t.comm(300, 300, "second-parent");
    t.mmap2(300, 300, 0x600000, 0x1000, 0, "/bin/second");
    t.fork(200, 200, 300, 300);  // pid 200 reused
    Machine::Options o;
    o.keep_exited = keep;
    Machine m(o);
    feed(t, m);
    const Thread* th = m.find_thread(200);
    ASSERT_TRUE(th);
    EXPECT_FALSE(th->exited());
    EXPECT_EQ(th->ppid(), 300);
    EXPECT_EQ(comm_of(th), "second-parent");
    ASSERT_EQ(th->comms().size(), 1u);
    EXPECT_EQ(dso_at(m, th, kMiscUser, 0x400000), "(none)");
    EXPECT_EQ(dso_at(m, th, kMiscUser, 0x600000), "/bin/second");
    EXPECT_EQ(m.mem_stats().threads_released, 1u);  // even when keeping exited threads, as perf does
    EXPECT_EQ(m.threads().size(), 3u);
    m.retire_exited(UINT64_MAX);  // the old EXIT must not release the new task
    EXPECT_NE(m.find_thread(200), nullptr);
  }
}

TEST(Machine, PidReuseWhileOldThreadsLingerGivesTheNewProcessAFreshSpace) {
  Trace t;
  t.comm(100, 100, "p");
  t.fork(200, 200, 100, 100);
  t.fork(200, 201, 200, 200);  // a thread of the old 200 whose EXIT is lost
  t.mmap2(200, 200, 0x400000, 0x1000, 0, "/bin/old");
  t.fork(200, 200, 100, 100);  // the new 200
  t.mmap2(200, 200, 0x500000, 0x1000, 0, "/bin/new");
  Machine m;
  feed(t, m);
  const Thread* fresh = m.find_thread(200);
  const Thread* stale = m.find_thread(201);
  ASSERT_TRUE(fresh && stale);
  EXPECT_NE(fresh->maps(), stale->maps());
  EXPECT_EQ(dso_at(m, fresh, kMiscUser, 0x400000), "(none)");
  EXPECT_EQ(dso_at(m, fresh, kMiscUser, 0x500000), "/bin/new");
  EXPECT_EQ(dso_at(m, stale, kMiscUser, 0x400000), "/bin/old");
  EXPECT_EQ(m.mem_stats().address_spaces, 3u);
}

TEST(Machine, MalformedRecordsThrowFormatErrorWithTheOffset) {
  // The reader refuses such records itself; a Record made by hand reaches the decoders.
  TempDir dir;
  Trace t;
  t.comm(1, 1, "x");
  auto reader = Reader::open(t.write(dir));
  std::vector<uint8_t> bytes;
  put_record_header(bytes, kRecordFork, 0, 12, false);
  bytes.resize(12, 0);  // a FORK body needs 24 bytes
  Record rec;
  rec.offset = 0x1234;
  rec.type = kRecordFork;
  rec.size = 12;
  rec.bytes = bytes;
  Machine m;
  try {
    m.process(*reader, rec, 0);
    ADD_FAILURE() << "no FormatError";
  } catch (const FormatError& e) {
    EXPECT_GE(e.offset(), 0x1234u);
  }
  EXPECT_EQ(m.mem_stats().threads, 0u);
  // Records the model has no use for are ignored.
  rec.type = kRecordLost;
  m.process(*reader, rec, 0);
  EXPECT_EQ(m.mem_stats().threads, 0u);
}

// 100,000 processes forked, exec'd, mapped and exited, with retire_exited following time: the
// model holds the tasks of the last exit_grace_ns (one second: 250 tasks here), not all.
TEST(Machine, ShortLivedTasksDoNotAccumulate) {
  constexpr int kTasks = 100000;
  Trace t;
  t.step = 1000000;  // 1 ms between records: 4 ms per task, 400 s in all
  t.comm(10, 10, "spawner");
  t.mmap2(10, 10, 0x400000, 0x10000, 0, "/bin/spawner");
  t.mmap2(10, 10, 0x7f0000000000, 0x100000, 0, "/lib/libc.so.6");
  for (int i = 0; i < kTasks; ++i) {
    int32_t pid = 1000 + (i % 30000);  // pids wrap around as on a real machine
    t.fork(pid, pid, 10, 10);
    t.comm(pid, pid, "task", true);
    t.mmap2(pid, pid, 0x500000, 0x1000, 0, "/bin/task");
    t.exit(pid, pid, 10, 10);
    if (i % 1000 == 999) t.round();
  }
  TempDir dir;
  std::string path = t.write(dir);
  Machine m;
  size_t forks = 0;
  feed(path, m, [&](const Record& rec, uint64_t time) {
    if (rec.type == kRecordFork) ++forks;
    m.retire_exited(time);
  });
  auto s = m.mem_stats();
  EXPECT_EQ(forks, static_cast<size_t>(kTasks));
  EXPECT_LT(s.threads_peak, 260u);
  EXPECT_LT(s.maps_peak, 300u);
  EXPECT_LT(s.address_spaces_peak, 260u);
  EXPECT_EQ(s.threads_released + s.threads, static_cast<size_t>(kTasks) + 1);
  EXPECT_LE(s.threads, 252u);  // the spawner and the tasks of the last second
  EXPECT_EQ(s.dsos, 3u);
  EXPECT_LT(s.approx_bytes, 256u << 10);

  // The same numbers reach the user through --mem-stats: `tperf script` releases exited tasks a
  // round and a second after their exit, while the task listing keeps every task (one per pid: a reused pid
  // replaces the old task).
  auto peak_threads = [&](const std::string& args) -> long {
    std::string err = test::run_command(std::string(TPERF_BINARY) + " " + args + " --mem-stats -i " +
                                        test::shell_quote(path) + " 2>&1 >/dev/null");
    std::smatch m;
    static const std::regex re("memory: threads ([0-9]+) held \\(([0-9]+) exited\\), peak ([0-9]+)");
    if (!std::regex_search(err, m, re)) {
      ADD_FAILURE() << args << ": " << err;
      return -1;
    }
    return std::stol(m[3].str());
  };
  // At most the tasks of the last two rounds (1,000 per round here), not all 100,000.
  EXPECT_LE(peak_threads("script"), 2300);
  EXPECT_GE(peak_threads("report --tasks"), 30000);
  EXPECT_GT(s.approx_bytes, 0u);
}

// ----------------------------------------------------------------------------------------------
// Against perf

// perf's rows: "pid tid ppid comm" and, with --mmaps, the maps of each thread.
struct TaskRow {
  std::string row;
  std::vector<std::string> maps;
};

std::map<int32_t, TaskRow> parse_perf_tasks(const std::string& text) {
  std::map<int32_t, TaskRow> out;
  std::istringstream in(text);
  std::string line;
  TaskRow* cur = nullptr;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t bar = line.find('|');
    if (bar != std::string::npos) {
      std::istringstream f(line.substr(0, bar));
      int32_t pid, tid, ppid;
      if (!(f >> pid >> tid >> ppid)) continue;
      std::string comm = line.substr(bar + 1);
      comm.erase(0, comm.find_first_not_of(' '));
      cur = &out[tid];
      cur->row = std::to_string(pid) + " " + std::to_string(tid) + " " + std::to_string(ppid) + " " + comm;
    } else if (cur) {
      line.erase(0, line.find_first_not_of(' '));
      cur->maps.push_back(line);
    }
  }
  return out;
}

std::map<int32_t, TaskRow> model_tasks(const Machine& m, bool with_maps) {
  std::map<int32_t, TaskRow> out;
  for (const Thread* t : m.threads()) {
    TaskRow& r = out[t->tid()];
    r.row = std::to_string(t->pid()) + " " + std::to_string(t->tid()) + " " + std::to_string(t->ppid()) + " " +
            (t->comm() ? *t->comm() : ":" + std::to_string(t->tid()));
    if (!with_maps || !t->maps()) continue;
    for (const Map& map : t->maps()->maps()) {
      r.maps.push_back(fmt::format("{:x}-{:x} {}{}{}{} {:08x} {} {}", map.start, map.end, map.prot & 1 ? 'r' : '-',
                                   map.prot & 2 ? 'w' : '-', map.prot & 4 ? 'x' : '-', map.flags & 1 ? 's' : 'p',
                                   map.pgoff, map.ino, *map.dso->name));
    }
  }
  return out;
}

std::string diff_tasks(const std::map<int32_t, TaskRow>& ours, const std::map<int32_t, TaskRow>& perf) {
  std::string out;
  std::set<int32_t> tids;
  for (const auto& [tid, r] : ours) tids.insert(tid);
  for (const auto& [tid, r] : perf) tids.insert(tid);
  for (int32_t tid : tids) {
    auto a = ours.find(tid);
    auto b = perf.find(tid);
    if (a == ours.end() || b == perf.end() || a->second.row != b->second.row || a->second.maps != b->second.maps) {
      out += fmt::format("tid {}:\n  ours: {}\n", tid, a == ours.end() ? "(missing)" : a->second.row);
      if (a != ours.end()) {
        for (const auto& l : a->second.maps) out += "    " + l + "\n";
      }
      out += fmt::format("  perf: {}\n", b == perf.end() ? "(missing)" : b->second.row);
      if (b != perf.end()) {
        for (const auto& l : b->second.maps) out += "    " + l + "\n";
      }
    }
  }
  return out;
}

// perf registers the idle task before reading a file.
void register_idle(Machine& m) {
  CommEvent idle;
  idle.pid = idle.tid = 0;
  idle.comm = "swapper";
  m.on_comm(idle, 0);
}

TEST(MachineVsPerf, ThreadsCommsAndEveryMapMatchPerfReportMmaps) {
  if (!test::have_program("perf")) GTEST_SKIP() << "perf not installed";
  Trace t;
  t.kernel_mmap(0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text");
  // A synthesized process tree, as perf record -a writes it.
  t.comm(1, 1, "init");
  t.mmap2(1, 1, 0x400000, 0x10000, 0, "/sbin/init", 11);
  t.fork(50, 50, 1, 1, kMiscForkExec);
  t.comm(50, 50, "bash");
  t.mmap2(50, 50, 0x560000000000, 0x20000, 0x4000, "/usr/bin/bash", 12);
  t.mmap2(50, 50, 0x7f0000000000, 0x150000, 0x26000, "/usr/lib/libc.so.6", 13);
  t.mmap2(50, 50, 0x7f0000200000, 0x2000, 0, "[vdso]", 0);
  // Overlaps: a map in the middle of libc, one over the head of bash, one over the tail of libc.
  t.mmap2(50, 50, 0x7f0000010000, 0x3000, 0, "/usr/lib/mid.so", 14);
  t.mmap2(50, 50, 0x55ffffff0000, 0x12000, 0, "/usr/lib/head.so", 15);
  t.mmap2(50, 50, 0x7f0000140000, 0x20000, 0x1000, "/usr/lib/tail.so", 16);
  // Many small maps, then one big map over most of them.
  for (int i = 0; i < 8; ++i) {
    t.mmap2(50, 50, 0x7f1000000000 + i * 0x1000, 0x1000, i * 0x1000, "/usr/lib/piece.so", 17);
  }
  t.mmap2(50, 50, 0x7f1000000800, 0x6000, 0x100000, "/usr/lib/cover.so", 18);
  // A thread of bash shares its maps; what it maps is the process's.
  t.fork(50, 51, 50, 50);
  t.mmap2(50, 51, 0x7f2000000000, 0x1000, 0, "/usr/lib/plugin.so", 19);
  t.comm(50, 51, "bash-worker");
  // A child process copies the maps, then execs (perf 6.1 keeps the old maps under the new ones).
  t.fork(60, 60, 50, 50);
  t.mmap2(50, 50, 0x7f3000000000, 0x1000, 0, "/usr/lib/parent-only.so", 20);
  t.comm(60, 60, "make", true);
  t.mmap2(60, 60, 0x560000004000, 0x8000, 0x2000, "/usr/bin/make", 21);
  t.mmap(60, 60, 0x7f4000000000, 0x2000, 0x1000, "/usr/lib/v1-mapped.so");
  // A short task, exited, and its tid reused by a task of another parent.
  t.fork(70, 70, 60, 60);
  t.comm(70, 70, "cc1", true);
  t.exit(70, 70, 60, 60);
  t.fork(70, 70, 1, 1);
  // A thread met first in a record without COMM or FORK.
  t.mmap2(80, 81, 0x400000, 0x1000, 0, "/opt/unnamed", 22);
  t.sample(60, 60, 0x560000004100);
  TempDir dir;
  std::string path = t.write(dir);

  int status = 0;
  std::string out = test::run_command("perf report --mmaps -i " + test::shell_quote(path) + " 2>/dev/null", &status);
  ASSERT_EQ(status, 0) << out;
  auto perf = parse_perf_tasks(out);
  ASSERT_GE(perf.size(), 8u) << out;

  Machine::Options o;
  o.keep_exited = true;  // perf report keeps them
  o.keep_maps_on_exec = true;
  Machine m(o);
  register_idle(m);
  feed(path, m);
  EXPECT_EQ(diff_tasks(model_tasks(m, true), perf), "") << out;
}

TEST(MachineVsPerf, ThreadsOfARealRecordingMatchPerfReportTasks) {
  const std::string& why = test::e2e::perf_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  std::string path = dir.file("real.data");
  auto rec = test::e2e::run("perf record -q -e cpu-clock -o " + test::shell_quote(path) +
                            " -- sh -c 'for i in 1 2 3; do /bin/true; done; sleep 0.1'");
  ASSERT_EQ(rec.status, 0) << rec.err;
  int status = 0;
  std::string out = test::run_command("perf report --tasks -i " + test::shell_quote(path) + " 2>/dev/null", &status);
  ASSERT_EQ(status, 0) << out;
  auto perf = parse_perf_tasks(out);
  // swapper, sh, three true and sleep at least.
  ASSERT_GE(perf.size(), 6u) << out;

  Machine::Options o;
  o.keep_exited = true;
  Machine m(o);
  register_idle(m);
  auto reader = Reader::open(path);
  OrderedEvents oe(*reader, [&](const Record& r, uint64_t time) { m.process(*reader, r, time); });
  Record r;
  while (reader->next(r)) oe.push(r);
  oe.flush_all();
  EXPECT_EQ(diff_tasks(model_tasks(m, false), perf), "") << out;
  size_t trues = 0;
  for (const Thread* t : m.threads()) trues += t->comm() && *t->comm() == "true";
  EXPECT_EQ(trues, 3u);
}

}  // namespace
}  // namespace tperf::session

namespace tperf::session {
namespace {

// Frame-text caches key on AddressSpace::version(): it must differ between spaces, change with
// every change of the maps, and never come back (a freed space's memory reused by a new one).
TEST(AddressSpaceVersion, UniqueAndRenewedByEveryChange) {
  std::set<uint64_t> seen;
  auto fresh = [&](uint64_t v) { return seen.insert(v).second; };
  AddressSpace a, b;
  EXPECT_TRUE(fresh(a.version()));
  EXPECT_TRUE(fresh(b.version()));
  Map m;
  m.start = 0x1000;
  m.end = 0x2000;
  a.insert(m);
  EXPECT_TRUE(fresh(a.version()));
  uint64_t before = a.version();
  EXPECT_NE(a.find(0x1800), nullptr);  // lookups change nothing
  EXPECT_EQ(a.version(), before);
  a.clear();
  EXPECT_TRUE(fresh(a.version()));
  for (int i = 0; i < 3; ++i) {
    auto c = std::make_unique<AddressSpace>();
    EXPECT_TRUE(fresh(c->version()));
  }
}

}  // namespace
}  // namespace tperf::session
