// The simulation thread's hold on the SystemC kernel, and the time modes (lockstep, paced, free):
// how the kernel runs while a piece of work runs inside the simulation (run_in_sim) and between
// requests (free_run_slice), the pace held to wall time, the real-time factor reached, and what the
// thread is doing for the stall watchdog, which reads it from another thread.
//
// The work runs in HostPort, a SystemC thread process (so that it may take simulated time); the
// kernel pauses when it ends. After every run of the kernel the owner's after_each_run() hook runs
// (the emulator's block collects its events).
#pragma once

#include "sim/server/server_sc.h"

#include <mxtb/emu_regs.h>

#include <systemc>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <sys/types.h>
#include <string>
#include <vector>

namespace mxtb::sim {

// Simulated time now, in ns.
inline double sim_now_ns() { return sc_core::sc_time_stamp().to_seconds() * 1e9; }

// The SystemC side of the bridge: runs the jobs the serving thread hands it, one at a time, as a
// thread process (so a job may take simulated time), then pauses the kernel.
class HostPort : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(HostPort);
  explicit HostPort(sc_core::sc_module_name name);
  // Lockstep: the server's clock is held between jobs (ServerClock::hold), so that it stands at
  // the time the kernel paused, not up to a batch ahead of it. A rack holds every board's clock.
  void hold_between_jobs(ServerClock* clock) { clocks_.push_back(clock); }
  // The kernel does not pause when a job ends: its owner pauses it (a rack in lockstep, at the
  // next window's end, so that time stands at the same cycle however the rack is partitioned).
  void owner_pauses() { owner_pauses_ = true; }
  void submit(std::function<void()> work);
  bool done() const { return done_; }

 private:
  void run();
  sc_core::sc_event start_;
  std::vector<ServerClock*> clocks_;
  bool owner_pauses_ = false;
  std::function<void()> work_;
  bool done_ = true, pending_ = false;
};

// When a serve loop stops (`mxtb sim`'s, a served rack's): SIGINT or SIGTERM, the death of the
// process that started this one, or `stop_after_wall_s` of wall time from construction (0: never).
// Construction installs the signal handlers (and ignores SIGPIPE); over() looks at the parent and
// the wall time every 200 ms.
class ServeUntil {
 public:
  explicit ServeUntil(double stop_after_wall_s);
  bool over();

 private:
  const pid_t parent_;
  const double stop_after_wall_s_;
  const std::chrono::steady_clock::time_point wall0_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_check_ = wall0_;
  bool over_ = false;
};

class SimThread {
 public:
  // Makes the module "host_port". Construct it where the kernel's processes are made, in order.
  SimThread(emu::TimeMode mode, double rtf);
  // Lockstep: the server's clock stands still between jobs (HostPort::hold_between_jobs); once
  // for each of a rack's boards.
  void hold_between_jobs(ServerClock* clock) { port_.hold_between_jobs(clock); }
  void owner_pauses() { port_.owner_pauses(); }
  void after_each_run(std::function<void()> hook) { after_run_ = std::move(hook); }

  // Runs `work` inside the simulation (a SystemC thread) and returns when it finished: lockstep
  // runs the kernel until it pauses, paced and free a simulated microsecond at a time (paced held
  // to wall time). Rethrows what a guarded process threw (a failed RTL assertion).
  void run_in_sim(std::function<void()> work);
  // Paced and free modes: the simulation runs on its own between requests, a microsecond at a time.
  void free_run_slice();
  // The kernel runs until a process pauses it or nothing is left to run (a rack in lockstep
  // following another process's windows).
  void run_until_paused();
  // Whether a piece of work handed to run_in_sim() is still running.
  bool work_running() const { return !port_.done(); }
  // A rack whose processes agreed to stop can no longer finish a piece of work that waits on its
  // boards: run_in_sim() then throws Abandoned instead of waiting for ever.
  struct Abandoned : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  void abandon_when(std::function<bool()> stopped) { abandon_when_ = std::move(stopped); }

  // Where wall time and simulated time start from, for the pace and the real-time factor (the
  // serve loop's start; construction until then). Returns the wall time it starts from.
  std::chrono::steady_clock::time_point start_clock();
  // When wall time reaches the pace for the simulated time now (paced mode).
  std::chrono::steady_clock::time_point pace_target() const;
  double achieved_rtf() const;

  // What the thread is doing: a string literal (the stall watchdog reads it from another thread).
  void set_activity(const char* what) { activity_ = what; }
  // For the stall watchdog (another thread): the activity, and how far simulated time had got when
  // the kernel last returned, and when. In lockstep a request runs in one kernel call, so there
  // the figure is the start of a request still running.
  std::string describe_activity() const;

 private:
  void note_progress();
  const emu::TimeMode mode_;
  const double rtf_;
  HostPort port_;
  std::function<void()> after_run_;
  std::function<bool()> abandon_when_;
  std::chrono::steady_clock::time_point wall0_ = std::chrono::steady_clock::now();
  double sim0_ns_ = 0;
  std::atomic<const char*> activity_{"starting"};
  std::atomic<uint64_t> sim_ns_seen_{0};
  std::atomic<int64_t> progress_wall_ns_{0};
};

}  // namespace mxtb::sim
