#include "util/async_writer.h"

namespace tperf::util {

AsyncWriter::AsyncWriter(FILE* file) : file_(file), thread_([this] { run(); }) {}

AsyncWriter::~AsyncWriter() {
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AsyncWriter::submit(std::string& buf) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !has_pending_; });
  pending_.swap(buf);
  buf.clear();
  has_pending_ = true;
  lock.unlock();
  cv_.notify_all();
}

void AsyncWriter::drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !has_pending_; });
  std::fflush(file_);
}

void AsyncWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return has_pending_ || stopping_; });
    if (has_pending_) {
      // pending_ is only touched by submit() while has_pending_ is false: write it unlocked.
      lock.unlock();
      std::fwrite(pending_.data(), 1, pending_.size(), file_);
      lock.lock();
      pending_.clear();
      has_pending_ = false;
      cv_.notify_all();
      continue;
    }
    if (stopping_) return;
  }
}

}  // namespace tperf::util
