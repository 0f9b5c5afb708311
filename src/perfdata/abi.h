// Constants of the perf_event kernel ABI and of the perf.data container.
// Values restated from the UAPI and perf's file format; see shared/reference/perf-abi.md.
#pragma once

#include <cstdint>

namespace tperf::perfdata {

// "PERFILE2" read as a little-endian u64.
inline constexpr uint64_t kMagic = 0x32454C4946524550ULL;
inline constexpr uint64_t kMagicSwapped = 0x50455246494C4532ULL;
inline constexpr uint64_t kFileHeaderSize = 104;
inline constexpr uint64_t kPipeHeaderSize = 16;

// Record types written by the kernel.
enum RecordType : uint32_t {
  kRecordMmap = 1,
  kRecordLost = 2,
  kRecordComm = 3,
  kRecordExit = 4,
  kRecordThrottle = 5,
  kRecordUnthrottle = 6,
  kRecordFork = 7,
  kRecordRead = 8,
  kRecordSample = 9,
  kRecordMmap2 = 10,
  kRecordAux = 11,
  kRecordItraceStart = 12,
  kRecordLostSamples = 13,
  kRecordSwitch = 14,
  kRecordSwitchCpuWide = 15,
  kRecordNamespaces = 16,
  kRecordKsymbol = 17,
  kRecordBpfEvent = 18,
  kRecordCgroup = 19,
  kRecordTextPoke = 20,
  kRecordAuxOutputHwId = 21,
  kRecordCallchainDeferred = 22,
  kRecordKernelMax = 23,

  // Records synthesized by the perf tool (never carry a sample_id trailer).
  kRecordHeaderAttr = 64,
  kRecordHeaderEventType = 65,
  kRecordHeaderTracingData = 66,
  kRecordHeaderBuildId = 67,
  kRecordFinishedRound = 68,
  kRecordIdIndex = 69,
  kRecordAuxtraceInfo = 70,
  kRecordAuxtrace = 71,
  kRecordAuxtraceError = 72,
  kRecordThreadMap = 73,
  kRecordCpuMap = 74,
  kRecordStatConfig = 75,
  kRecordStat = 76,
  kRecordStatRound = 77,
  kRecordEventUpdate = 78,
  kRecordTimeConv = 79,
  kRecordHeaderFeature = 80,
  kRecordCompressed = 81,
  kRecordFinishedInit = 82,
  kRecordCompressed2 = 83,
  kRecordBpfMetadata = 84,
  kRecordSchedstatCpu = 85,
  kRecordSchedstatDomain = 86,
  kRecordToolMax = 87,

  // Android simpleperf's own records (recognized and skipped).
  kRecordSimpleperfFirst = 32768,
  kRecordSimpleperfKernelSymbol = 32769,
  kRecordSimpleperfDso = 32770,
  kRecordSimpleperfSymbol = 32771,
  kRecordSimpleperfSplit = 32772,
  kRecordSimpleperfSplitEnd = 32773,
  kRecordSimpleperfEventId = 32774,
  kRecordSimpleperfCallchain = 32775,
  kRecordSimpleperfUnwindingResult = 32776,
  kRecordSimpleperfTracingData = 32777,
  kRecordSimpleperfDebug = 32778,
  kRecordSimpleperfLast = kRecordSimpleperfDebug,
};

// perf_event_header.misc
inline constexpr uint16_t kMiscCpumodeMask = 7;
inline constexpr uint16_t kMiscCpumodeUnknown = 0;
inline constexpr uint16_t kMiscKernel = 1;
inline constexpr uint16_t kMiscUser = 2;
inline constexpr uint16_t kMiscHypervisor = 3;
inline constexpr uint16_t kMiscGuestKernel = 4;
inline constexpr uint16_t kMiscGuestUser = 5;
inline constexpr uint16_t kMiscProcMapParseTimeout = 1 << 12;
inline constexpr uint16_t kMiscMmapData = 1 << 13;
inline constexpr uint16_t kMiscCommExec = 1 << 13;
inline constexpr uint16_t kMiscForkExec = 1 << 13;
inline constexpr uint16_t kMiscSwitchOut = 1 << 13;
inline constexpr uint16_t kMiscExactIp = 1 << 14;
inline constexpr uint16_t kMiscSwitchOutPreempt = 1 << 14;
inline constexpr uint16_t kMiscMmapBuildId = 1 << 14;
inline constexpr uint16_t kMiscBuildIdSize = 1 << 15;
inline constexpr uint16_t kMiscLostSamplesBpf = 1 << 15;

// perf_event_attr.type
enum AttrType : uint32_t {
  kTypeHardware = 0,
  kTypeSoftware = 1,
  kTypeTracepoint = 2,
  kTypeHwCache = 3,
  kTypeRaw = 4,
  kTypeBreakpoint = 5,
};

enum SoftwareConfig : uint64_t {
  kSwCpuClock = 0,
  kSwTaskClock = 1,
  kSwPageFaults = 2,
  kSwContextSwitches = 3,
  kSwCpuMigrations = 4,
  kSwPageFaultsMin = 5,
  kSwPageFaultsMaj = 6,
  kSwAlignmentFaults = 7,
  kSwEmulationFaults = 8,
  kSwDummy = 9,
  kSwBpfOutput = 10,
  kSwCgroupSwitches = 11,
};

// perf_event_attr.sample_type bits
enum SampleType : uint64_t {
  kSampleIp = 1ULL << 0,
  kSampleTid = 1ULL << 1,
  kSampleTime = 1ULL << 2,
  kSampleAddr = 1ULL << 3,
  kSampleRead = 1ULL << 4,
  kSampleCallchain = 1ULL << 5,
  kSampleId = 1ULL << 6,
  kSampleCpu = 1ULL << 7,
  kSamplePeriod = 1ULL << 8,
  kSampleStreamId = 1ULL << 9,
  kSampleRaw = 1ULL << 10,
  kSampleBranchStack = 1ULL << 11,
  kSampleRegsUser = 1ULL << 12,
  kSampleStackUser = 1ULL << 13,
  kSampleWeight = 1ULL << 14,
  kSampleDataSrc = 1ULL << 15,
  kSampleIdentifier = 1ULL << 16,
  kSampleTransaction = 1ULL << 17,
  kSampleRegsIntr = 1ULL << 18,
  kSamplePhysAddr = 1ULL << 19,
  kSampleAux = 1ULL << 20,
  kSampleCgroup = 1ULL << 21,
  kSampleDataPageSize = 1ULL << 22,
  kSampleCodePageSize = 1ULL << 23,
  kSampleWeightStruct = 1ULL << 24,
};

// perf_event_attr.read_format bits
enum ReadFormat : uint64_t {
  kReadTotalTimeEnabled = 1 << 0,
  kReadTotalTimeRunning = 1 << 1,
  kReadId = 1 << 2,
  kReadGroup = 1 << 3,
  kReadLost = 1 << 4,
};

// Bit positions in the perf_event_attr flags word (offset 40).
enum AttrFlagBit : unsigned {
  kFlagDisabled = 0,
  kFlagInherit = 1,
  kFlagPinned = 2,
  kFlagExclusive = 3,
  kFlagExcludeUser = 4,
  kFlagExcludeKernel = 5,
  kFlagExcludeHv = 6,
  kFlagExcludeIdle = 7,
  kFlagMmap = 8,
  kFlagComm = 9,
  kFlagFreq = 10,
  kFlagInheritStat = 11,
  kFlagEnableOnExec = 12,
  kFlagTask = 13,
  kFlagWatermark = 14,
  kFlagPreciseIp0 = 15,  // two bits: 15..16
  kFlagMmapData = 17,
  kFlagSampleIdAll = 18,
  kFlagExcludeHost = 19,
  kFlagExcludeGuest = 20,
  kFlagExcludeCallchainKernel = 21,
  kFlagExcludeCallchainUser = 22,
  kFlagMmap2 = 23,
  kFlagCommExec = 24,
  kFlagUseClockid = 25,
  kFlagContextSwitch = 26,
  kFlagWriteBackward = 27,
  kFlagNamespaces = 28,
  kFlagKsymbol = 29,
  kFlagBpfEvent = 30,
  kFlagAuxOutput = 31,
  kFlagCgroup = 32,
  kFlagTextPoke = 33,
  kFlagBuildId = 34,
  kFlagInheritThread = 35,
  kFlagRemoveOnExec = 36,
  kFlagSigtrap = 37,
  kFlagDeferCallchain = 38,
  kFlagDeferOutput = 39,
};

// perf_event_attr.branch_sample_type bits that change the sample layout.
inline constexpr uint64_t kBranchHwIndex = 1ULL << 17;
inline constexpr uint64_t kBranchCounters = 1ULL << 19;

// Sizes of perf_event_attr across versions (PERF_ATTR_SIZE_VERn).
inline constexpr uint32_t kAttrSizeVer0 = 64;
inline constexpr uint32_t kAttrSizeVer1 = 72;
inline constexpr uint32_t kAttrSizeVer2 = 80;
inline constexpr uint32_t kAttrSizeVer3 = 96;
inline constexpr uint32_t kAttrSizeVer4 = 104;
inline constexpr uint32_t kAttrSizeVer5 = 112;
inline constexpr uint32_t kAttrSizeVer6 = 120;
inline constexpr uint32_t kAttrSizeVer7 = 128;
inline constexpr uint32_t kAttrSizeVer8 = 136;
inline constexpr uint32_t kAttrSizeVer9 = 144;
// The largest attr tperf understands field by field; larger ones keep their tail unread.
inline constexpr uint32_t kAttrSizeMax = kAttrSizeVer9;

// Callchain context markers.
inline constexpr uint64_t kContextHv = static_cast<uint64_t>(-32);
inline constexpr uint64_t kContextKernel = static_cast<uint64_t>(-128);
inline constexpr uint64_t kContextUser = static_cast<uint64_t>(-512);
inline constexpr uint64_t kContextUserDeferred = static_cast<uint64_t>(-640);
inline constexpr uint64_t kContextGuest = static_cast<uint64_t>(-2048);
inline constexpr uint64_t kContextGuestKernel = static_cast<uint64_t>(-2176);
inline constexpr uint64_t kContextGuestUser = static_cast<uint64_t>(-2560);
inline constexpr uint64_t kContextMax = static_cast<uint64_t>(-4095);

// Feature bits of the file header (HEADER_*).
enum Feature : unsigned {
  kFeatReserved = 0,
  kFeatTracingData = 1,
  kFeatBuildId = 2,
  kFeatHostname = 3,
  kFeatOsrelease = 4,
  kFeatVersion = 5,
  kFeatArch = 6,
  kFeatNrcpus = 7,
  kFeatCpudesc = 8,
  kFeatCpuid = 9,
  kFeatTotalMem = 10,
  kFeatCmdline = 11,
  kFeatEventDesc = 12,
  kFeatCpuTopology = 13,
  kFeatNumaTopology = 14,
  kFeatBranchStack = 15,
  kFeatPmuMappings = 16,
  kFeatGroupDesc = 17,
  kFeatAuxtrace = 18,
  kFeatStat = 19,
  kFeatCache = 20,
  kFeatSampleTime = 21,
  kFeatMemTopology = 22,
  kFeatClockid = 23,
  kFeatDirFormat = 24,
  kFeatBpfProgInfo = 25,
  kFeatBpfBtf = 26,
  kFeatCompressed = 27,
  kFeatCpuPmuCaps = 28,
  kFeatClockData = 29,
  kFeatHybridTopology = 30,
  kFeatPmuCaps = 31,
  kFeatCpuDomainInfo = 32,
  kFeatEMachine = 33,
  kFeatClnSize = 34,
  // perf 6.1's HEADER_LAST_FEATURE: files tperf writes end their pipe feature list here.
  kFeatLastPerf61 = 32,
  kFeatSimpleperfFile = 128,
  kFeatSimpleperfMetaInfo = 129,
  kFeatSimpleperfDebugUnwind = 130,
  kFeatSimpleperfDebugUnwindFile = 131,
  kFeatSimpleperfFile2 = 132,
  kFeatBits = 256,
};

// PERF_RECORD_MISC / bit limits
inline constexpr unsigned kMaxRecordSize = 65535;

}  // namespace tperf::perfdata
