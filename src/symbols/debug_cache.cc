#include "symbols/debug_cache.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "util/build_id.h"

namespace tperf::symbols {

namespace {

// An ELF file opened for reading: mapped privately, so that libelf may inflate sections in memory.
class ElfIn {
 public:
  explicit ElfIn(const std::string& path) {
    elf_version(EV_CURRENT);
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ >= 0) elf_ = elf_begin(fd_, ELF_C_READ_MMAP_PRIVATE, nullptr);
  }
  ~ElfIn() {
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) ::close(fd_);
  }
  ElfIn(const ElfIn&) = delete;
  ElfIn& operator=(const ElfIn&) = delete;
  Elf* get() const { return elf_ && elf_kind(elf_) == ELF_K_ELF ? elf_ : nullptr; }

 private:
  int fd_ = -1;
  Elf* elf_ = nullptr;
};

std::string build_id_hex(Elf* elf) {
  const void* bits = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
  if (n <= 1 || !bits) return "";
  return util::BuildId::from_bytes({static_cast<const uint8_t*>(bits), static_cast<size_t>(n)}).hex();
}

// What a section of the original is in its copy: name, type and size once inflated.
struct SectionShape {
  std::string name;
  uint32_t type = 0;
  uint64_t size = 0;
  bool operator==(const SectionShape&) const = default;
};

// A file's sections, read from their headers once.
struct Sections {
  std::vector<SectionShape> shapes;
  bool compressed = false;  // a SHF_COMPRESSED section
  bool gnu_zdebug = false;  // a .zdebug_* section (the older GNU compression)
  bool altlink = false;     // .gnu_debugaltlink
};

// nullopt when a section header cannot be read.
std::optional<Sections> sections_of(Elf* elf) {
  Sections s;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) return std::nullopt;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name) return std::nullopt;
    const std::string_view n(name);
    SectionShape shape{name, sh.sh_type, sh.sh_type == SHT_NOBITS ? 0 : sh.sh_size};
    if (sh.sh_flags & SHF_COMPRESSED) {
      GElf_Chdr ch;
      if (!gelf_getchdr(scn, &ch)) return std::nullopt;
      shape.size = ch.ch_size;
      s.compressed = true;
    }
    if (n.starts_with(".zdebug")) s.gnu_zdebug = true;
    if (n == ".gnu_debugaltlink") s.altlink = true;
    s.shapes.push_back(std::move(shape));
  }
  return s;
}

// Whether the file at `path` is a copy of the original whose build id is `hex` and whose
// sections are `want`: the same build id, the same sections at their inflated sizes, nothing
// compressed. (A file of the same build id that is not the debug file, the stripped binary say,
// differs in its sections.)
bool valid_copy(const std::string& path, const std::string& hex, const std::vector<SectionShape>& want) {
  ElfIn in(path);
  Elf* elf = in.get();
  if (!elf || build_id_hex(elf) != hex) return false;
  const std::optional<Sections> s = sections_of(elf);
  return s && !s->compressed && !s->gnu_zdebug && s->shapes == want;
}

// Writes `in` with every SHF_COMPRESSED section inflated to the new file `fd`, libelf laying the
// file out again (sizes change). The program headers are copied as they are: they describe
// addresses, which is what a debug file's readers take from them.
bool write_inflated(Elf* in, int fd, std::string* error) {
  size_t shnum = 0, shstrndx = 0, phnum = 0;
  if (elf_getshdrnum(in, &shnum) != 0 || elf_getshdrstrndx(in, &shstrndx) != 0 || elf_getphdrnum(in, &phnum) != 0) {
    *error = elf_errmsg(-1);
    return false;
  }
  if (shnum >= SHN_LORESERVE || shstrndx >= SHN_LORESERVE) {
    *error = "too many sections";
    return false;
  }
  GElf_Ehdr eh;
  if (!gelf_getehdr(in, &eh)) {
    *error = elf_errmsg(-1);
    return false;
  }
  Elf* out = elf_begin(fd, ELF_C_WRITE, nullptr);
  if (!out) {
    *error = elf_errmsg(-1);
    return false;
  }
  bool ok = gelf_newehdr(out, gelf_getclass(in)) != 0 && (phnum == 0 || gelf_newphdr(out, phnum) != nullptr);
  for (size_t i = 0; ok && i < phnum; ++i) {
    GElf_Phdr ph;
    ok = gelf_getphdr(in, static_cast<int>(i), &ph) && gelf_update_phdr(out, static_cast<int>(i), &ph);
  }
  for (Elf_Scn* scn = elf_nextscn(in, nullptr); ok && scn; scn = elf_nextscn(in, scn)) {
    GElf_Shdr sh;
    ok = gelf_getshdr(scn, &sh) != nullptr;
    if (ok && (sh.sh_flags & SHF_COMPRESSED)) ok = elf_compress(scn, 0, 0) >= 0 && gelf_getshdr(scn, &sh);
    Elf_Scn* copy = ok ? elf_newscn(out) : nullptr;
    ok = copy != nullptr;
    for (Elf_Data* d = nullptr; ok && (d = elf_getdata(scn, d)) != nullptr;) {
      Elf_Data* nd = elf_newdata(copy);
      if (!nd) {
        ok = false;
        break;
      }
      nd->d_buf = d->d_buf;
      nd->d_type = d->d_type;
      nd->d_version = d->d_version;
      nd->d_size = d->d_size;
      nd->d_off = d->d_off;
      nd->d_align = d->d_align;
    }
    if (ok) ok = gelf_update_shdr(copy, &sh) != 0;
  }
  if (ok) {
    eh.e_shstrndx = static_cast<GElf_Half>(shstrndx);
    ok = gelf_update_ehdr(out, &eh) != 0 && elf_update(out, ELF_C_WRITE) >= 0;
  }
  if (!ok) *error = elf_errmsg(-1);
  elf_end(out);
  return ok;
}

}  // namespace

std::string default_cache_dir() {
  if (const char* dir = std::getenv("TPERF_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/tperf";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tperf";
  return "";
}

UncompressedCopy uncompressed_copy(const std::string& path, const std::string& cache_dir) {
  UncompressedCopy r;
  if (cache_dir.empty()) return r;
  ElfIn in(path);
  Elf* elf = in.get();
  if (!elf) return r;
  const std::optional<Sections> s = sections_of(elf);
  if (!s || !s->compressed || s->gnu_zdebug || s->altlink) return r;
  const std::string hex = build_id_hex(elf);
  if (hex.empty()) return r;
  const std::vector<SectionShape>& shapes = s->shapes;
  const std::string dir = cache_dir + "/debug";
  const std::string target = fmt::format("{}/{}.debug", dir, hex);
  if (valid_copy(target, hex, shapes)) {
    r.path = target;
    return r;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    r.error = fmt::format("{}: {}", dir, ec.message());
    return r;
  }
  static std::atomic<unsigned> serial{0};
  const std::string tmp = fmt::format("{}/.{}.{}.{}.tmp", dir, hex, ::getpid(), serial.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    r.error = fmt::format("{}: {}", tmp, std::strerror(errno));
    return r;
  }
  std::string error;
  bool ok = write_inflated(elf, fd, &error);
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = std::strerror(errno);
  }
  // Checked as any copy found later would be, before it takes the place of the file.
  if (ok && !valid_copy(tmp, hex, shapes)) {
    ok = false;
    error = "the copy does not read back";
  }
  if (ok && ::rename(tmp.c_str(), target.c_str()) != 0) {
    ok = false;
    error = std::strerror(errno);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    r.error = fmt::format("{}: {}", target, error);
    return r;
  }
  r.path = target;
  r.made = true;
  return r;
}

}  // namespace tperf::symbols
