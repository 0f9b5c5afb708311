// `tperf header` against `perf report --header-only` (perf 6.1 is the oracle): the corpus files
// perf reads, fresh recordings, and files whose event attrs were rewritten to reach every
// field of perf's attr line. tperf's own section is checked against `perf report -D`'s counts.
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

// The corpus files perf 6.1 prints a header for: those it reads, and the COMPRESSED2 pipe files
// (it prints their header before it stumbles on the data).
std::vector<std::string> perf_prints_header_of() {
  std::vector<std::string> files = test::corpus_files_perf_reads();
  files.push_back("linux-perf-data/fibo.compressed2.pipe.data");
  files.push_back("linux-perf-data/sleep.compressed2.pipe.data");
  return files;
}

const char* const kPerfRefuses[] = {
    "linux-perf-data/sleep.data",
    "linux-perf-data/sleep.compressed.data",
    "linux-perf-data/sleep.compressed2.data",
};

const char* const kExtrasMarker = "# ======== tperf ========";

bool have_perf() {
  static const bool ok = test::have_program("perf");
  return ok;
}

std::string perf_header(const std::string& path, const std::string& extra = "") {
  return run_command("perf report --header-only " + extra + " -i " + shell_quote(path) + " 2>/dev/null");
}

std::string tperf(const std::string& args, int* status = nullptr) {
  return run_command(std::string(TPERF_BINARY) + " " + args + " 2>/dev/null", status);
}

// tperf's output up to its own section.
std::string perf_part(const std::string& out) {
  size_t at = out.find(kExtrasMarker);
  return at == std::string::npos ? out : out.substr(0, at);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Compares line by line so a failure names the first differing line.
void expect_same_lines(const std::string& perf, const std::string& ours, const std::string& what) {
  auto a = lines(perf), b = lines(ours);
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      ADD_FAILURE() << what << ": line " << i + 1 << " differs\n  perf : " << a[i] << "\n  tperf: " << b[i];
      return;
    }
  }
  EXPECT_EQ(a.size(), b.size()) << what << ": perf printed " << a.size() << " lines, tperf " << b.size();
}

void compare_with_perf(const std::string& path, const std::string& what) {
  for (const char* opt : {"", "-I"}) {
    std::string perf = perf_header(path, opt);
    ASSERT_NE(perf.find("# ========"), std::string::npos) << what << ": perf printed no header";
    int status = 0;
    std::string ours = tperf("header " + std::string(opt) + " " + shell_quote(path), &status);
    EXPECT_EQ(status, 0) << what;
    expect_same_lines(perf, perf_part(ours), what + " " + opt);
    EXPECT_NE(ours.find(kExtrasMarker), std::string::npos) << what;
  }
}

std::string corpus(const std::string& rel) { return test::corpus_dir() + "/" + rel; }

TEST(HeaderCommand, CorpusMatchesPerf) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  if (!fs::exists(test::corpus_dir())) GTEST_SKIP() << "corpus not found";
  for (const auto& rel : perf_prints_header_of()) compare_with_perf(corpus(rel), rel);
}

TEST(HeaderCommand, StdinAndFileOptionAndNoExtras) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  if (!fs::exists(test::corpus_dir())) GTEST_SKIP() << "corpus not found";
  for (const char* rel : {"quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8",
                          "quipper/testdata/perf.data.group_desc-4.14"}) {
    std::string path = corpus(rel);
    std::string perf = perf_header(path);
    expect_same_lines(perf, tperf("header --no-extras -i " + shell_quote(path)), std::string(rel) + " -i");
    expect_same_lines(perf, tperf("header --no-extras - < " + shell_quote(path)), std::string(rel) + " stdin");
  }
}

// Record counts in tperf's section equal perf's "Aggregated stats" of `perf report -D`.
TEST(HeaderCommand, RecordCountsMatchPerfDump) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  if (!fs::exists(test::corpus_dir())) GTEST_SKIP() << "corpus not found";
  for (const auto& rel : test::corpus_files_perf_reads()) {
    std::string path = corpus(rel);
    std::string dump = run_command("perf report -D -i " + shell_quote(path) + " 2>/dev/null");
    size_t at = dump.find("Aggregated stats:");
    ASSERT_NE(at, std::string::npos) << rel;
    std::map<std::string, uint64_t> perf_counts;
    for (const auto& line : lines(dump.substr(at))) {
      if (line.find(" stats:") != std::string::npos && line.rfind("Aggregated", 0) != 0) break;  // per-event part
      char name[64];
      unsigned long long n;
      if (std::sscanf(line.c_str(), " %63s events: %llu", name, &n) == 2) perf_counts[name] = n;
    }
    std::map<std::string, uint64_t> ours;
    std::string out = tperf("header " + shell_quote(path));
    std::string extras = out.substr(out.find(kExtrasMarker));
    for (const auto& line : lines(extras)) {
      char name[64];
      unsigned long long n;
      if (std::sscanf(line.c_str(), "#   %63s %llu", name, &n) == 2) ours[name == std::string("total") ? "TOTAL" : name] = n;
    }
    EXPECT_EQ(perf_counts, ours) << rel;
    EXPECT_NE(extras.find("# unknown record types : 0"), std::string::npos) << rel;
    EXPECT_NE(extras.find("# warnings             : 0"), std::string::npos) << rel;
  }
}

TEST(HeaderCommand, FilesPerfRefusesAndCorruptedFiles) {
  if (!fs::exists(test::corpus_dir())) GTEST_SKIP() << "corpus not found";
  for (const char* rel : kPerfRefuses) {
    int status = -1;
    std::string out = tperf("header " + shell_quote(corpus(rel)), &status);
    EXPECT_EQ(status, 0) << rel;
    EXPECT_NE(out.find("# missing features: "), std::string::npos) << rel;
    EXPECT_NE(out.find("# event : name = cycles:P"), std::string::npos) << rel;
    EXPECT_NE(out.find("# warnings             : 0"), std::string::npos) << rel;
  }
  int status = -1;
  std::string path = corpus("quipper/testdata/perf.data.piped.corrupted.zero_size_sample-3.2");
  std::string err = run_command(std::string(TPERF_BINARY) + " header " + shell_quote(path) + " 2>&1 >/dev/null", &status);
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("offset 0x"), std::string::npos) << err;
}

// A scratch directory removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tperf-header-test-XXXXXX";
    path = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    if (!path.empty()) fs::remove_all(path);
  }
};

TEST(HeaderCommand, FreshRecordingsMatchPerf) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  struct Variant {
    const char* name;
    const char* args;
    bool pipe;
  };
  const Variant variants[] = {
      {"plain", "-e cpu-clock", false},
      {"groups", "-g -e {cpu-clock,task-clock} -e mygrp{page-faults,cs} -e minor-faults", false},
      {"clock", "-k monotonic -e cpu-clock", false},
      {"compressed", "-z -e cpu-clock", false},
      {"pipe", "-e cpu-clock -e {task-clock,page-faults}", true},
      {"threads", "--threads -e cpu-clock", false},  // directory layout
      {"system", "-a --switch-events -e cpu-clock", false},
  };
  int recorded = 0;
  for (const auto& v : variants) {
    std::string file = dir.path + "/" + v.name + ".data";
    std::string cmd = std::string("perf record -q ") + v.args + " -o " + (v.pipe ? "-" : shell_quote(file)) +
                      " -- sleep 0.01" + (v.pipe ? " > " + shell_quote(file) : "") + " 2>/dev/null";
    int status = -1;
    run_command(cmd, &status);
    if (status != 0 || !fs::exists(file) || (fs::is_regular_file(file) && fs::file_size(file) == 0)) {
      continue;  // e.g. no permission
    }
    ++recorded;
    compare_with_perf(file, v.name);
  }
  if (recorded == 0) GTEST_SKIP() << "perf record does not work here";
}

// Loads BPF programs for the lifetime of the object (needs CAP_BPF or root): one without BTF,
// one with two sub-programs named by BTF, so perf records BPF_PROG_INFO and BPF_BTF entries.
class LoadedBpfPrograms {
 public:
  LoadedBpfPrograms() {
    const char strs[] = "\0int\0tperf_main\0tperf_sub";
    const uint32_t types[] = {1, 1u << 24, 4, 0x01000020, 0, 13u << 24, 1, 5, 12u << 24, 2, 16, 12u << 24, 2};
    std::vector<uint8_t> btf(sizeof(btf_header) + sizeof types + sizeof strs);
    btf_header h{};
    h.magic = BTF_MAGIC;
    h.version = 1;
    h.hdr_len = sizeof h;
    h.type_len = sizeof types;
    h.str_off = sizeof types;
    h.str_len = sizeof strs;
    std::memcpy(btf.data(), &h, sizeof h);
    std::memcpy(btf.data() + sizeof h, types, sizeof types);
    std::memcpy(btf.data() + sizeof h + sizeof types, strs, sizeof strs);
    bpf_attr a{};
    a.btf = reinterpret_cast<uintptr_t>(btf.data());
    a.btf_size = static_cast<uint32_t>(btf.size());
    int btf_fd = static_cast<int>(syscall(SYS_bpf, BPF_BTF_LOAD, &a, sizeof a));
    if (btf_fd < 0) return;
    fds_.push_back(btf_fd);

    const bpf_insn plain[] = {{BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0}, {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
    a = bpf_attr{};
    a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    a.insns = reinterpret_cast<uintptr_t>(plain);
    a.insn_cnt = 2;
    a.license = reinterpret_cast<uintptr_t>("GPL");
    std::strcpy(a.prog_name, "tperf_plain");
    int fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a));
    if (fd < 0) return;
    fds_.push_back(fd);

    const bpf_insn calls[] = {{BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 2},
                              {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},
                              {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
                              {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1},
                              {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
    const bpf_func_info funcs[] = {{0, 3}, {3, 4}};
    a = bpf_attr{};
    a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    a.insns = reinterpret_cast<uintptr_t>(calls);
    a.insn_cnt = 5;
    a.license = reinterpret_cast<uintptr_t>("GPL");
    std::strcpy(a.prog_name, "tperf_btf");
    a.prog_btf_fd = static_cast<uint32_t>(btf_fd);
    a.func_info = reinterpret_cast<uintptr_t>(funcs);
    a.func_info_cnt = 2;
    a.func_info_rec_size = sizeof(bpf_func_info);
    fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a));
    if (fd < 0) return;
    fds_.push_back(fd);
    ok_ = true;
  }
  ~LoadedBpfPrograms() {
    for (int fd : fds_) close(fd);
  }
  bool ok() const { return ok_; }

 private:
  std::vector<int> fds_;
  bool ok_ = false;
};

TEST(HeaderCommand, BpfProgramsMatchPerf) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  LoadedBpfPrograms progs;
  if (!progs.ok()) GTEST_SKIP() << "cannot load BPF programs here";
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::string file = dir.path + "/bpf.data";
  int status = -1;
  run_command("perf record -q -e cpu-clock -o " + shell_quote(file) + " -- sleep 0.01 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "perf record does not work here";
  std::string perf = perf_header(file);
  ASSERT_NE(perf.find("_tperf_plain addr 0x"), std::string::npos) << perf;
  ASSERT_NE(perf.find("\tsub_prog 1: bpf_prog_"), std::string::npos) << perf;
  ASSERT_NE(perf.find("_tperf_sub addr 0x"), std::string::npos) << perf;
  ASSERT_NE(perf.find("# btf info of id "), std::string::npos) << perf;
  compare_with_perf(file, "bpf");
}

// The attr line: rewrite fields of the first EVENT_DESC attr of a corpus file (128-byte attrs)
// and check tperf prints what perf prints, including perf's quirks (a bit field whose bits have
// no names repeats the previous value).
TEST(HeaderCommand, EventAttrLineMatchesPerf) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string base = corpus("quipper/testdata/perf.data.hybrid_topology");
  if (!fs::exists(base)) GTEST_SKIP() << "corpus not found";
  std::ifstream in(base, std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto rd64 = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, file.data() + off, 8);
    return v;
  };
  // Feature table at data.offset + data.size, one slot per set bit; EVENT_DESC is bit 12.
  uint64_t table = rd64(40) + rd64(48);
  uint64_t bits = rd64(72);
  ASSERT_TRUE(bits & (1u << 12));
  size_t slot = static_cast<size_t>(__builtin_popcountll(bits & ((1u << 12) - 1)));
  uint64_t desc = rd64(static_cast<size_t>(table + slot * 16));
  size_t attr_at = static_cast<size_t>(desc + 8);  // after nr and attr_size

  struct Field {
    size_t off, size;
    uint64_t value;
  };
  const uint64_t kBranchStack = 1u << 11;
  const std::vector<std::vector<Field>> cases = {
      {{24, 8, 1u << 17}},                                        // TRANSACTION has no name
      {{24, 8, (1u << 25) - 1}},                                  // every sample_type name
      {{24, 8, kBranchStack}, {72, 8, (1u << 19) - 1}},           // every branch_sample_type name
      {{24, 8, 0}, {72, 8, 1u << 30}},                            // no name, no BRANCH_STACK
      {{32, 8, 31}},                                              // every read_format name
      {{40, 8, (1ULL << 38) - 1}},                                // every flag perf 6.1 knows
      {{40, 8, 1ULL << 16}},                                      // precise_ip = 2
      {{0, 4, 0}, {16, 8, 0}, {8, 8, ~0ULL}},                     // type 0, no period, config
      {{48, 4, 7}, {52, 4, 3}, {56, 8, 0x123}, {64, 8, 0x456}},   // wakeup, bp_type, config1/2
      {{80, 8, 0xff0fff}, {88, 4, 8192}, {92, 4, 0xfffffffb}},    // regs_user, stack_user, clockid -5
      {{96, 8, 0x10}, {104, 4, 9}, {108, 2, 127}, {112, 4, 100}, {120, 8, 12345}},
      {{4, 4, 64}},                                               // size field other than the stride
  };
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<uint8_t> patched = file;
    for (const auto& f : cases[i]) std::memcpy(patched.data() + attr_at + f.off, &f.value, f.size);
    std::string path = dir.path + "/attr" + std::to_string(i) + ".data";
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(patched.data()),
                                                 static_cast<std::streamsize>(patched.size()));
    std::string perf = perf_header(path);
    ASSERT_NE(perf.find("# event : "), std::string::npos) << "case " << i;
    expect_same_lines(perf, tperf("header --no-extras " + shell_quote(path)), "attr case " + std::to_string(i));
  }
}

}  // namespace
}  // namespace tperf
