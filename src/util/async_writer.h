// Writes buffers to a FILE on a second thread, one buffer behind the producer: formatting the
// next megabytes overlaps the write(2) of the previous ones, which for `tperf script` into a
// file costs about as much CPU as the formatting itself.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace tperf::util {

class AsyncWriter {
 public:
  explicit AsyncWriter(FILE* file);
  ~AsyncWriter();  // writes what was submitted, then stops the thread
  AsyncWriter(const AsyncWriter&) = delete;
  AsyncWriter& operator=(const AsyncWriter&) = delete;

  // Hands `buf` to the writer thread (waiting while the previous buffer is still being written)
  // and gives back an empty buffer with capacity to fill next. Buffers are written in the order
  // they are submitted.
  void submit(std::string& buf);
  // Waits until everything submitted is written, then fflush()es the file.
  void drain();

 private:
  void run();

  FILE* file_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool has_pending_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tperf::util
