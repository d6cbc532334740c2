#include "host/fabric/emulator_process.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace mxtb::host::fabric {

std::string self_executable() {
  std::vector<char> buf(4096);
  ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's executable (/proc/self/exe)");
  return std::string(buf.data(), static_cast<size_t>(n));
}

namespace {

// The last lines of a file, each indented, for an error message ("" when it is empty or unreadable).
std::string tail_of(const std::string& path, size_t max_lines = 20) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

}  // namespace

EmulatorProcess::EmulatorProcess(const std::string& mxtb, const std::vector<std::string>& args, const std::string& log_path,
                                 std::chrono::seconds startup, const std::string& command, int listeners) {
  int out[2];
  if (pipe(out) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  if (!log_path.empty())
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s{mxtb, command};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, mxtb.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw std::runtime_error(fmt::format("cannot start {} {}: {}", mxtb, command, std::strerror(rc)));
  }
  // Read its stdout until the listening line.
  std::string text;
  bool ended = false;  // its stdout closed: it exited (or died) before listening
  auto deadline = std::chrono::steady_clock::now() + startup;
  const std::string key = "listening on ";
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long>(left, 1000))) <= 0) continue;
    char buf[512];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) {
      ended = true;
      break;
    }
    text.append(buf, static_cast<size_t>(n));
    targets_.clear();
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
      const size_t eol = text.find('\n', at);
      if (eol == std::string::npos) break;
      std::string t = text.substr(at + key.size(), eol - at - key.size());
      targets_.push_back(t.substr(0, t.find(' ')));  // a rack's line goes on: " server S"
    }
    if (static_cast<int>(targets_.size()) >= listeners) break;
  }
  log_path_ = log_path;
  if (static_cast<int>(targets_.size()) < listeners) {
    close(out[0]);
    // Say how it ended and pass on what it printed: a failed RTL assertion while the firmware
    // initialises the controller leaves Verilator's %Error lines on its stdout and the command
    // that reruns it in its log (stderr).
    int status = stop();
    std::string how = !ended ? fmt::format("did not print its {} within {} s",
                                           listeners == 1 ? std::string("listening line") : fmt::format("{} listening lines", listeners),
                                           startup.count())
                      : WIFEXITED(status)   ? fmt::format("exited with status {} before listening", WEXITSTATUS(status))
                      : WIFSIGNALED(status) ? fmt::format("died of signal {} before listening", WTERMSIG(status))
                                            : std::string("ended before listening");
    std::string printed = text.empty() ? "" : "\n" + text;
    if (!printed.empty() && printed.back() == '\n') printed.pop_back();
    throw std::runtime_error(fmt::format("{} {} {}{}{}", mxtb, command, how, printed,
                                         log_path.empty() ? "" : "\nits log: " + log_path + tail_of(log_path)));
  }
  stdout_fd_ = out[0];
  std::string rest = text.substr(text.find('\n', text.rfind(key)) + 1);
  drain_ = std::thread([fd = out[0], path = log_path, rest] {
    FILE* log = path.empty() ? nullptr : std::fopen(path.c_str(), "a");
    if (log && !rest.empty()) std::fwrite(rest.data(), 1, rest.size(), log);
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
      if (log) {
        std::fwrite(buf, 1, static_cast<size_t>(n), log);
        std::fflush(log);
      }
    }
    if (log) std::fclose(log);
  });
}

void EmulatorProcess::finish_drain() {
  // Its stdout ends with it: the drain sees end of file once the child (and anything it shared
  // the pipe with) is gone.
  if (drain_.joinable()) drain_.join();
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
}

std::optional<std::string> EmulatorProcess::ended() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  pid_ = -1;
  finish_drain();
  std::string how = WIFEXITED(status)     ? fmt::format("exited with status {}", WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? fmt::format("died of signal {}", WTERMSIG(status))
                                          : std::string("ended");
  return log_path_.empty() ? how : fmt::format("{}; its log: {}{}", how, log_path_, tail_of(log_path_));
}

bool EmulatorProcess::running() const {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;  // nothing to report: still there
}

int EmulatorProcess::stop() {
  if (pid_ <= 0) {
    finish_drain();
    return -1;
  }
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 100; ++i) {  // 10 s, then SIGKILL
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      finish_drain();
      return status;
    }
    usleep(100000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  finish_drain();
  return status;
}

EmulatorProcess::~EmulatorProcess() { stop(); }

}  // namespace mxtb::host::fabric
