// The records other than SAMPLE (MMAP, COMM, FORK, ...) as structs: decoded from a record body
// by the decode_* functions here, encoded by RecordBuilder (record_builder.h). Strings are copied
// out; every decoder is bounds-checked and throws FormatError.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfdata/abi.h"
#include "perfdata/attr.h"
#include "perfdata/sample.h"

namespace tperf::perfdata {

// The values of a sample_id trailer. Which are written depends on the attr's sample_type;
// `id` fills both the ID and the IDENTIFIER slots.
struct SampleId {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
};

// Bodies of the kernel records. pid/tid are signed: the kernel writes -1 for the host/kernel.
struct MmapEvent {
  uint16_t misc = kMiscUser;  // | kMiscMmapData for data maps
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  std::string filename;
};

struct Mmap2Event {
  uint16_t misc = kMiscUser;
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  uint64_t ino_generation = 0;
  // Non-empty (up to 20 bytes) selects the build-id form of the union and sets kMiscMmapBuildId;
  // kMiscMmapBuildId in misc with an empty build_id writes a zero-length build id.
  std::vector<uint8_t> build_id;
  uint32_t prot = 5;   // PROT_READ | PROT_EXEC
  uint32_t flags = 2;  // MAP_PRIVATE
  std::string filename;
};

struct CommEvent {
  int32_t pid = 0;
  int32_t tid = 0;
  std::string comm;
  bool exec = false;  // sets kMiscCommExec
  uint16_t misc = 0;
};

// FORK and EXIT share their layout.
struct TaskEvent {
  int32_t pid = 0;
  int32_t ppid = 0;
  int32_t tid = 0;
  int32_t ptid = 0;
  uint64_t time = 0;
  uint16_t misc = 0;  // kMiscForkExec marks perf-synthesized forks
};

struct ThrottleEvent {
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
};

struct ReadEvent {
  int32_t pid = 0;
  int32_t tid = 0;
  ReadData values;  // laid out per attr.read_format
};

struct AuxEvent {
  uint64_t aux_offset = 0;
  uint64_t aux_size = 0;
  uint64_t flags = 0;  // TRUNCATED 1, OVERWRITE 2, PARTIAL 4, COLLISION 8, PMU format 0xff00
};

struct SwitchCpuWideEvent {
  bool out = false;      // kMiscSwitchOut
  bool preempt = false;  // kMiscSwitchOutPreempt (meaningful with out)
  int32_t next_prev_pid = 0;
  int32_t next_prev_tid = 0;
};

struct NamespaceEntry {
  uint64_t dev = 0;
  uint64_t ino = 0;
};

struct NamespacesEvent {
  int32_t pid = 0;
  int32_t tid = 0;
  std::vector<NamespaceEntry> namespaces;  // index NET 0, UTS 1, IPC 2, PID 3, USER 4, MNT 5, CGROUP 6
};

struct KsymbolEvent {
  uint64_t addr = 0;
  uint32_t len = 0;
  uint16_t ksym_type = 1;  // 0 UNKNOWN, 1 BPF, 2 OOL
  uint16_t flags = 0;      // bit 0 UNREGISTER
  std::string name;
  uint16_t misc = kMiscKernel;
};

struct BpfEvent {
  uint16_t type = 1;  // 1 PROG_LOAD, 2 PROG_UNLOAD
  uint16_t flags = 0;
  uint32_t id = 0;
  std::array<uint8_t, 8> tag{};
  uint16_t misc = kMiscKernel;
};

struct CgroupEvent {
  uint64_t id = 0;
  std::string path;
};

struct TextPokeEvent {
  uint64_t addr = 0;
  std::vector<uint8_t> old_bytes;
  std::vector<uint8_t> new_bytes;
  uint16_t misc = kMiscKernel;
};

struct CallchainDeferredEvent {
  uint64_t cookie = 0;
  std::vector<uint64_t> ips;  // plain user addresses
  uint16_t misc = kMiscUser;
};

// Tool records.
struct IdIndexEntry {
  uint64_t id = 0;
  uint64_t idx = 0;  // position in the event's per-cpu/per-thread fd array (not an attr index)
  int64_t cpu = -1;
  int64_t tid = -1;
};

struct ThreadMapEntry {
  int64_t pid = 0;
  std::string comm;  // at most 15 characters are kept
};

struct TimeConv {
  uint64_t time_shift = 0;
  uint64_t time_mult = 0;
  uint64_t time_zero = 0;
  // The second half exists since perf 5.10; `extended` = false writes the old 32-byte record.
  bool extended = true;
  uint64_t time_cycles = 0;
  uint64_t time_mask = 0;
  bool cap_user_time_zero = false;
  bool cap_user_time_short = false;
};

// Event update sub-types (EVENT_UPDATE.type).
enum EventUpdateType : uint64_t {
  kEventUpdateUnit = 0,
  kEventUpdateScale = 1,
  kEventUpdateName = 2,
  kEventUpdateCpus = 3,
};

struct LostEvent {
  uint64_t id = 0;
  uint64_t lost = 0;
};

// Each decoder takes the record body (after the 8-byte header), the record's misc where it
// matters, its sample_id trailer size (so string fields stop before it), the byte order and the
// body's file offset for errors.
MmapEvent decode_mmap(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off);
Mmap2Event decode_mmap2(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off);
CommEvent decode_comm(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off);
TaskEvent decode_task(std::span<const uint8_t> body, uint16_t misc, bool swap, uint64_t off);  // FORK, EXIT
LostEvent decode_lost(std::span<const uint8_t> body, bool swap, uint64_t off);
// LOST_SAMPLES: the number of samples the kernel could not write (then the sample_id trailer).
uint64_t decode_lost_samples(std::span<const uint8_t> body, bool swap, uint64_t off);
ThrottleEvent decode_throttle(std::span<const uint8_t> body, bool swap, uint64_t off);
AuxEvent decode_aux(std::span<const uint8_t> body, bool swap, uint64_t off);
// SWITCH (14) has no body: next_prev_pid/tid stay 0.
SwitchCpuWideEvent decode_switch(std::span<const uint8_t> body, uint16_t misc, bool cpu_wide, bool swap,
                                 uint64_t off);
NamespacesEvent decode_namespaces(std::span<const uint8_t> body, bool swap, uint64_t off);
KsymbolEvent decode_ksymbol(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off);
BpfEvent decode_bpf_event(std::span<const uint8_t> body, uint16_t misc, bool swap, uint64_t off);
CgroupEvent decode_cgroup(std::span<const uint8_t> body, unsigned trailer, bool swap, uint64_t off);
TextPokeEvent decode_text_poke(std::span<const uint8_t> body, uint16_t misc, bool swap, uint64_t off);
CallchainDeferredEvent decode_callchain_deferred(std::span<const uint8_t> body, uint16_t misc, bool swap,
                                                 uint64_t off);
std::vector<IdIndexEntry> decode_id_index(std::span<const uint8_t> body, bool swap, uint64_t off);
std::vector<ThreadMapEntry> decode_thread_map(std::span<const uint8_t> body, bool swap, uint64_t off);
// CPU_MAP record body -> the cpus it lists.
std::vector<uint32_t> decode_cpu_map(std::span<const uint8_t> body, bool swap, uint64_t off);
TimeConv decode_time_conv(std::span<const uint8_t> body, bool swap, uint64_t off);

}  // namespace tperf::perfdata
