// One ELF file opened for symbolization: the image mapped privately and parsed with libelf, with
// the pieces symbol loading needs (sections by name, program headers, build id, .gnu_debuglink,
// the MiniDebugInfo image in .gnu_debugdata). Every read is bounds-checked by libelf or here.
#pragma once

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "util/build_id.h"

namespace tperf::symbols {

// The section of `elf` with that name (its header in *shdr, its index in *index), or nullptr (none,
// or a damaged section name table).
Elf_Scn* find_section(Elf* elf, const char* name, GElf_Shdr* shdr, size_t* index = nullptr);

class ElfFile {
 public:
  // nullptr (with *error saying why: missing, not a regular file, not ELF) when it cannot be used.
  static std::unique_ptr<ElfFile> open(const std::string& path, std::string* error = nullptr);
  // An ELF image held in memory (a decompressed .gnu_debugdata, a vDSO copy, a fuzzer input).
  static std::unique_ptr<ElfFile> from_memory(std::vector<uint8_t> image, std::string name,
                                              std::string* error = nullptr);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& path() const { return path_; }
  Elf* elf() const { return elf_; }
  const GElf_Ehdr& ehdr() const { return ehdr_; }
  std::span<const uint8_t> image() const { return {data_, size_}; }

  // The section with that name (find_section).
  Elf_Scn* section(const char* name, GElf_Shdr* shdr, size_t* index = nullptr) const {
    return find_section(elf_, name, shdr, index);
  }
  bool has_symtab() const { return symtab_ != nullptr; }
  bool has_dynsym() const { return dynsym_ != nullptr; }
  Elf_Scn* symtab(GElf_Shdr* shdr, size_t* index) const;
  Elf_Scn* dynsym(GElf_Shdr* shdr, size_t* index) const;

  const std::optional<util::BuildId>& build_id() const { return build_id_; }
  // .gnu_debuglink: the debug file's name and the CRC-32 of its contents.
  struct DebugLink {
    std::string name;
    uint32_t crc = 0;
  };
  std::optional<DebugLink> debuglink() const;
  // .gnu_debugdata decompressed (an xz-compressed ELF holding a .symtab); nullopt when absent or
  // not decodable (*error says why).
  std::optional<std::vector<uint8_t>> gnu_debugdata(std::string* error = nullptr) const;

  // The PT_LOAD program header whose memory range holds vaddr (perf's elf_read_program_header).
  bool load_segment_for_vaddr(uint64_t vaddr, GElf_Phdr* phdr) const;
  // The PT_LOAD program header whose file range holds `offset`.
  bool load_segment_for_offset(uint64_t offset, GElf_Phdr* phdr) const;
  const std::vector<GElf_Phdr>& load_segments() const { return loads_; }

 private:
  ElfFile() = default;
  bool init(std::string* error);

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;
  Elf* elf_ = nullptr;
  GElf_Ehdr ehdr_{};
  Elf_Scn* symtab_ = nullptr;
  Elf_Scn* dynsym_ = nullptr;
  size_t symtab_index_ = 0, dynsym_index_ = 0;
  std::vector<GElf_Phdr> loads_;
  std::optional<util::BuildId> build_id_;
};

// The CRC-32 .gnu_debuglink uses (the zlib/IEEE polynomial) over `data`, continuing from `crc`.
uint32_t debuglink_crc32(std::span<const uint8_t> data, uint32_t crc = 0);

}  // namespace tperf::symbols
