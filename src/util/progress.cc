#include "util/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace tperf::util {

namespace {
constexpr int kWidth = 40;
}

ProgressBar::ProgressBar(std::string label, uint64_t total, int fd) : label_(std::move(label)), total_(total), fd_(fd) {
  active_ = total_ >= kMinTotal && ::isatty(fd_) == 1;
  if (active_) next_ = 0;
}

void ProgressBar::draw(uint64_t done) {
  const uint64_t step = std::max<uint64_t>(1, total_ / 100);
  next_ = std::min(done, total_) + step;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done < total_) return;
  last_ = now;
  drawn_ = true;
  const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
  const int filled = static_cast<int>(frac * kWidth);
  std::string line = fmt::format("\r{} [{}{}] {:3.0f}% ", label_, std::string(static_cast<size_t>(filled), '#'),
                                 std::string(static_cast<size_t>(kWidth - filled), ' '), frac * 100.0);
  ssize_t w = ::write(fd_, line.data(), line.size());
  (void)w;
}

void ProgressBar::finish() {
  if (!active_) return;
  active_ = false;
  next_ = UINT64_MAX;
  if (!drawn_) return;
  // Blank the line and return to its start, so what follows prints where the bar was.
  std::string clear = "\r" + std::string(label_.size() + kWidth + 10, ' ') + "\r";
  ssize_t w = ::write(fd_, clear.data(), clear.size());
  (void)w;
}

}  // namespace tperf::util
