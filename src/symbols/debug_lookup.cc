#include "symbols/debug_lookup.h"

#include <unistd.h>

#include <sys/stat.h>

#include <cstdlib>

#include <fmt/format.h>

#include "symbols/elf_file.h"

namespace tperf::symbols {

namespace {

bool is_regular_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string join_symfs(const std::string& symfs, std::string_view path) {
  if (symfs.empty()) return std::string(path);
  std::string out = symfs;
  if (!out.empty() && out.back() == '/' && !path.empty() && path.front() == '/') out.pop_back();
  out += path;
  return out;
}

std::string mount_namespace_root(int32_t pid) {
  if (pid <= 0) return "";
  auto link = [](const std::string& path) {
    char buf[128];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  const std::string theirs = link(fmt::format("/proc/{}/ns/mnt", pid));
  const std::string ours = link("/proc/self/ns/mnt");
  if (theirs.empty() || ours.empty() || theirs == ours) return "";
  return fmt::format("/proc/{}/root", pid);
}

std::string buildid_cache_dir(const DebugLookupOptions& options) {
  if (!options.buildid_dir.empty()) return options.buildid_dir;
  const char* home = std::getenv("HOME");
  return fmt::format("{}/.debug", home && *home ? home : "");
}

std::vector<SymbolFileCandidate> symbol_file_candidates(std::string_view dso_name, const util::BuildId& build_id,
                                                        bool is_vdso, const DebugLookupOptions& options) {
  std::vector<SymbolFileCandidate> out;
  auto add = [&](std::string path, const char* kind) {
    if (!is_regular_file(path)) return;
    for (const auto& c : out) {
      if (c.path == path) return;
    }
    out.push_back({std::move(path), kind});
  };
  const std::string file = join_symfs(options.symfs, dso_name);
  const bool real_path = !dso_name.empty() && dso_name.front() == '/';

  // .gnu_debuglink, where perf looks for it: as named (relative to the working directory), next
  // to the file, in .debug/ next to it, and under /usr/lib/debug.
  if (real_path && is_regular_file(file)) {
    if (auto elf = ElfFile::open(file)) {
      if (auto link = elf->debuglink()) {
        std::string dir = file.substr(0, file.rfind('/'));
        for (std::string path : {link->name, fmt::format("{}/{}", dir, link->name),
                                 fmt::format("{}/.debug/{}", dir, link->name),
                                 fmt::format("/usr/lib/debug{}/{}", dir, link->name)}) {
          size_t before = out.size();
          add(std::move(path), "debuglink");
          if (out.size() > before) {
            out.back().debuglink = true;
            out.back().crc = link->crc;
          }
        }
      }
    }
  }
  if (!build_id.empty()) {
    std::string hex = build_id.hex();
    std::string link = fmt::format("{}/.build-id/{}/{}", buildid_cache_dir(options), hex.substr(0, 2), hex.substr(2));
    // Old caches hold the file at the link itself; newer ones a directory with elf/debug/vdso.
    add(link, "build-id cache");
    add(link + (is_vdso ? "/vdso" : "/elf"), "build-id cache");
    add(link + "/debug", "build-id cache (debug)");
  }
  if (real_path) {
    add(join_symfs(options.symfs, fmt::format("/usr/lib/debug{}.debug", dso_name)), "/usr/lib/debug");
    add(join_symfs(options.symfs, fmt::format("/usr/lib/debug{}", dso_name)), "/usr/lib/debug");
  }
  if (!build_id.empty()) {
    std::string hex = build_id.hex();
    add(join_symfs(options.symfs, fmt::format("/usr/lib/debug/.build-id/{}/{}.debug", hex.substr(0, 2), hex.substr(2))),
        "/usr/lib/debug/.build-id");
  }
  if (real_path) add(file, "the file");
  return out;
}

}  // namespace tperf::symbols
