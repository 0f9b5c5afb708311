// The command `tperf record -- cmd args` runs: forked early and held before exec, so its events
// can be opened on its pid (with enable_on_exec) before it runs a single instruction of the
// command; then released, watched, stopped, and its exit status turned into tperf's.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tperf::record {

class Workload {
 public:
  Workload() = default;
  ~Workload();  // kills a child that was never started
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // Forks the child, which names itself `held_comm`, waits for start(), then execvp()s argv.
  // Throws std::runtime_error if the fork fails.
  void prepare(const std::vector<std::string>& argv, const std::string& held_comm = "tperf-exec");
  // Lets the child exec. Returns "" or why exec failed ("cmd: No such file or directory"), once
  // the exec either happened or failed.
  std::string start();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !reaped_; }
  // Non-blocking wait; true once the child was reaped.
  bool poll_exit();
  // Blocking wait.
  void wait();
  // Sends `sig` to the child if it still runs.
  void kill(int sig);
  // Exit status as a shell would report it: the exit code, or 128 + signal.
  int exit_code() const;
  bool signaled() const;
  int term_signal() const;

 private:
  pid_t pid_ = -1;
  int go_fd_ = -1;     // write end: one byte releases the child
  int error_fd_ = -1;  // read end: errno of a failed exec, EOF on success (CLOEXEC)
  bool started_ = false;
  bool reaped_ = false;
  int status_ = 0;
  std::string argv0_;
};

}  // namespace tperf::record
