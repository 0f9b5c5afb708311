#include "symbols/kallsyms.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
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

// Pieces of kallsyms text smaller than this on average are compacted when parsed (see finish()).
constexpr size_t kCompactBelow = 64 << 10;

// Symbols the parser makes room for at its first piece (KallsymsParser::add): just under
// MappedAllocator::kHugeFrom (4 MiB), a mapping of its own in small pages (huge pages would back
// the unwritten rest of the last one). This project's machines list 122,000 lines; a larger
// kernel doubles the array once or twice.
constexpr size_t kReserve = (util::MappedAllocator<Symbol>::kHugeFrom - 1) / sizeof(Symbol);

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

// How many bytes of [p, p + n) are '\n', eight at a time.
size_t count_newlines(const char* p, size_t n) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kLow7 = 0x7f7f7f7f7f7f7f7fULL;
  size_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    w ^= kOnes * '\n';  // each '\n' is now a zero byte
    // The high bit of each zero byte and of no other (no carry crosses a byte).
    const uint64_t zero = ~(((w & kLow7) + kLow7) | w | kLow7);
    count += static_cast<size_t>(((zero >> 7) * kOnes) >> 56);  // the sum of the eight 0/1 bytes
  }
  for (; i < n; ++i) count += p[i] == '\n';
  return count;
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
  // The names stay in the text: each kept one is moved down to the end of the one kept before
  // it and ended with a '\0', and the pages past the last are given back. The piece then holds
  // the names alone (3.1 of 5.4 MB on this project's machines) and the table keeps it, instead
  // of a copy of 120,000 names into fresh pages, which cost more in this kind of VM than the
  // names' copy itself.
  char* const base = piece.data();
  const size_t size = piece.size();
  const size_t newlines = count_newlines(base, size);
  // Room for the lines of this piece. The first piece reserves room for kReserve symbols at once
  // (address space: a page takes memory once a symbol is written to it): grown by doubling as the
  // pieces came, the array was copied into fresh pages at each step, and those page faults and
  // copies cost more than parsing the lines.
  if (all_.size() + newlines + 1 > reserved_) {
    reserved_ = std::max({all_.size() + newlines + 1, 2 * reserved_, kReserve});
    all_.reserve(reserved_);
  }
  size_t pos = 0, kept = 0;
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
    ++lines_;
    if (addr) ++nonzero_;
    if (!have_ref_ && !ref_name_.empty() && name == ref_name_) {
      have_ref_ = true;
      file_ref_ = addr;
    }
    if (!kept_type(type)) continue;
    const uint8_t binding = binding_of(type), kind = is_function_type(type) ? kTypeFunc : kTypeObject;
    if (std::memchr(name.data(), '\t', name.size())) {
      // A module's symbol ("name\t[module]"): it leaves this table in finish(), so its name is
      // kept aside rather than among the kernel's.
      const std::string& kept_aside = module_names_.emplace_back(name);
      all_.add_in_place(addr, 0, binding, kind, kept_aside);
      continue;
    }
    // Down to `kept`, never past the line's start: no line still to parse is written over.
    char* to = base + kept;
    std::memmove(to, name.data(), name.size());
    to[name.size()] = '\0';
    kept += name.size() + 1;
    all_.add_in_place(addr, 0, binding, kind, std::string_view(to, name.size()));
  }
  ++pieces_;
  bytes_ += size;
  piece.shrink_to(kept);
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
  if (!module_names_.empty()) {
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
  } else if (out.delta) {
    all.retain_and_shift([](const Symbol&) { return true; }, out.delta);
  }
  out.kernel = std::move(all);
  out.kernel.finish(SymbolTable::Fixups::kNone);
  // The kernel's names are what the pieces kept. They are moved into memory of their own only
  // when the pieces were small (a few pages each, in tests), whose spare room would be more than
  // the names. Else the symbol array keeps its spare room, which was never written to and takes
  // no memory: shrinking it to fit copied every symbol into fresh pages (7 ms of the 17 the end
  // of the parse took, on the sample thread's way to its first kernel frame).
  if (bytes_ / pieces_ < kCompactBelow) out.kernel.compact();
  for (auto& [name, table] : out.modules) table.finish(SymbolTable::Fixups::kNone);
  return out;
}

struct KallsymsRead::State {
  explicit State(std::string_view ref_name) : parser(ref_name, 0) {}
  std::mutex mu;
  std::condition_variable cv;
  std::deque<util::FileBuffer> pieces;
  bool done = false, stop = false;
  int failed = 0;
  KallsymsParser parser;
  std::exception_ptr parse_error;
};

KallsymsRead::KallsymsRead(std::string path, std::string_view ref_name)
    : path_(std::move(path)), s_(std::make_unique<State>(ref_name)) {
  constexpr size_t kPiece = 512 << 10;
  State& s = *s_;
  reading_ = std::thread([&s, path = path_] {
    pthread_setname_np(pthread_self(), "tperf-kallsyms");
    const bool ok = util::FileBuffer::read_lines(path, kPiece, [&](util::FileBuffer piece) {
      std::lock_guard lock(s.mu);
      if (s.stop) return false;
      s.pieces.push_back(std::move(piece));
      s.cv.notify_all();
      return true;
    });
    const int e = ok ? 0 : errno;
    std::lock_guard lock(s.mu);
    s.failed = e;
    s.done = true;
    s.cv.notify_all();
  });
  // A second thread that cannot start leaves none behind (the destructor does not run then).
  struct StopUnlessStarted {
    KallsymsRead& r;
    bool started = false;
    ~StopUnlessStarted() {
      if (!started) r.stop_and_join();
    }
  } guard{*this};
  parsing_ = std::thread([&s] {
    pthread_setname_np(pthread_self(), "tperf-ksymparse");
    for (;;) {
      util::FileBuffer piece;
      {
        std::unique_lock lock(s.mu);
        s.cv.wait(lock, [&] { return !s.pieces.empty() || s.done || s.stop; });
        if (s.stop || s.pieces.empty()) return;
        piece = std::move(s.pieces.front());
        s.pieces.pop_front();
      }
      try {
        s.parser.add(std::move(piece));
      } catch (...) {
        // A parse that cannot allocate: the reading stops, finish() says why.
        std::lock_guard lock(s.mu);
        s.parse_error = std::current_exception();
        s.stop = true;
        return;
      }
    }
  });
  guard.started = true;
}

void KallsymsRead::stop_and_join() {
  {
    std::lock_guard lock(s_->mu);
    s_->stop = true;
    s_->cv.notify_all();
  }
  if (parsing_.joinable()) parsing_.join();
  if (reading_.joinable()) reading_.join();
}

KallsymsRead::~KallsymsRead() { stop_and_join(); }

std::optional<KernelSymbols> KallsymsRead::finish(uint64_t ref_addr, std::string* error, int* read_errno) {
  // The parsing thread ends once the reading thread is done and every piece is parsed.
  if (parsing_.joinable()) parsing_.join();
  stop_and_join();
  if (s_->parse_error) std::rethrow_exception(s_->parse_error);
  if (s_->failed) {
    if (read_errno) *read_errno = s_->failed;
    return std::nullopt;
  }
  s_->parser.set_ref_addr(ref_addr);
  return s_->parser.finish(error);
}

std::optional<KernelSymbols> read_kallsyms(const std::string& path, std::string_view ref_name, uint64_t ref_addr,
                                           std::string* error, int* read_errno) {
  KallsymsRead read(path, ref_name);
  return read.finish(ref_addr, error, read_errno);
}

}  // namespace tperf::symbols
