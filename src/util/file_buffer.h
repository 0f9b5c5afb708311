// A whole file in memory, read once: files whose size stat cannot tell (/proc/kallsyms, 5 MB
// made on every read) go into an anonymous mapping that grows with mremap, so no byte is copied
// twice and no page is touched that the content does not fill. Fresh pages are the expensive
// part of reading such a file in a VM (each is zeroed, and first touched by the host too).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tperf::util {

class FileBuffer {
 public:
  FileBuffer() = default;
  FileBuffer(FileBuffer&& other) noexcept;
  FileBuffer& operator=(FileBuffer&& other) noexcept;
  FileBuffer(const FileBuffer&) = delete;
  FileBuffer& operator=(const FileBuffer&) = delete;
  ~FileBuffer();

  // The file's bytes followed by one '\0' (not counted in size()); nullopt with errno set when
  // it cannot be opened or read.
  static std::optional<FileBuffer> read(const std::string& path);
  // A copy of `text` (for parsers that work on a FileBuffer given text from elsewhere).
  static FileBuffer copy_of(std::string_view text);
  // Reads the file at `path` in pieces of about `chunk` bytes, each made of whole lines (the last
  // one may lack its '\n' at the end of the file; a line longer than `chunk` makes a longer
  // piece) and followed by a '\0', handed to `sink` as soon as it is read, in order, so that a
  // consumer can parse one piece while the next is read. `sink` returns false to stop reading.
  // An empty file gives no piece. false with errno set when the file cannot be opened or read.
  static bool read_lines(const std::string& path, size_t chunk, const std::function<bool(FileBuffer)>& sink);

  // Keeps the first `n` bytes (n <= size()) and a '\0' after them, and gives the whole pages
  // beyond back to the system.
  void shrink_to(size_t n);

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  // Bytes mapped (whole pages).
  size_t capacity() const { return capacity_; }

 private:
  // `populate`: the new pages will all be written (mapped at once, MAP_POPULATE).
  bool grow(size_t at_least, bool populate = false);
  void release();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace tperf::util
