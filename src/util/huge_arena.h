#pragma once

// A memory resource for many small blocks that live until the end, such as the chunks a
// std::pmr pool asks its upstream for: bump-allocated from mappings of their own, which from
// kHugeFrom bytes on ask for transparent huge pages (where the kernel gives them: THP "always" or
// "madvise"), all given back when the arena goes. Blocks given back earlier are not reused.
//
// Why: a report's call trees are millions of 48-byte nodes. From the heap every 4 KiB page of
// them was a page fault of its own, and in a VM a fault costs several microseconds besides the
// page's zeroing: on a system-wide `report` the thread that builds the trees (the slowest stage)
// took 27,000 of them. With 2 MiB pages that is a few dozen.

#include <cstddef>
#include <memory_resource>
#include <vector>

namespace tperf::util {

class HugeArena : public std::pmr::memory_resource {
 public:
  HugeArena() = default;
  HugeArena(const HugeArena&) = delete;
  HugeArena& operator=(const HugeArena&) = delete;
  ~HugeArena() override;

  // Bytes mapped so far (touched or not).
  size_t mapped() const { return mapped_; }

  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kHugeFrom = size_t{8} << 20;  // regions this large ask for huge pages
  static constexpr size_t kMaxRegion = size_t{64} << 20;

 private:
  void* do_allocate(size_t bytes, size_t align) override;
  void do_deallocate(void*, size_t, size_t) override {}
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
  // A new region of at least `bytes`; regions double from one huge page's size up to kMaxRegion.
  void map_region(size_t bytes);

  struct Region {
    void* base;
    size_t size;
  };
  std::vector<Region> regions_;
  char* next_ = nullptr;
  char* end_ = nullptr;
  size_t region_size_ = kHugePage;
  size_t mapped_ = 0;
};

}  // namespace tperf::util
