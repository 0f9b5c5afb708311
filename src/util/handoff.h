// Memory one thread fills and another reads next: the batches of records the reading thread hands
// to the applying one (analysis/sample_path.cc), the batches of samples script hands to its
// formatting threads (output/script_format.cc). Such buffers are reused, so their lines were last
// read by the other core, and an ordinary store must first take each line back from it. Where the
// host runs the two vCPUs apart, that doubled the reading thread's time on the 1 GB fp recipe
// (bench/README.md, "Batches written past the cache"). These stores go past the cache instead
// (non-temporal, x86-64); handoff_publish() must follow before the other thread may read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tperf::util {

// Copies `n` bytes to `to` with non-temporal stores where `to` and the length are multiples of 8
// (x86-64); with memcpy otherwise.
inline void handoff_copy(void* to, const void* from, size_t n) {
#if defined(__x86_64__)
  const auto t = reinterpret_cast<uintptr_t>(to);
  if (((t | n) & 7) == 0) {
    auto* d = static_cast<uint8_t*>(to);
    const auto* s = static_cast<const uint8_t*>(from);
    auto store8 = [&](size_t k) {
      long long w;
      std::memcpy(&w, s + k, 8);
      _mm_stream_si64(reinterpret_cast<long long*>(d + k), w);
    };
    size_t k = 0;
    if ((t & 8) && n) {  // to the next 16-byte boundary
      store8(0);
      k = 8;
    }
    // 16 bytes a store where it is aligned: half the stores. (The copy is bound by memory more
    // than by stores: the batch's `add` went from 760-838 to 717-791 profile samples of the
    // reading thread's 3,300-3,800 on the fp recipe.)
    for (; k + 16 <= n; k += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)));
    }
    if (k < n) store8(k);
    return;
  }
#endif
  std::memcpy(to, from, n);
}

// Orders the non-temporal stores before what follows (the hand-over's lock, which orders ordinary
// stores only).
inline void handoff_publish() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// A growing array of trivially copyable T, appended to with handoff_copy(); reused by clear(),
// which keeps the storage. Elements are not initialized beyond what is appended.
template <class T>
class HandoffArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // Appends `count` elements; returns the index of the first.
  size_t append(const T* items, size_t count) {
    if (capacity_ - size_ < count) reserve(std::max(2 * capacity_, size_ + count));
    handoff_copy(data() + size_, items, count * sizeof(T));
    const size_t at = size_;
    size_ += count;
    return at;
  }
  size_t push_back(const T& item) { return append(&item, 1); }
  void reserve(size_t n) {
    if (n <= capacity_) return;
    auto grown = std::make_unique_for_overwrite<std::byte[]>(n * sizeof(T));
    if (size_) std::memcpy(grown.get(), storage_.get(), size_ * sizeof(T));
    storage_ = std::move(grown);
    capacity_ = n;
  }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return reinterpret_cast<T*>(storage_.get()); }
  const T* data() const { return reinterpret_cast<const T*>(storage_.get()); }
  const T& operator[](size_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  std::unique_ptr<std::byte[]> storage_;  // from new[]: aligned for any T, and to 8
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace tperf::util
