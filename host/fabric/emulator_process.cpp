#include "host/fabric/emulator_process.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
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

EmulatorProcess::EmulatorProcess(const std::string& mxtb, const std::vector<std::string>& args, const std::string& log_path,
                                 std::chrono::seconds startup) {
  int out[2];
  if (pipe(out) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  if (!log_path.empty())
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s{mxtb, "sim"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, mxtb.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw std::runtime_error(fmt::format("cannot start {} sim: {}", mxtb, std::strerror(rc)));
  }
  // Read its stdout until the listening line.
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + startup;
  const std::string key = "listening on ";
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long>(left, 1000))) <= 0) continue;
    char buf[512];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    auto at = text.find(key);
    auto eol = at == std::string::npos ? std::string::npos : text.find('\n', at);
    if (eol != std::string::npos) {
      target_ = text.substr(at + key.size(), eol - at - key.size());
      break;
    }
  }
  close(out[0]);  // the child keeps writing nothing else to stdout
  if (target_.empty()) {
    int status = stop();
    throw std::runtime_error(fmt::format("{} sim did not print its listening line within {} s (exit status {}){}", mxtb,
                                         startup.count(), status, log_path.empty() ? "" : "; its log: " + log_path));
  }
}

int EmulatorProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 100; ++i) {  // 10 s, then SIGKILL
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return status;
    }
    usleep(100000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

EmulatorProcess::~EmulatorProcess() { stop(); }

}  // namespace mxtb::host::fabric
