// One mmap'd perf ring buffer (the control page plus 2^n data pages): reads the records the
// kernel appended between data_tail and data_head, with the acquire/release ordering the kernel
// ABI asks for, and hands each one out whole even when it wraps around the end of the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tperf::record {

class RingBuffer {
 public:
  RingBuffer() = default;
  // Maps `data_pages` (a power of two) data pages of `fd` writable (the kernel then respects
  // data_tail and reports what did not fit as LOST records). Returns -errno on failure.
  int map(int fd, size_t data_pages, int cpu);
  ~RingBuffer();
  RingBuffer(RingBuffer&& other) noexcept;
  RingBuffer& operator=(RingBuffer&& other) noexcept;
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  bool mapped() const { return base_ != nullptr; }
  int fd() const { return fd_; }
  int cpu() const { return cpu_; }
  size_t data_size() const { return data_size_; }

  // Calls fn(record) for every complete record now in the buffer (header + body, host order; a
  // wrapped record is copied to a scratch buffer first), then releases the space to the kernel.
  // Returns the number of bytes consumed. A record whose header size is impossible (< 8 or
  // above the unread bytes) means the buffer cannot be followed: the rest is dropped and counted
  // in corrupt_bytes().
  size_t drain(const std::function<void(std::span<const uint8_t>)>& fn);
  uint64_t corrupt_bytes() const { return corrupt_bytes_; }

 private:
  void release();

  uint8_t* base_ = nullptr;  // the control page
  size_t map_size_ = 0;
  uint8_t* data_ = nullptr;
  size_t data_size_ = 0;  // a power of two
  int fd_ = -1;
  int cpu_ = -1;
  std::vector<uint8_t> scratch_;
  uint64_t corrupt_bytes_ = 0;
};

// For tests and tools: the same record walk over a plain byte array that stands for a ring of
// `size` (a power of two) bytes, reading [tail, head) with wrap-around. Returns the new tail.
uint64_t walk_ring(const uint8_t* data, size_t size, uint64_t tail, uint64_t head, std::vector<uint8_t>& scratch,
                   const std::function<void(std::span<const uint8_t>)>& fn, uint64_t* corrupt_bytes);

}  // namespace tperf::record
