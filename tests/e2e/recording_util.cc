#include "e2e/recording_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace tperf::test::e2e {

namespace fs = std::filesystem;

namespace {

struct Scratch {
  std::string dir;
  Scratch() {
    char tmpl[] = "/tmp/tperf-e2e-rec-XXXXXX";
    const char* d = mkdtemp(tmpl);
    dir = d ? d : "";
  }
  ~Scratch() {
    if (!dir.empty()) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
};

bool parse_int(const std::string& s, int32_t* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  long x = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  *v = static_cast<int32_t>(x);
  return true;
}

bool parse_u64(const std::string& s, int base, uint64_t* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtoull(s.c_str(), &end, base);
  return *end == '\0';
}

// "pid/tid" as perf prints it.
bool parse_pid_tid(const std::string& s, int32_t* pid, int32_t* tid) {
  auto slash = s.find('/');
  if (slash == std::string::npos) return false;
  return parse_int(s.substr(0, slash), pid) && parse_int(s.substr(slash + 1), tid);
}

// "[001]"
bool parse_cpu(const std::string& s, int32_t* cpu) {
  if (s.size() < 3 || s.front() != '[' || s.back() != ']') return false;
  return parse_int(s.substr(1, s.size() - 2), cpu);
}

// "1234.000000567:"
bool parse_time_colon(const std::string& s, uint64_t* ns) {
  if (s.empty() || s.back() != ':') return false;
  return parse_seconds_ns(s.substr(0, s.size() - 1), ns);
}

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> t;
  std::istringstream in(line);
  std::string w;
  while (in >> w) t.push_back(w);
  return t;
}

std::string hex_list(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += fmt::format("{:x}", v[i]);
  }
  return s;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

const std::string& scratch_dir() {
  static Scratch scratch;
  return scratch.dir;
}

CommandResult run(const std::string& cmd) {
  static int counter = 0;
  CommandResult r;
  std::string err_path = fmt::format("{}/stderr.{}.{}", scratch_dir(), getpid(), counter++);
  r.out = run_command("( " + cmd + " ) 2>" + shell_quote(err_path), &r.status);
  r.err = read_file(err_path);
  std::error_code ec;
  fs::remove(err_path, ec);
  return r;
}

Recording record_with_perf(const std::string& cmd, const std::string& path) {
  Recording rec;
  rec.path = path;
  CommandResult r = run(cmd);
  if (r.status != 0 || !fs::exists(path)) {
    rec.error = fmt::format("`{}` failed (status {}): {}", cmd, r.status, r.err);
    for (const char* why :
         {"unknown tracepoint", "tracefs", "debugfs", "perf_event_paranoid", "No permission", "Permission denied"}) {
      rec.missing = rec.missing || r.err.find(why) != std::string::npos;
    }
  }
  return rec;
}

std::string artifacts_dir() {
  if (const char* keep = std::getenv("TPERF_E2E_KEEP"); keep != nullptr && *keep != '\0') return keep;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return (ec ? fs::current_path(ec) : exe.parent_path()).string() + "/e2e-artifacts";
}

std::string keep_artifacts(const std::vector<std::string>& files) {
  std::string name = "unknown-test";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    name = std::string(info->test_suite_name()) + "." + info->name();
  }
  std::replace(name.begin(), name.end(), '/', '_');
  const fs::path dir = fs::path(artifacts_dir()) / name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fmt::format("nothing kept: cannot create {}: {}", dir.string(), ec.message());
  size_t kept = 0;
  for (const auto& f : files) {
    if (f.empty() || !fs::exists(f, ec)) continue;
    const fs::path to = dir / fs::path(f).filename();
    fs::remove_all(to, ec);
    fs::copy(f, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    if (ec) return fmt::format("copying {} into {} failed: {}", f, dir.string(), ec.message());
    ++kept;
  }
  return fmt::format("{} file(s) kept in {}", kept, dir.string());
}

KeepOnFailure::~KeepOnFailure() {
  if (::testing::Test::HasFailure()) ADD_FAILURE() << "the failed test's files: " << keep_artifacts(files_);
}

ComparedOutputs compare_outputs(const std::string& perf_cmd, const std::string& tperf_cmd, const std::string& input) {
  static int n = 0;
  std::string base = fmt::format("{}/compare{}", scratch_dir(), n++);
  // perf 6.1 allocates the symbol of its "[...]" lines (the rest of a relative graph's hits)
  // with malloc and never sets its `inlined` flag: whatever the heap held there decides whether
  // " (inlined)" follows (seen on one machine, not on others, for the same file). tperf never
  // prints it; perf's copy of that undefined flag is left out before the comparison.
  run(fmt::format("{} 2>/dev/null | sed 's/\\[\\.\\.\\.\\] (inlined)/[...]/g' > {}.perf", perf_cmd, base));
  CommandResult t = run(fmt::format("{} > {}.tperf", tperf_cmd, base));
  ComparedOutputs c;
  c.tperf_status = t.status;
  c.tperf_err = t.err;
  c.diff = run(fmt::format("diff {0}.perf {0}.tperf | head -20", base)).out;
  c.perf_lines = static_cast<size_t>(std::stoul("0" + run(fmt::format("wc -l < {}.perf", base)).out));
  if (!c.diff.empty() || c.tperf_status != 0) {
    std::ofstream(base + ".commands") << "perf:  " << perf_cmd << "\ntperf: " << tperf_cmd << "\n";
    c.kept = keep_artifacts({input, base + ".perf", base + ".tperf", base + ".commands"});
    const std::string where = "(recording and both outputs: " + c.kept + ")\n";
    if (!c.diff.empty()) c.diff += where;
    if (c.tperf_status != 0) c.tperf_err += where;
  }
  return c;
}

void expect_same_outputs(const ComparedOutputs& c, const std::string& what, size_t min_lines) {
  EXPECT_EQ(c.diff, "") << what << " (diff perf tperf)";
  EXPECT_GE(c.perf_lines, min_lines) << what << ": perf printed too little";
  EXPECT_EQ(c.tperf_status, 0) << what << ": " << c.tperf_err;
}

std::map<std::string, uint64_t> nm_symbols(const std::string& binary) {
  std::map<std::string, uint64_t> out;
  CommandResult r = run("nm --defined-only " + shell_quote(binary));
  std::istringstream in(r.out);
  std::string addr, type, name;
  while (in >> addr >> type >> name) out[name] = std::stoull(addr, nullptr, 16);
  return out;
}

const std::string& perf_unavailable_reason() {
  static const std::string reason = [] {
    if (scratch_dir().empty()) return std::string("cannot create a scratch directory in /tmp");
    if (!have_program("perf")) return std::string("perf is not installed");
    std::string probe = scratch_dir() + "/probe.data";
    CommandResult r = run("perf record -q -e cpu-clock -o " + shell_quote(probe) + " true");
    if (r.status != 0 || !fs::exists(probe)) {
      return "perf record -e cpu-clock does not work here (perf_event_open not permitted?): " + r.err;
    }
    return std::string();
  }();
  return reason;
}

std::string ensure_tracefs() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (fs::is_directory(std::string(dir) + "/events")) return "";
  }
  CommandResult r = run("mount -t tracefs nodev /sys/kernel/tracing");
  if (fs::is_directory("/sys/kernel/tracing/events")) return "";
  return "tracefs is not mounted and `mount -t tracefs nodev /sys/kernel/tracing` failed: " + r.err;
}

std::string workload(const std::string& name, std::string* error) {
  static std::map<std::string, std::pair<std::string, std::string>> built;  // name -> (path, error)
  auto it = built.find(name);
  if (it == built.end()) {
    std::string src = std::string(TPERF_SOURCE_DIR) + "/tests/e2e/workloads/" + name + ".c";
    std::string bin = scratch_dir() + "/" + name;
    std::string err;
    if (!have_program("gcc")) {
      err = "gcc is not installed";
    } else {
      CommandResult r =
          run("gcc -O1 -g -fno-omit-frame-pointer -pthread -o " + shell_quote(bin) + " " + shell_quote(src));
      if (r.status != 0) err = "compiling " + src + " failed: " + r.err;
    }
    it = built.emplace(name, std::make_pair(err.empty() ? bin : std::string(), err)).first;
  }
  if (error) *error = it->second.second;
  return it->second.first;
}

const Recording& workload_recording(const std::string& name, const std::string& workload_name,
                                    const std::string& perf_options) {
  static std::map<std::string, Recording> made;
  if (auto it = made.find(name); it != made.end()) return it->second;
  std::string error;
  const std::string bin = workload(workload_name, &error);
  Recording r;
  if (bin.empty()) {
    r.error = error;
  } else {
    const std::string path = scratch_dir() + "/" + name + ".data";
    r = record_with_perf(
        fmt::format("timeout 60 perf record -q {} -o {} -- {} 0.3", perf_options, shell_quote(path), shell_quote(bin)), path);
  }
  return made.emplace(name, r).first->second;
}

bool parse_seconds_ns(const std::string& text, uint64_t* ns) {
  auto dot = text.find('.');
  if (dot == std::string::npos || text.size() - dot - 1 != 9) return false;
  uint64_t secs, frac;
  if (!parse_u64(text.substr(0, dot), 10, &secs) || !parse_u64(text.substr(dot + 1), 10, &frac)) return false;
  *ns = secs * 1000000000ULL + frac;
  return true;
}

bool parse_script_sample(const std::string& line, bool with_cpu, bool with_addr, ScriptSample* out) {
  auto t = tokens(line);
  size_t want = 5 + (with_cpu ? 1 : 0) + (with_addr ? 1 : 0);
  if (t.size() != want) return false;
  size_t i = 0;
  ScriptSample s;
  if (!parse_pid_tid(t[i++], &s.pid, &s.tid)) return false;
  if (with_cpu && !parse_cpu(t[i++], &s.cpu)) return false;
  if (!parse_time_colon(t[i++], &s.time)) return false;
  if (!parse_u64(t[i++], 10, &s.period)) return false;
  const std::string& ev = t[i++];
  if (ev.size() < 2 || ev.back() != ':') return false;
  s.event = ev.substr(0, ev.size() - 1);
  if (with_addr && !parse_u64(t[i++], 16, &s.addr)) return false;
  if (!parse_u64(t[i++], 16, &s.ip)) return false;
  *out = s;
  return true;
}

bool parse_script_switch(const std::string& line, ScriptSwitch* out) {
  static const std::regex re(
      R"(^\s*(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+(\d+\.\d{9}):\s+)"
      R"(PERF_RECORD_SWITCH_CPU_WIDE (IN|OUT)\s*(preempt)?\s+(next|prev) pid/tid:\s*(-?\d+)/(-?\d+)\s*$)");
  if (line.find("PERF_RECORD_SWITCH_CPU_WIDE") == std::string::npos) return false;
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  ScriptSwitch s;
  parse_int(m[1], &s.pid);
  parse_int(m[2], &s.tid);
  parse_int(m[3], &s.cpu);
  if (!parse_seconds_ns(m[4], &s.time)) return false;
  s.out = m[5] == "OUT";
  s.preempt = m[6].matched;
  parse_int(m[8], &s.next_prev_pid);
  parse_int(m[9], &s.next_prev_tid);
  *out = s;
  return true;
}

bool parse_script_uregs(const std::string& line, ScriptRegs* out) {
  auto t = tokens(line);
  if (t.size() < 4) return false;
  ScriptRegs s;
  if (!parse_pid_tid(t[0], &s.pid, &s.tid) || !parse_time_colon(t[1], &s.time) || !parse_u64(t[2], 16, &s.ip)) {
    return false;
  }
  if (!starts_with(t[3], "ABI:") || !parse_u64(t[3].substr(4), 10, &s.abi)) return false;
  for (size_t i = 4; i < t.size(); ++i) {
    auto colon = t[i].find(":0x");
    uint64_t v;
    if (colon == std::string::npos || !parse_u64(t[i].substr(colon + 3), 16, &v)) return false;
    s.values.push_back(v);
  }
  *out = s;
  return true;
}

bool parse_script_sched_switch(const std::string& line, ScriptSchedSwitch* out) {
  static const std::regex re(R"(^\s*(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+(\d+\.\d{9}):\s+)"
                             R"(prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=\S* ==> )"
                             R"(next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)\s*$)");
  if (line.find("prev_comm=") == std::string::npos) return false;
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  ScriptSchedSwitch s;
  parse_int(m[1], &s.pid);
  parse_int(m[2], &s.tid);
  parse_int(m[3], &s.cpu);
  if (!parse_seconds_ns(m[4], &s.time)) return false;
  s.prev_comm = m[5];
  parse_int(m[6], &s.prev_pid);
  parse_int(m[7], &s.prev_prio);
  s.next_comm = m[8];
  parse_int(m[9], &s.next_pid);
  parse_int(m[10], &s.next_prio);
  *out = s;
  return true;
}

PerfDump parse_report_dump(const std::string& text) {
  static const std::regex record_re(R"(^0x([0-9a-f]+)@(.*) \[0x([0-9a-f]+)\]: event: (\d+)$)");
  static const std::regex sample_re(
      R"(^(?:(\d+) )?(\d+) 0x([0-9a-f]+) \[0x([0-9a-f]+)\]: PERF_RECORD_SAMPLE\(IP, 0x([0-9a-f]+)\): )"
      R"((-?\d+)/(-?\d+): 0x([0-9a-f]+) period: (\d+) addr: (?:0x)?([0-9a-f]+)$)");
  static const std::regex chain_re(R"(^\.\.\. (?:FP )?chain: nr:(\d+)$)");
  static const std::regex chain_entry_re(R"(^\.\.\.\.\.\s+\d+: ([0-9a-f]+)$)");
  static const std::regex regs_re(R"(^\.\.\. user regs: mask 0x([0-9a-f]+) ABI (\S+)$)");
  static const std::regex reg_re(R"(^\.\.\.\. \S+\s+0x([0-9a-f]+)$)");
  static const std::regex ustack_re(R"(^\.\.\. ustack: size (\d+), offset 0x([0-9a-f]+)$)");
  static const std::regex data_src_re(R"(^ \. data_src: 0x([0-9a-f]+)$)");

  PerfDump d;
  DumpSample* cur = nullptr;
  bool in_user_regs = false;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("]: event: ") != std::string::npos && std::regex_match(line, m, record_re)) {
      DumpRecord r;
      parse_u64(m[1], 16, &r.offset);
      r.file = m[2];
      uint64_t v;
      parse_u64(m[3], 16, &v);
      r.size = static_cast<uint32_t>(v);
      parse_u64(m[4], 10, &v);
      r.type = static_cast<uint32_t>(v);
      d.records.push_back(r);
      cur = nullptr;
      continue;
    }
    if (line.find("PERF_RECORD_SAMPLE(") != std::string::npos && std::regex_match(line, m, sample_re)) {
      DumpSample s;
      if (m[1].matched) parse_int(m[1], &s.cpu);
      parse_u64(m[2], 10, &s.time);
      parse_u64(m[3], 16, &s.offset);
      uint64_t v;
      parse_u64(m[4], 16, &v);
      s.size = static_cast<uint32_t>(v);
      parse_u64(m[5], 16, &v);
      s.misc = static_cast<uint32_t>(v);
      parse_int(m[6], &s.pid);
      parse_int(m[7], &s.tid);
      parse_u64(m[8], 16, &s.ip);
      parse_u64(m[9], 10, &s.period);
      parse_u64(m[10], 16, &s.addr);
      d.samples.push_back(s);
      cur = &d.samples.back();
      in_user_regs = false;
      continue;
    }
    if (!cur) continue;
    if (starts_with(line, ".....") && std::regex_match(line, m, chain_entry_re)) {
      uint64_t v;
      parse_u64(m[1], 16, &v);
      cur->chain.push_back(v);
    } else if (starts_with(line, "....") && !starts_with(line, ".....") && std::regex_match(line, m, reg_re)) {
      uint64_t v;
      parse_u64(m[1], 16, &v);
      if (in_user_regs) cur->regs.push_back(v);
    } else if (std::regex_match(line, m, chain_re)) {
      cur->has_chain = true;
      in_user_regs = false;
    } else if (std::regex_match(line, m, regs_re)) {
      cur->has_regs = true;
      parse_u64(m[1], 16, &cur->regs_mask);
      cur->regs_abi = m[2];
      in_user_regs = true;
    } else if (std::regex_match(line, m, ustack_re)) {
      cur->has_ustack = true;
      parse_u64(m[1], 10, &cur->ustack_size);
      parse_u64(m[2], 16, &cur->ustack_offset);
      in_user_regs = false;
    } else if (std::regex_match(line, m, data_src_re)) {
      cur->has_data_src = true;
      parse_u64(m[1], 16, &cur->data_src);
    } else if (starts_with(line, "...") || starts_with(line, " .")) {
      // Other per-sample lines (intr regs, weight, thread, dso...): nothing we compare.
      if (starts_with(line, "... ")) in_user_regs = false;
    } else {
      cur = nullptr;
    }
  }
  return d;
}

std::string dump_sample_key(const DumpSample& s, bool with_offset) {
  std::string k = fmt::format("cpu={} time={} ", s.cpu, s.time);
  if (with_offset) k += fmt::format("at={:#x} ", s.offset);
  k += fmt::format("size={:#x} misc={:#x} {}/{} ip={:#x} period={} addr={:#x}", s.size, s.misc, s.pid, s.tid, s.ip,
                   s.period, s.addr);
  if (s.has_chain) k += " chain=[" + hex_list(s.chain) + "]";
  if (s.has_regs) k += fmt::format(" uregs={}/{:#x}/[{}]", s.regs_abi, s.regs_mask, hex_list(s.regs));
  if (s.has_ustack) k += fmt::format(" ustack={}@{:#x}", s.ustack_size, s.ustack_offset);
  if (s.has_data_src) k += fmt::format(" data_src={:#x}", s.data_src);
  return k;
}

std::string multiset_diff(std::vector<std::string> ours, std::vector<std::string> perf, size_t show) {
  std::sort(ours.begin(), ours.end());
  std::sort(perf.begin(), perf.end());
  if (ours == perf) return "";
  std::vector<std::string> only_ours, only_perf;
  std::set_difference(ours.begin(), ours.end(), perf.begin(), perf.end(), std::back_inserter(only_ours));
  std::set_difference(perf.begin(), perf.end(), ours.begin(), ours.end(), std::back_inserter(only_perf));
  std::string msg = fmt::format("tperf has {} entries, perf {}; {} only in tperf, {} only in perf\n", ours.size(),
                                perf.size(), only_ours.size(), only_perf.size());
  for (size_t i = 0; i < only_ours.size() && i < show; ++i) msg += "  tperf only: " + only_ours[i] + "\n";
  for (size_t i = 0; i < only_perf.size() && i < show; ++i) msg += "  perf only:  " + only_perf[i] + "\n";
  return msg;
}

}  // namespace tperf::test::e2e
