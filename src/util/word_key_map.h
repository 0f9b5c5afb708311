#pragma once

// Interns keys that are runs of 64-bit words (a raw stack: the address-space versions it was
// looked up in, its ips, its unwound frames) as dense ids 0, 1, 2, ... The keys live in one
// arena, the index is open addressing with linear probing: one allocation per growth, none per
// key, and a probe compares a stored hash before it compares words. report's batching and the
// stack table's raw-stack cache both key by it.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

// xxHash's XXH3, inlined: a key's words hash in parallel lanes, where a word-at-a-time
// multiply chain waits on each multiply (it was half of report's per-sample time on fp files).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tperf::util {

class WordKeyMap {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  static uint64_t hash(std::span<const uint64_t> key) { return XXH3_64bits(key.data(), key.size_bytes()); }
  // The hash of the key `head` followed by `tail`, where the caller holds them apart (a sample's
  // fixed words and its raw callchain, which is then not copied to be looked up). It is not the
  // whole key's hash: a caller splits a key always at the same place.
  static uint64_t hash(std::span<const uint64_t> head, std::span<const uint64_t> tail) {
    return XXH3_64bits_withSeed(tail.data(), tail.size_bytes(), XXH3_64bits(head.data(), head.size_bytes()));
  }

  // The key's id, or kAbsent. `h` is hash(key).
  uint32_t find(std::span<const uint64_t> key, uint64_t h) const {
    if (slots_.empty()) return kAbsent;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const uint32_t s = slots_[i];
      if (s == 0) return kAbsent;
      const Entry& e = entries_[s - 1];
      if (e.hash == h && e.length == key.size() &&
          (key.empty() || std::memcmp(words_.data() + e.offset, key.data(), key.size() * sizeof(uint64_t)) == 0)) {
        return s - 1;
      }
    }
  }
  uint32_t find(std::span<const uint64_t> key) const { return find(key, hash(key)); }
  // The id of the key `head` followed by `tail`, or kAbsent. `h` is hash(head, tail).
  uint32_t find(std::span<const uint64_t> head, std::span<const uint64_t> tail, uint64_t h) const {
    if (slots_.empty()) return kAbsent;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const uint32_t s = slots_[i];
      if (s == 0) return kAbsent;
      const Entry& e = entries_[s - 1];
      if (e.hash == h && e.length == head.size() + tail.size()) {
        const uint64_t* w = words_.data() + e.offset;
        if ((head.empty() || std::memcmp(w, head.data(), head.size_bytes()) == 0) &&
            (tail.empty() || std::memcmp(w + head.size(), tail.data(), tail.size_bytes()) == 0)) {
          return s - 1;
        }
      }
    }
  }

  // Adds a key that find() did not find; returns its id (the number of keys before it).
  uint32_t insert(std::span<const uint64_t> key, uint64_t h) {
    if ((entries_.size() + 1) * 2 > slots_.size()) grow();
    const auto id = static_cast<uint32_t>(entries_.size());
    entries_.push_back({h, words_.size(), key.size()});
    words_.insert(words_.end(), key.begin(), key.end());
    place(id, h);
    return id;
  }
  uint32_t insert(std::span<const uint64_t> key) { return insert(key, hash(key)); }
  // Adds the key `head` followed by `tail` (see find()); `h` is hash(head, tail).
  uint32_t insert(std::span<const uint64_t> head, std::span<const uint64_t> tail, uint64_t h) {
    if ((entries_.size() + 1) * 2 > slots_.size()) grow();
    const auto id = static_cast<uint32_t>(entries_.size());
    entries_.push_back({h, words_.size(), head.size() + tail.size()});
    words_.insert(words_.end(), head.begin(), head.end());
    words_.insert(words_.end(), tail.begin(), tail.end());
    place(id, h);
    return id;
  }

  std::span<const uint64_t> key(uint32_t id) const {
    const Entry& e = entries_[id];
    return {words_.data() + e.offset, e.length};
  }
  size_t size() const { return entries_.size(); }
  // The words the keys hold, for bounding a cache.
  size_t words() const { return words_.size(); }
  // Forgets every key; the memory stays for the next ones.
  void clear() {
    entries_.clear();
    words_.clear();
    std::fill(slots_.begin(), slots_.end(), 0);
  }

 private:
  struct Entry {
    uint64_t hash;
    size_t offset, length;
  };
  void place(uint32_t id, uint64_t h) {
    size_t i = h & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = id + 1;
  }
  void grow() {
    const size_t n = slots_.empty() ? 64 : slots_.size() * 2;
    slots_.assign(n, 0);
    mask_ = n - 1;
    for (uint32_t id = 0; id < entries_.size(); ++id) place(id, entries_[id].hash);
  }

  std::vector<Entry> entries_;
  std::vector<uint64_t> words_;
  std::vector<uint32_t> slots_;  // id + 1, 0 = empty
  size_t mask_ = 0;
};

}  // namespace tperf::util
