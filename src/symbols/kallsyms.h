// The kernel's symbols from a kallsyms file (/proc/kallsyms or a copy), as perf 6.1 keeps them:
// T/W/D/B symbols, aliases and zero sizes fixed up over the whole file, then split into the
// kernel image's symbols (shifted by the KASLR delta) and each module's.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "symbols/symbol_table.h"
#include "util/file_buffer.h"

namespace tperf::symbols {

struct KernelSymbols {
  SymbolTable kernel;                        // addresses as the recording saw them
  std::map<std::string, SymbolTable> modules;  // by module name without brackets ("ext4")
  uint64_t delta = 0;                        // subtracted from the file's kernel addresses
};

// Parses kallsyms text. `ref_name`/`ref_addr`: the reference symbol of the recording's kernel map
// ("_text" at the address the kernel map's pgoff holds); when the file has it elsewhere, kernel
// symbols move by the difference (the file came from another boot of a KASLR kernel).
// Returns nullopt with *error when the text has no usable symbols: none at all, or every address
// zero (kernel.kptr_restrict hides them from this user).
std::optional<KernelSymbols> parse_kallsyms(std::string_view text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error);
// The same on a buffer it takes (FileBuffer::read of /proc/kallsyms): the kernel's table keeps
// the buffer and its names point into it.
std::optional<KernelSymbols> parse_kallsyms(util::FileBuffer text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error);

// parse_kallsyms() on text that comes in pieces of whole lines (util::FileBuffer::read_lines):
// each piece is parsed when it comes, what needs them all (perf's fixups, the split by module)
// when finish() is called. The table keeps the pieces.
class KallsymsParser {
 public:
  KallsymsParser(std::string_view ref_name, uint64_t ref_addr) : ref_name_(ref_name), ref_addr_(ref_addr) {}
  void add(util::FileBuffer piece);
  // The reference symbol's address when recording, if it was not known at construction.
  void set_ref_addr(uint64_t ref_addr) { ref_addr_ = ref_addr; }
  std::optional<KernelSymbols> finish(std::string* error);

 private:
  std::string ref_name_;
  uint64_t ref_addr_;
  SymbolTable all_;
  size_t reserved_ = 0;
  size_t lines_ = 0, nonzero_ = 0;
  size_t pieces_ = 0, bytes_ = 0;
  // The names of the modules' symbols ("name\t[module]"), which finish() copies to the modules'
  // tables: apart from the kernel's, which stay in the pieces.
  std::deque<std::string> module_names_;
  bool have_ref_ = false;
  uint64_t file_ref_ = 0;
};

// Reads the kallsyms file at `path` and parses it: the kernel writes /proc/kallsyms as it is read
// (30-40 ms of kernel time on this project's machines), and the pieces are parsed on a second
// thread while the first reads the next. nullopt with *error when the text has no usable
// symbols (as parse_kallsyms), or with *read_errno set when the file cannot be read.
std::optional<KernelSymbols> read_kallsyms(const std::string& path, std::string_view ref_name, uint64_t ref_addr,
                                           std::string* error, int* read_errno);

// read_kallsyms() begun ahead: from construction on, a thread reads the file and another parses
// it, while the caller does other things; the reference symbol's address when recording, which
// only the recording's kernel map gives, comes with finish(). Destroyed unfinished, it stops
// both threads and waits for them.
class KallsymsRead {
 public:
  KallsymsRead(std::string path, std::string_view ref_name);
  ~KallsymsRead();
  KallsymsRead(const KallsymsRead&) = delete;
  KallsymsRead& operator=(const KallsymsRead&) = delete;

  const std::string& path() const { return path_; }
  // Waits for the whole file to be read and parsed, then as read_kallsyms(). Call once.
  std::optional<KernelSymbols> finish(uint64_t ref_addr, std::string* error, int* read_errno);

 private:
  struct State;
  void stop_and_join();

  std::string path_;
  std::unique_ptr<State> s_;  // what both threads share, at an address that does not move
  std::thread reading_, parsing_;
};

}  // namespace tperf::symbols
