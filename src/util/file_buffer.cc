#include "util/file_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace tperf::util {

namespace {

constexpr size_t kPage = 4096;
constexpr size_t kFirstUnsized = 1 << 20;  // /proc files say size 0

size_t round_to_pages(size_t n) { return (n + kPage - 1) / kPage * kPage; }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

FileBuffer::FileBuffer(FileBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

FileBuffer& FileBuffer::operator=(FileBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

FileBuffer::~FileBuffer() { release(); }

void FileBuffer::shrink_to(size_t n) {
  if (!data_ || n > size_) return;
  size_ = n;
  data_[n] = '\0';
  const size_t keep = round_to_pages(n + 1);
  if (keep < capacity_) {
    ::munmap(data_ + keep, capacity_ - keep);
    capacity_ = keep;
  }
}

void FileBuffer::release() {
  if (data_) ::munmap(data_, capacity_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

bool FileBuffer::grow(size_t at_least, bool populate) {
  size_t want = round_to_pages(at_least);
  if (want <= capacity_) return true;
  void* p;
  if (!data_) {
    p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1,
               0);
  } else {
    // Moves the page tables, not the bytes.
    p = ::mremap(data_, capacity_, want, MREMAP_MAYMOVE);
  }
  if (p == MAP_FAILED) return false;
  data_ = static_cast<char*>(p);
  capacity_ = want;
  return true;
}

std::optional<FileBuffer> FileBuffer::read(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  struct stat st {};
  size_t expect = ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
                      ? static_cast<size_t>(st.st_size) + 1
                      : kFirstUnsized;
  FileBuffer buf;
  if (!buf.grow(expect)) {
    errno = ENOMEM;
    return std::nullopt;
  }
  for (;;) {
    if (buf.size_ + 1 >= buf.capacity_ && !buf.grow(buf.capacity_ * 2)) {
      errno = ENOMEM;
      return std::nullopt;
    }
    ssize_t n = ::read(fd.get(), buf.data_ + buf.size_, buf.capacity_ - 1 - buf.size_);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    buf.size_ += static_cast<size_t>(n);
  }
  buf.data_[buf.size_] = '\0';
  return buf;
}

bool FileBuffer::read_lines(const std::string& path, size_t chunk, const std::function<bool(FileBuffer)>& sink) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  chunk = std::max<size_t>(chunk, kPage);
  FileBuffer buf;
  for (bool eof = false; !eof;) {
    // A piece is filled whole: its pages are mapped in one call rather than faulted in one by one
    // as the read fills them (/proc/kallsyms read in 512 KiB pieces: 47 -> 40 ms here).
    if (buf.size_ + 1 >= buf.capacity_ && !buf.grow(std::max(chunk + 1, buf.capacity_ * 2), true)) {
      errno = ENOMEM;
      return false;
    }
    // Up to `chunk` bytes in the piece (more only for a line that does not fit).
    const size_t room = buf.capacity_ - 1 - buf.size_;
    const size_t want = buf.size_ < chunk ? std::min(room, chunk - buf.size_) : room;
    ssize_t n = ::read(fd.get(), buf.data_ + buf.size_, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    eof = n == 0;
    buf.size_ += static_cast<size_t>(n);
    if (!eof && buf.size_ < chunk) continue;
    // Hand over the whole lines; what follows the last '\n' starts the next piece.
    size_t keep = buf.size_;
    if (!eof) {
      const void* nl = ::memrchr(buf.data_, '\n', buf.size_);
      if (!nl) continue;  // one line longer than `chunk`: read on
      keep = static_cast<size_t>(static_cast<const char*>(nl) - buf.data_) + 1;
    }
    FileBuffer next;
    if (keep < buf.size_) {
      if (!next.grow(std::max(chunk + 1, buf.size_ - keep + 1), true)) {
        errno = ENOMEM;
        return false;
      }
      std::memcpy(next.data_, buf.data_ + keep, buf.size_ - keep);
      next.size_ = buf.size_ - keep;
    }
    buf.size_ = keep;
    if (keep) {
      buf.data_[keep] = '\0';
      if (!sink(std::move(buf))) return true;
    }
    buf = std::move(next);
  }
  return true;
}

FileBuffer FileBuffer::copy_of(std::string_view text) {
  FileBuffer buf;
  if (!buf.grow(text.size() + 1)) throw std::bad_alloc();
  if (!text.empty()) std::memcpy(buf.data_, text.data(), text.size());
  buf.size_ = text.size();
  buf.data_[buf.size_] = '\0';
  return buf;
}

}  // namespace tperf::util
