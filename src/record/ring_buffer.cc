#include "record/ring_buffer.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tperf::record {

namespace {

// data_head is written by the kernel: the acquire load pairs with its store so the record bytes
// before head are visible. data_tail is read by the kernel: the release store makes sure our
// reads of the records are done before it may overwrite them.
uint64_t load_head(const perf_event_mmap_page* page) {
  return __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
}

void store_tail(perf_event_mmap_page* page, uint64_t tail) {
  __atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
}

}  // namespace

uint64_t walk_ring(const uint8_t* data, size_t size, uint64_t tail, uint64_t head, std::vector<uint8_t>& scratch,
                   const std::function<void(std::span<const uint8_t>)>& fn, uint64_t* corrupt_bytes) {
  const uint64_t mask = size - 1;
  while (tail < head) {
    uint64_t avail = head - tail;
    if (avail < sizeof(perf_event_header)) break;
    size_t pos = static_cast<size_t>(tail & mask);
    perf_event_header hdr;
    // The kernel keeps headers 8-aligned, so a header never straddles the end; copy anyway so a
    // corrupt buffer cannot make us read past it.
    if (pos + sizeof hdr <= size) {
      std::memcpy(&hdr, data + pos, sizeof hdr);
    } else {
      size_t first = size - pos;
      std::memcpy(&hdr, data + pos, first);
      std::memcpy(reinterpret_cast<uint8_t*>(&hdr) + first, data, sizeof hdr - first);
    }
    if (hdr.size < sizeof hdr || hdr.size > avail) {
      if (corrupt_bytes) *corrupt_bytes += avail;
      return head;
    }
    if (pos + hdr.size <= size) {
      fn(std::span<const uint8_t>(data + pos, hdr.size));
    } else {
      size_t first = size - pos;
      scratch.resize(hdr.size);
      std::memcpy(scratch.data(), data + pos, first);
      std::memcpy(scratch.data() + first, data, hdr.size - first);
      fn(std::span<const uint8_t>(scratch.data(), hdr.size));
    }
    tail += hdr.size;
  }
  return tail;
}

int RingBuffer::map(int fd, size_t data_pages, int cpu) {
  release();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t len = (data_pages + 1) * page;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -errno;
  base_ = static_cast<uint8_t*>(p);
  map_size_ = len;
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(base_);
  // Kernels since 4.1 say where the data is; older ones put it right after the control page.
  size_t off = meta->data_offset ? static_cast<size_t>(meta->data_offset) : page;
  size_t size = meta->data_size ? static_cast<size_t>(meta->data_size) : data_pages * page;
  data_ = base_ + off;
  data_size_ = size;
  fd_ = fd;
  cpu_ = cpu;
  return 0;
}

RingBuffer::~RingBuffer() { release(); }

RingBuffer::RingBuffer(RingBuffer&& other) noexcept { *this = std::move(other); }

RingBuffer& RingBuffer::operator=(RingBuffer&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    data_ = std::exchange(other.data_, nullptr);
    data_size_ = std::exchange(other.data_size_, 0);
    fd_ = std::exchange(other.fd_, -1);
    cpu_ = std::exchange(other.cpu_, -1);
    scratch_ = std::move(other.scratch_);
    corrupt_bytes_ = other.corrupt_bytes_;
  }
  return *this;
}

void RingBuffer::release() {
  if (base_) ::munmap(base_, map_size_);
  base_ = nullptr;
  data_ = nullptr;
  map_size_ = data_size_ = 0;
}

size_t RingBuffer::drain(const std::function<void(std::span<const uint8_t>)>& fn) {
  if (!base_) return 0;
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(base_);
  uint64_t head = load_head(meta);
  uint64_t tail = meta->data_tail;  // only we write it
  if (head == tail) return 0;
  uint64_t new_tail = walk_ring(data_, data_size_, tail, head, scratch_, fn, &corrupt_bytes_);
  store_tail(meta, new_tail);
  return static_cast<size_t>(new_tail - tail);
}

}  // namespace tperf::record
