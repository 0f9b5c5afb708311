#pragma once

// An allocator for arrays that grow large and live long: a report's hist entries, its frame
// table and that table's index, symbol tables. std::vector doubles such an array, and from the heap every
// doubling left the old buffer behind as a hole in the arena of the thread that grew it, which
// later allocations of other sizes rarely filled: 14 MB of the 95 MB peak of a system-wide
// `report --no-children`. From kMappedFrom bytes on, each buffer here is a mapping of its own,
// given back to the system whole when the array moves out of it. Smaller ones come from the heap
// as usual (most hists and tables stay small). A mapping of 4 MiB or more asks for transparent
// huge pages: each doubling faults the new buffer's pages in, and in 4 KiB pages that took 6,000
// more faults (and 0.2 s of system time) than the heap on a system-wide `report`; with huge pages
// it takes fewer faults than the heap did, for about 2 MB more at the peak.

#include <sys/mman.h>

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace tperf::util {

template <class T>
class MappedAllocator {
 public:
  using value_type = T;
  static constexpr size_t kMappedFrom = size_t{1} << 20;
  static constexpr size_t kHugeFrom = size_t{4} << 20;  // mappings from here on ask for huge pages

  MappedAllocator() = default;
  template <class U>
  MappedAllocator(const MappedAllocator<U>&) noexcept {}  // NOLINT: converting, as allocators are

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kMappedFrom) return std::allocator<T>().allocate(n);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (bytes >= kHugeFrom) madvise(p, bytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMappedFrom) {
      std::allocator<T>().deallocate(p, n);
    } else {
      munmap(p, bytes);
    }
  }
  template <class U>
  bool operator==(const MappedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using MappedVector = std::vector<T, MappedAllocator<T>>;

// Doubles an open-addressing index of power-of-two size (a fresh one gets 1024 slots), placing
// each used slot again by linear probing from tag(slot) & mask. `used(slot)`: whether it holds
// something. The indexes of hist entries, call frames and kept chains keep in each slot the low
// half of its key's hash, which is all that a table of up to 2^32 slots places by.
template <class Slot, class Used, class Tag>
void grow_slots(MappedVector<Slot>& slots, Used used, Tag tag) {
  MappedVector<Slot> old = std::move(slots);
  slots.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  const size_t mask = slots.size() - 1;
  for (const Slot& s : old) {
    if (!used(s)) continue;
    size_t i = tag(s) & mask;
    while (used(slots[i])) i = (i + 1) & mask;
    slots[i] = s;
  }
}

}  // namespace tperf::util
