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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
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

// An array of trivially copyable elements that only grows at its end (a report's hist entries,
// call frames, kept chains), in the heap while small and from MappedAllocator::kMappedFrom bytes
// on in a mapping of its own that mremap() doubles. A std::vector doubles into a new buffer and
// copies: each doubling faults in and zeroes as many fresh pages as the array holds, and copies
// them. Moved by mremap, the pages it holds stay where they are (the page tables move), and only
// the new half is faulted in, as it fills. (Zeroing the doubled buffers of the hist's entries and
// the frame table was 6% of the CPU time of a system-wide `report`.)
template <class T>
class GrowArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  static_assert(sizeof(T) <= 4096);  // a mapping's length in elements rounds up to its pages

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  GrowArray() = default;
  GrowArray(const GrowArray& o) { append(o.begin(), o.end()); }
  GrowArray(GrowArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        cap_(std::exchange(o.cap_, 0)),
        mapped_(std::exchange(o.mapped_, false)) {}
  GrowArray& operator=(const GrowArray& o) {
    if (this != &o) {
      clear();
      append(o.begin(), o.end());
    }
    return *this;
  }
  GrowArray& operator=(GrowArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      cap_ = std::exchange(o.cap_, 0);
      mapped_ = std::exchange(o.mapped_, false);
    }
    return *this;
  }
  ~GrowArray() { release(); }

  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& front() { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == cap_) {
      const T copy = v;  // `v` may be an element, which growing moves
      grow_to(size_ + 1);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = v;
  }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > cap_) grow_to(n);
  }
  void resize(size_t n) { resize(n, T{}); }
  void resize(size_t n, const T& v) {
    if (n > size_) {
      const T copy = v;
      reserve(n);
      std::fill(data_ + size_, data_ + n, copy);
    }
    size_ = n;
  }
  void assign(size_t n, const T& v) {
    const T copy = v;
    clear();
    resize(n, copy);
  }
  // Appends [first, last), which must not point into this array.
  template <class It>
  void append(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    reserve(size_ + n);
    std::copy(first, last, data_ + size_);
    size_ += n;
  }
  // std::vector's insert, at the end only.
  template <class It>
  void insert(const T* pos, It first, It last) {
    if (pos != end()) throw std::logic_error("GrowArray inserts at its end only");
    append(first, last);
  }

 private:
  static constexpr size_t kMappedFrom = MappedAllocator<T>::kMappedFrom;
  static constexpr size_t kHugeFrom = MappedAllocator<T>::kHugeFrom;

  void grow_to(size_t want) {
    size_t n = std::max<size_t>({want, 2 * cap_, 16});
    if (n > SIZE_MAX / 2 / sizeof(T)) throw std::bad_array_new_length();
    size_t bytes = n * sizeof(T);
    void* p = nullptr;
    if (bytes < kMappedFrom) {
      p = std::realloc(data_, bytes);
      if (!p) throw std::bad_alloc();
    } else {
      // A mapping's whole pages are the array's.
      bytes = (bytes + 4095) & ~size_t{4095};
      n = bytes / sizeof(T);
      if (mapped_) {
        p = ::mremap(data_, cap_ * sizeof(T), bytes, MREMAP_MAYMOVE);
        if (p == MAP_FAILED) throw std::bad_alloc();
      } else {
        p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        if (size_) std::memcpy(p, data_, size_ * sizeof(T));
        std::free(data_);
        mapped_ = true;
      }
      if (bytes >= kHugeFrom) ::madvise(p, bytes, MADV_HUGEPAGE);
    }
    data_ = static_cast<T*>(p);
    cap_ = n;
  }
  void release() {
    if (!data_) return;
    if (mapped_) {
      ::munmap(data_, cap_ * sizeof(T));
    } else {
      std::free(data_);
    }
    data_ = nullptr;
    size_ = cap_ = 0;
    mapped_ = false;
  }

  T* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
  bool mapped_ = false;  // data_ is a mapping of its own (else from the heap)
};

// Whether an open-addressing index of `slots` slots must grow before it holds `used` keys: past
// three quarters full. At half full, as these indexes grew before, a system-wide report's frame
// table doubled to 512 K slots for 146 K frames, and the fresh pages of each doubling, zeroed by
// the kernel as they were first touched, took 2.3% of all its CPU time. Slots are 8 bytes, eight
// to a cache line, so the longer runs of linear probing at three quarters mostly stay in the line
// the first probe loaded.
inline bool slots_full(size_t used, size_t slots) { return 4 * used > 3 * slots; }

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
