// A progress bar on standard error while a command works through a large input, like perf's
// "Processing events..." bar: drawn only when standard error is a terminal (silent in pipes and
// files) and the input is large, redrawn at most every 1% and 100 ms, erased when done.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tperf::util {

class ProgressBar {
 public:
  // Inputs below this many bytes finish too fast to need a bar.
  static constexpr uint64_t kMinTotal = uint64_t{16} << 20;

  // `fd`: where to draw (2). Draws nothing unless `fd` is a terminal and total >= kMinTotal.
  ProgressBar(std::string label, uint64_t total, int fd = 2);
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of `total` units are processed. Cheap when nothing is to be drawn.
  void update(uint64_t done) {
    if (done >= next_) draw(done);
  }
  // Erases the bar (once).
  void finish();
  bool active() const { return active_; }

 private:
  void draw(uint64_t done);

  std::string label_;
  uint64_t total_;
  int fd_;
  bool active_ = false;
  bool drawn_ = false;
  uint64_t next_ = UINT64_MAX;  // the next `done` worth a redraw
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tperf::util
