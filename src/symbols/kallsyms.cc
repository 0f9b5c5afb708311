#include "symbols/kallsyms.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "util/text.h"

namespace tperf::symbols {

namespace {

// The whole of `s` as hex digits (kallsyms addresses have no 0x).
bool parse_hex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16 || s.starts_with("0x") || s.starts_with("0X")) return false;
  return util::parse_hex_prefix(s, out) == s.size();
}

// perf keeps text, weak, data and bss symbols of kallsyms.
bool kept_type(char type) {
  char t = static_cast<char>(std::toupper(static_cast<unsigned char>(type)));
  return t == 'T' || t == 'W' || t == 'D' || t == 'B';
}

// perf takes text and weak symbols for functions and every other kept one for a data object.
bool is_function_type(char type) {
  char t = static_cast<char>(std::toupper(static_cast<unsigned char>(type)));
  return t == 'T' || t == 'W';
}

uint8_t binding_of(char type) {
  if (type == 'W' || type == 'w') return kBindWeak;
  return std::isupper(static_cast<unsigned char>(type)) ? kBindGlobal : kBindLocal;
}

}  // namespace

std::optional<KernelSymbols> parse_kallsyms(std::string_view text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error) {
  return parse_kallsyms(util::FileBuffer::copy_of(text), ref_name, ref_addr, error);
}

std::optional<KernelSymbols> parse_kallsyms(util::FileBuffer text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error) {
  KallsymsParser parser(ref_name, ref_addr);
  parser.add(std::move(text));
  return parser.finish(error);
}

void KallsymsParser::add(util::FileBuffer piece) {
  // The names stay where they are in the text, each ended with a '\0' written over what
  // followed it, and the table keeps the text: no copy of 120,000 names.
  char* const base = piece.data();
  const size_t size = piece.size();
  size_t newlines = 0;
  for (const char* p = base; (p = static_cast<const char*>(std::memchr(p, '\n', size - (p - base)))); ++p) ++newlines;
  // Room for the lines of this piece, doubling: pieces come one by one.
  if (all_.size() + newlines + 1 > reserved_) {
    reserved_ = std::max(all_.size() + newlines + 1, 2 * reserved_);
    all_.reserve(reserved_);
  }
  size_t pos = 0;
  while (pos < size) {
    const char* nl = static_cast<const char*>(std::memchr(base + pos, '\n', size - pos));
    size_t line_end = nl ? static_cast<size_t>(nl - base) : size;
    std::string_view line(base + pos, line_end - pos);
    pos = nl ? line_end + 1 : size;
    // "<hex address> <type> <name>[\t[module]]"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr;
    if (!parse_hex(line.substr(0, sp1), &addr)) continue;
    char type = line[sp1 + 1];
    std::string_view name = line.substr(sp1 + 3);
    while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.remove_suffix(1);
    if (name.empty()) continue;
    // The byte after the name is the line's end (or what was trimmed, or the buffer's '\0').
    base[name.data() + name.size() - base] = '\0';
    ++lines_;
    if (addr) ++nonzero_;
    if (!have_ref_ && !ref_name_.empty() && name == ref_name_) {
      have_ref_ = true;
      file_ref_ = addr;
    }
    if (!kept_type(type)) continue;
    all_.add_in_place(addr, 0, binding_of(type), is_function_type(type) ? kTypeFunc : kTypeObject, name);
  }
  all_.adopt(std::move(piece));
}

std::optional<KernelSymbols> KallsymsParser::finish(std::string* error) {
  if (lines_ == 0) {
    if (error) *error = "no symbols in it";
    return std::nullopt;
  }
  if (nonzero_ == 0) {
    if (error) *error = "every address is zero (kernel.kptr_restrict hides them)";
    return std::nullopt;
  }
  SymbolTable all = std::move(all_);
  all.finish(SymbolTable::Fixups::kKallsyms);

  KernelSymbols out;
  if (have_ref_ && ref_addr_) out.delta = file_ref_ - ref_addr_;
  // Module symbols ("name\t[module]") go to their module's table; the kernel's stay in place.
  for (const Symbol& s : all.symbols()) {
    std::string_view name = s.name();
    size_t tab = name.find('\t');
    if (tab == std::string_view::npos) continue;
    std::string_view module = name.substr(tab + 1);
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']') module = module.substr(1, module.size() - 2);
    out.modules[std::string(module)].add(s.start, s.end - s.start, s.binding, s.type, name.substr(0, tab));
  }
  all.retain_and_shift([](const Symbol& s) { return s.name().find('\t') == std::string_view::npos; }, out.delta);
  out.kernel = std::move(all);
  out.kernel.finish(SymbolTable::Fixups::kNone);
  // The kernel's names out of the text, which then goes.
  out.kernel.compact();
  for (auto& [name, table] : out.modules) table.finish(SymbolTable::Fixups::kNone);
  return out;
}

std::optional<KernelSymbols> read_kallsyms(const std::string& path, std::string_view ref_name, uint64_t ref_addr,
                                           std::string* error, int* read_errno) {
  constexpr size_t kPiece = 512 << 10;
  KallsymsParser parser(ref_name, ref_addr);
  std::mutex mu;
  std::condition_variable cv;
  std::deque<util::FileBuffer> pieces;
  bool done = false, stop = false;
  int failed = 0;
  std::thread reading([&] {
    pthread_setname_np(pthread_self(), "tperf-kallsyms");
    const bool ok = util::FileBuffer::read_lines(path, kPiece, [&](util::FileBuffer piece) {
      std::lock_guard lock(mu);
      if (stop) return false;
      pieces.push_back(std::move(piece));
      cv.notify_one();
      return true;
    });
    const int e = ok ? 0 : errno;
    std::lock_guard lock(mu);
    failed = e;
    done = true;
    cv.notify_one();
  });
  // The reading thread is told to stop and joined however this thread leaves (a parse that
  // cannot allocate).
  struct Join {
    std::thread& t;
    std::mutex& mu;
    bool& stop;
    ~Join() {
      {
        std::lock_guard lock(mu);
        stop = true;
      }
      t.join();
    }
  } join{reading, mu, stop};
  for (;;) {
    util::FileBuffer piece;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !pieces.empty() || done; });
      if (pieces.empty()) break;
      piece = std::move(pieces.front());
      pieces.pop_front();
    }
    parser.add(std::move(piece));
  }
  if (failed) {
    if (read_errno) *read_errno = failed;
    return std::nullopt;
  }
  return parser.finish(error);
}

}  // namespace tperf::symbols
