#include "record/workload.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tperf::record {

Workload::~Workload() {
  if (pid_ > 0 && !reaped_) {
    if (!started_) ::kill(pid_, SIGKILL);
    if (!started_) ::waitpid(pid_, &status_, 0);
  }
  if (go_fd_ >= 0) ::close(go_fd_);
  if (error_fd_ >= 0) ::close(error_fd_);
}

void Workload::prepare(const std::vector<std::string>& argv, const std::string& held_comm) {
  if (argv.empty()) throw std::invalid_argument("no command");
  argv0_ = argv[0];
  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(go[0]);
    ::close(go[1]);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {go[0], go[1], err[0], err[1]}) ::close(fd);
    throw std::runtime_error(fmt::format("fork: {}", std::strerror(e)));
  }
  if (pid == 0) {
    ::close(go[1]);
    ::close(err[0]);
    ::prctl(PR_SET_NAME, held_comm.c_str(), 0, 0, 0);
    // Die with tperf if it dies before releasing us.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGXFSZ, SIGHUP}) ::signal(sig, SIG_DFL);
    char c;
    ssize_t n;
    do {
      n = ::read(go[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);  // tperf gave up on us
    ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    ::execvp(args[0], args.data());
    int e = errno;
    ssize_t w = ::write(err[1], &e, sizeof e);
    (void)w;
    ::_exit(127);
  }
  ::close(go[0]);
  ::close(err[1]);
  pid_ = pid;
  go_fd_ = go[1];
  error_fd_ = err[0];
}

std::string Workload::start() {
  if (pid_ <= 0 || started_) return "";
  started_ = true;
  char c = 0;
  ssize_t w;
  do {
    w = ::write(go_fd_, &c, 1);
  } while (w < 0 && errno == EINTR);
  ::close(go_fd_);
  go_fd_ = -1;
  int e = 0;
  ssize_t n;
  do {
    n = ::read(error_fd_, &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  ::close(error_fd_);
  error_fd_ = -1;
  if (n == static_cast<ssize_t>(sizeof e)) return fmt::format("{}: {}", argv0_, std::strerror(e));
  return "";
}

bool Workload::poll_exit() {
  if (pid_ <= 0) return true;
  if (reaped_) return true;
  pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return reaped_;
}

void Workload::wait() {
  if (pid_ <= 0 || reaped_) return;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status_, 0);
  } while (r < 0 && errno == EINTR);
  reaped_ = true;
}

void Workload::kill(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

bool Workload::signaled() const { return reaped_ && WIFSIGNALED(status_); }
int Workload::term_signal() const { return signaled() ? WTERMSIG(status_) : 0; }

int Workload::exit_code() const {
  if (!reaped_) return 0;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return 1;
}

}  // namespace tperf::record
