// An emulator (`mxtb sim`) started as a child process on loopback, for the demo, the benchmark
// and the tests: waits for its "listening on udp://ADDR:PORT" line and stops it on destruction.
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace mxtb::host::fabric {

class EmulatorProcess {
 public:
  // mxtb: the mxtb executable; args: after "sim" (e.g. {"--time-mode", "lockstep"}). stderr of
  // the child goes to `log_path` (empty: inherited). Throws std::runtime_error with the child's
  // exit status when it does not come up within `startup`.
  EmulatorProcess(const std::string& mxtb, const std::vector<std::string>& args, const std::string& log_path = "",
                  std::chrono::seconds startup = std::chrono::seconds(120));
  ~EmulatorProcess();
  EmulatorProcess(const EmulatorProcess&) = delete;
  EmulatorProcess& operator=(const EmulatorProcess&) = delete;

  const std::string& target() const { return target_; }  // "udp://127.0.0.1:PORT"
  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits; returns the exit status (as from waitpid), or -1.
  int stop();

 private:
  pid_t pid_ = -1;
  std::string target_;
};

// This program's own executable (for starting `mxtb sim` from inside mxtb).
std::string self_executable();

}  // namespace mxtb::host::fabric
