#include "symbols/elf_file.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tperf::symbols {

std::unique_ptr<ElfFile> ElfFile::open(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = fmt::format("{}: {}", path, std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (error) *error = fmt::format("{}: not a regular file", path);
    ::close(fd);
    return nullptr;
  }
  if (st.st_size < static_cast<off_t>(sizeof(Elf32_Ehdr))) {
    if (error) *error = fmt::format("{}: too small for ELF", path);
    ::close(fd);
    return nullptr;
  }
  // Private and writable: libelf may convert data in place; nothing reaches the file.
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    if (error) *error = fmt::format("{}: mmap: {}", path, std::strerror(errno));
    return nullptr;
  }
  std::unique_ptr<ElfFile> f(new ElfFile());
  f->path_ = path;
  f->data_ = static_cast<const uint8_t*>(p);
  f->size_ = static_cast<size_t>(st.st_size);
  f->mapped_ = true;
  if (!f->init(error)) return nullptr;
  return f;
}

std::unique_ptr<ElfFile> ElfFile::from_memory(std::vector<uint8_t> image, std::string name, std::string* error) {
  std::unique_ptr<ElfFile> f(new ElfFile());
  f->path_ = std::move(name);
  f->owned_ = std::move(image);
  f->data_ = f->owned_.data();
  f->size_ = f->owned_.size();
  if (!f->init(error)) return nullptr;
  return f;
}

ElfFile::~ElfFile() {
  if (elf_) elf_end(elf_);
  if (mapped_) munmap(const_cast<uint8_t*>(data_), size_);
}

bool ElfFile::init(std::string* error) {
  elf_version(EV_CURRENT);
  elf_ = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(data_)), size_);
  if (!elf_ || elf_kind(elf_) != ELF_K_ELF || !gelf_getehdr(elf_, &ehdr_)) {
    if (error) *error = fmt::format("{}: not an ELF file", path_);
    return false;
  }
  GElf_Shdr shdr;
  symtab_ = section(".symtab", &shdr, &symtab_index_);
  if (symtab_ && shdr.sh_type != SHT_SYMTAB) symtab_ = nullptr;
  dynsym_ = section(".dynsym", &shdr, &dynsym_index_);
  if (dynsym_ && shdr.sh_type != SHT_DYNSYM) dynsym_ = nullptr;
  size_t phnum = 0;
  if (elf_getphdrnum(elf_, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf_, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) loads_.push_back(ph);
    }
  }
  build_id_ = util::read_build_id_from_memory({data_, size_});
  return true;
}

Elf_Scn* find_section(Elf* elf, const char* name, GElf_Shdr* shdr, size_t* index) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
  // A damaged string table: elf_strptr would fail for every name anyway.
  if (!elf_rawdata(elf_getscn(elf, shstrndx), nullptr)) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    if (!gelf_getshdr(scn, shdr)) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr->sh_name);
    if (n && std::strcmp(n, name) == 0) {
      if (index) *index = elf_ndxscn(scn);
      return scn;
    }
  }
  return nullptr;
}

Elf_Scn* ElfFile::symtab(GElf_Shdr* shdr, size_t* index) const {
  if (!symtab_ || !gelf_getshdr(symtab_, shdr)) return nullptr;
  if (index) *index = symtab_index_;
  return symtab_;
}

Elf_Scn* ElfFile::dynsym(GElf_Shdr* shdr, size_t* index) const {
  if (!dynsym_ || !gelf_getshdr(dynsym_, shdr)) return nullptr;
  if (index) *index = dynsym_index_;
  return dynsym_;
}

std::optional<ElfFile::DebugLink> ElfFile::debuglink() const {
  GElf_Shdr shdr;
  Elf_Scn* scn = section(".gnu_debuglink", &shdr);
  if (!scn) return std::nullopt;
  Elf_Data* d = elf_getdata(scn, nullptr);
  if (!d || !d->d_buf || d->d_size < 8) return std::nullopt;
  const char* p = static_cast<const char*>(d->d_buf);
  size_t len = strnlen(p, d->d_size);
  if (len == 0 || len >= d->d_size) return std::nullopt;
  DebugLink link;
  link.name.assign(p, len);
  // The CRC follows the name, 4-byte aligned, in the file's byte order.
  size_t crc_off = (len + 1 + 3) & ~size_t{3};
  if (crc_off + 4 > d->d_size) return std::nullopt;
  uint8_t b[4];
  std::memcpy(b, p + crc_off, 4);
  if (ehdr_.e_ident[EI_DATA] == ELFDATA2MSB) {
    link.crc = uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3];
  } else {
    link.crc = uint32_t{b[3]} << 24 | uint32_t{b[2]} << 16 | uint32_t{b[1]} << 8 | b[0];
  }
  return link;
}

std::optional<std::vector<uint8_t>> ElfFile::gnu_debugdata(std::string* error) const {
  GElf_Shdr shdr;
  Elf_Scn* scn = section(".gnu_debugdata", &shdr);
  if (!scn || shdr.sh_type == SHT_NOBITS) return std::nullopt;
  Elf_Data* d = elf_rawdata(scn, nullptr);
  if (!d || !d->d_buf || d->d_size == 0) return std::nullopt;
  // MiniDebugInfo is small (symbols only); a bound keeps a hostile stream from eating memory.
  constexpr uint64_t kMaxImage = 1ULL << 30;
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, kMaxImage, 0) != LZMA_OK) {
    if (error) *error = "lzma decoder init failed";
    return std::nullopt;
  }
  std::vector<uint8_t> out(std::max<size_t>(d->d_size * 4, 4096));
  strm.next_in = static_cast<const uint8_t*>(d->d_buf);
  strm.avail_in = d->d_size;
  strm.next_out = out.data();
  strm.avail_out = out.size();
  lzma_ret ret;
  while (true) {
    ret = lzma_code(&strm, LZMA_FINISH);
    if (ret == LZMA_STREAM_END) break;
    if (ret != LZMA_OK && ret != LZMA_BUF_ERROR) break;
    if (strm.avail_out == 0) {
      if (out.size() >= kMaxImage) {
        ret = LZMA_MEMLIMIT_ERROR;
        break;
      }
      size_t used = out.size();
      out.resize(std::min<size_t>(used * 2, kMaxImage));
      strm.next_out = out.data() + used;
      strm.avail_out = out.size() - used;
    } else if (ret == LZMA_BUF_ERROR) {
      break;  // truncated input
    }
  }
  size_t produced = out.size() - strm.avail_out;
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) {
    if (error) *error = fmt::format("{}: .gnu_debugdata is not a valid xz stream (lzma error {})", path_, int(ret));
    return std::nullopt;
  }
  out.resize(produced);
  return out;
}

bool ElfFile::load_segment_for_vaddr(uint64_t vaddr, GElf_Phdr* phdr) const {
  for (const auto& ph : loads_) {
    uint64_t sz = std::max(ph.p_memsz, ph.p_filesz);
    if (!sz) continue;
    if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < sz) {
      *phdr = ph;
      return true;
    }
  }
  return false;
}

bool ElfFile::load_segment_for_offset(uint64_t offset, GElf_Phdr* phdr) const {
  for (const auto& ph : loads_) {
    uint64_t sz = std::max(ph.p_memsz, ph.p_filesz);
    if (!sz) continue;
    if (offset >= ph.p_offset && offset - ph.p_offset < sz) {
      *phdr = ph;
      return true;
    }
  }
  return false;
}

uint32_t debuglink_crc32(std::span<const uint8_t> data, uint32_t crc) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (uint8_t b : data) crc = table[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace tperf::symbols
