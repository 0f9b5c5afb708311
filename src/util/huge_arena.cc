#include "util/huge_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace tperf::util {

HugeArena::~HugeArena() {
  for (const Region& r : regions_) munmap(r.base, r.size);
}

void HugeArena::map_region(size_t bytes) {
  size_t size = region_size_;
  while (size < bytes) size *= 2;
  if (region_size_ < kMaxRegion) region_size_ *= 2;
  // Mapped one huge page larger and used from the first huge-page boundary in it: the kernel
  // backs only aligned 2 MiB ranges with a huge page.
  const size_t length = size + kHugePage;
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  regions_.push_back({p, length});
  mapped_ += length;
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
  // The first regions in small pages: a small tree is not made to take whole huge pages.
  if (size >= kHugeFrom) madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  next_ = reinterpret_cast<char*>(aligned);
  end_ = next_ + size;
}

void* HugeArena::do_allocate(size_t bytes, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0 || align > kHugePage) throw std::bad_alloc();
  if (bytes == 0) bytes = 1;
  auto aligned_next = [&] {
    const auto at = reinterpret_cast<uintptr_t>(next_);
    return reinterpret_cast<char*>((at + align - 1) & ~(uintptr_t{align} - 1));
  };
  char* p = next_ ? aligned_next() : nullptr;
  if (!p || p > end_ || static_cast<size_t>(end_ - p) < bytes) {
    map_region(bytes);
    p = aligned_next();
  }
  next_ = p + bytes;
  return p;
}

}  // namespace tperf::util
