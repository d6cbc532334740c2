// SimThread and HostPort (sim_thread.h): the kernel run for a piece of work or a slice as the time
// mode says, the pace, the real-time factor, the activity the stall watchdog reads.
#include "sim/emulator/sim_thread.h"

#include "sim/common/sc_runner.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <thread>

#include <unistd.h>

namespace mxtb::sim {

using sc_core::sc_time;
using sc_core::SC_NS;

namespace {
std::atomic<bool> g_stop_signal{false};
extern "C" void on_stop_signal(int) { g_stop_signal = true; }
}  // namespace

ServeUntil::ServeUntil(double stop_after_wall_s) : parent_(getppid()), stop_after_wall_s_(stop_after_wall_s) {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);
}

bool ServeUntil::over() {
  if (over_ || g_stop_signal) return over_ = true;
  const auto wall = std::chrono::steady_clock::now();
  if (wall - last_check_ > std::chrono::milliseconds(200)) {
    last_check_ = wall;
    if (getppid() != parent_) over_ = true;  // whoever started us is gone
    if (stop_after_wall_s_ > 0 && std::chrono::duration<double>(wall - wall0_).count() > stop_after_wall_s_) over_ = true;
  }
  return over_;
}

HostPort::HostPort(sc_core::sc_module_name name) : sc_module(name) { SC_THREAD(run); }

void HostPort::submit(std::function<void()> work) {
  for (ServerClock* c : clocks_) c->release();
  work_ = std::move(work);
  done_ = false;
  pending_ = true;
  start_.notify(sc_core::SC_ZERO_TIME);  // lost when made before the kernel started: pending_ says it
}

void HostPort::run() {
  for (;;) {
    while (!pending_) sc_core::wait(start_);
    pending_ = false;
    work_();
    done_ = true;
    if (owner_pauses_) continue;
    for (ServerClock* c : clocks_) c->hold();
    sc_core::sc_pause();
  }
}

SimThread::SimThread(emu::TimeMode mode, double rtf) : mode_(mode), rtf_(rtf), port_("host_port") {}

void SimThread::run_in_sim(std::function<void()> work) {
  port_.submit(std::move(work));
  while (!port_.done()) {
    if (mode_ == emu::TimeMode::Lockstep) sc_core::sc_start();
    else {
      sc_core::sc_start(sc_time(1000, SC_NS));
      if (mode_ == emu::TimeMode::Paced) std::this_thread::sleep_until(pace_target());
    }
    note_progress();
    rethrow_process_error();  // a failed RTL assertion in the clock thread
    if (!port_.done() && abandon_when_ && abandon_when_()) {
      if (after_run_) after_run_();
      throw Abandoned("the rack's processes stopped before this request could finish");
    }
  }
  if (after_run_) after_run_();
}

void SimThread::run_until_paused() {
  sc_core::sc_start();
  note_progress();
  rethrow_process_error();
  if (after_run_) after_run_();
}

void SimThread::free_run_slice() {
  sc_core::sc_start(sc_time(1000, SC_NS));
  note_progress();
  rethrow_process_error();
  if (after_run_) after_run_();
}

std::chrono::steady_clock::time_point SimThread::start_clock() {
  wall0_ = std::chrono::steady_clock::now();
  sim0_ns_ = sim_now_ns();
  return wall0_;
}

std::chrono::steady_clock::time_point SimThread::pace_target() const {
  double wall_s = (sim_now_ns() - sim0_ns_) * 1e-9 / rtf_;
  return wall0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wall_s));
}

double SimThread::achieved_rtf() const {
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  return wall > 0 ? (sim_now_ns() - sim0_ns_) * 1e-9 / wall : 0;
}

void SimThread::note_progress() {
  sim_ns_seen_ = static_cast<uint64_t>(std::llround(sim_now_ns()));
  progress_wall_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string SimThread::describe_activity() const {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  const int64_t at = progress_wall_ns_.load();
  return fmt::format("{}; simulated time {:.3f} us when the kernel last returned, {}", activity_.load(), sim_ns_seen_.load() / 1000.0,
                     at ? fmt::format("{:.2f} s ago", (now - at) * 1e-9) : std::string("never"));
}

}  // namespace mxtb::sim
