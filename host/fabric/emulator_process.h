// An emulator (`mxtb sim`, or a served rack: `mxtb rack --serve`) started as a child process on
// loopback, for the demo, the benchmark, `mxtb rack-failover` and the tests: waits for its
// "listening on udp://ADDR:PORT" lines (a rack prints one a server, in server order) and stops it
// on destruction.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <sys/types.h>
#include <vector>

namespace mxtb::host::fabric {

class EmulatorProcess {
 public:
  // mxtb: the mxtb executable; args: after `command` (e.g. {"--time-mode", "lockstep"}). stderr
  // of the child goes to `log_path` (empty: inherited). Throws std::runtime_error with the
  // child's exit status when it does not come up within `startup`. `listeners`: how many listening
  // lines to wait for (a served rack's servers).
  EmulatorProcess(const std::string& mxtb, const std::vector<std::string>& args, const std::string& log_path = "",
                  std::chrono::seconds startup = std::chrono::seconds(120), const std::string& command = "sim",
                  int listeners = 1);
  ~EmulatorProcess();
  EmulatorProcess(const EmulatorProcess&) = delete;
  EmulatorProcess& operator=(const EmulatorProcess&) = delete;

  const std::string& target() const { return targets_.front(); }  // "udp://127.0.0.1:PORT"
  const std::vector<std::string>& targets() const { return targets_; }  // one a listening line
  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits; returns the exit status (as from waitpid), or -1.
  int stop();
  // When the child has ended on its own (an RTL assertion, a crash, a kill): how ("exited with
  // status 1", "died of signal 9") and the last lines of its log, which holds what it printed.
  // nullopt while it runs, and after stop().
  std::optional<std::string> ended();
  // Whether the child process still exists (a stopped or unscheduled one too); does not reap it,
  // so ended() still tells how it ended.
  bool running() const;

 private:
  void finish_drain();
  pid_t pid_ = -1;
  std::vector<std::string> targets_;
  std::string log_path_;
  // After the listening line the child's stdout (where Verilator prints a failed assertion) is
  // appended to its log, so that nothing it prints later is lost.
  std::thread drain_;
  int stdout_fd_ = -1;
};

// This program's own executable (for starting `mxtb sim` from inside mxtb).
std::string self_executable();

}  // namespace mxtb::host::fabric
