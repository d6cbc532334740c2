// `mxtb sim` (emulator.h): the serve loop, and the wiring of the emulator's parts. The Emulator
// owns the server (ServerSim, its SystemC clock, the firmware on its HAL, the tenant's job) and
// the parts that serve it as a board on the network, each in its own unit:
//   sim_thread.h    the simulation thread's hold on the kernel and the time modes;
//   emu_block.h     the emulator control block (protocol/emu_regs.json), its event queue
//                   (event_queue.h) and which of its accesses are answered within the clock
//                   (emu_answer.h);
//   ipbus_target.h  who answers IPbus: the RTL target (rtl_target.cpp) or the C++ one (cpp_target.cpp);
//   ipbus_server.h  the socket;
//   emu_log.h       the log.
// The loop here takes one request at a time from the socket for the target, and, in paced and free
// modes, runs the simulation between requests; it stops on SIGINT, SIGTERM, the parent's death or
// --stop-after-s.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/emulator/emulator.h"

#include "firmware/ocs_firmware.h"
#include "sim/emulator/emu_block.h"
#include "sim/emulator/emu_log.h"
#include "sim/emulator/ipbus_server.h"
#include "sim/emulator/ipbus_target.h"
#include "sim/emulator/sim_thread.h"
#include "sim/common/sc_runner.h"
#include "sim/server/server_sc.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <memory>

namespace mxtb::sim {

namespace {


ServerConfig with_tracing(const EmulatorConfig& cfg) {
  ServerConfig s = cfg.server;
  s.trace_capable = !cfg.fst_path.empty();  // traced models run slower: only when asked for
  return s;
}

class Emulator {
 public:
  explicit Emulator(const EmulatorConfig& cfg)
      : cfg_(cfg),
        sim_(with_tracing(cfg)),
        clock_("clock", sim_, 256),
        fw_hal_(sim_, clock_),
        fw_(fw_hal_, firmware_config()),
        thread_(cfg_.time_mode, cfg_.rtf),
        log_(cfg_.time_mode) {
    if (!cfg_.job.xpus.empty()) {
      job_ = std::make_unique<JobSet>(1, cfg_.job, cfg_.server.shape);
      sim_.set_lane_program(job_.get());
    }
    block_ = std::make_unique<EmuBlock>(cfg_, sim_, clock_, fw_, job_.get(), thread_, log_, [this] { return target_->stats(); });
    target_ = make_target();
    thread_.after_each_run([this] { block_->sync_events(); });
    sc_core::sc_spawn([this] { firmware_thread(); }, "firmware");
    if (cfg_.time_mode == emu::TimeMode::Lockstep) thread_.hold_between_jobs(&clock_);
  }

  int serve();

 private:
  firmware::FirmwareConfig firmware_config() const;
  std::unique_ptr<RequestTarget> make_target();
  void firmware_thread();
  void serve_until_stopped();
  void print_stop_line();

  EmulatorConfig cfg_;
  ServerSim sim_;
  std::unique_ptr<JobSet> job_;  // before the firmware and clock threads that step sim_
  ServerClock clock_;
  ScHal fw_hal_;
  firmware::OcsFirmware fw_;
  SimThread thread_;
  EmuLog log_;
  std::unique_ptr<EmuBlock> block_;         // made once the job is
  std::unique_ptr<RequestTarget> target_;  // answers the block's accesses
  bool fw_ready_ = false;
  sc_core::sc_event fw_ready_event_;
  std::string fw_init_error_;
};

std::unique_ptr<RequestTarget> Emulator::make_target() {
  const StallInjection inject{cfg_.inject_stall_ms, cfg_.inject_stall_every};
  if (cfg_.ipbus_target == IpbusTarget::Rtl) return make_rtl_target(sim_, clock_, *block_, thread_, log_, inject);
  return make_cpp_target(sim_, clock_, *block_, thread_, inject);
}

firmware::FirmwareConfig Emulator::firmware_config() const {
  MeshCalibration cal = load_calibration(cfg_.calibration_file);
  firmware::FirmwareConfig fc;
  fc.shape = cfg_.server.shape;
  fc.calibration = cal.elements;
  double tau = cfg_.server.mesh.tau_ns ? *cfg_.server.mesh.tau_ns : preset_tau_ns(cfg_.server.mesh.settle);
  double period = 1000.0 / cfg_.server.clock_mhz;
  fc.settle_cycles = static_cast<uint32_t>(std::max(4.0, std::ceil(cfg_.settle_taus * tau / period)));
  fc.route_cost_ns = cfg_.route_cost_ns;
  return fc;
}

void Emulator::firmware_thread() {
  std::string why;
  if (fw_.init(&why) != mailbox::FwStatus::Ok) fw_init_error_ = why.empty() ? "unknown" : why;
  fw_ready_ = true;
  fw_ready_event_.notify(sc_core::SC_ZERO_TIME);
  if (!fw_init_error_.empty()) return;
  fw_.run_until(uint64_t{1} << 62);
}

int Emulator::serve() {
  // The firmware initialises the controller before the board answers.
  thread_.run_in_sim([this] {
    while (!fw_ready_) sc_core::wait(fw_ready_event_);
  });
  if (!fw_init_error_.empty()) {
    log_.line(fmt::format("firmware init failed: {}", fw_init_error_));
    return 1;
  }
  std::unique_ptr<IpbusServer> server;
  try {
    server = std::make_unique<IpbusServer>(
        cfg_.listen, [this](protocol::ipbus::Fault f, const std::string& what) { log_.ipbus_fault(f, what); },
        target_->socket_mode());
  } catch (const std::exception& e) {
    log_.line(e.what());
    return 1;
  }
  if (cfg_.stall_report_ms > 0)
    server->watch_stalls({std::chrono::milliseconds(cfg_.stall_report_ms), [this] { return thread_.describe_activity(); },
                          [this](const std::string& line) { log_.line(line); }});
  log_.line(fmt::format("scenario {}, seed {}, {} preset, {} XPUs x {} lanes, {}-port mesh, clock {} MHz, IPbus target {}{}",
                        cfg_.scenario, cfg_.server.seed, to_string(cfg_.server.mesh.settle), cfg_.server.shape.xpus,
                        cfg_.server.shape.lanes_per_xpu, cfg_.server.shape.mesh_ports, cfg_.server.clock_mhz,
                        target_->describe(),
                        cfg_.time_mode == emu::TimeMode::Paced ? fmt::format(", real-time factor {}", cfg_.rtf) : ""));
  std::printf("listening on udp://%s\n", server->local_address().c_str());
  std::fflush(stdout);

  target_->start(*server);
  serve_until_stopped();
  target_->stop();
  print_stop_line();
  return 0;
}

// The time modes between requests: lockstep waits for the next; paced and free run the
// simulation on their own when none is waiting, paced then waiting for one until wall time catches
// up with simulated time.
void Emulator::serve_until_stopped() {
  thread_.start_clock();
  ServeUntil until(cfg_.stop_after_wall_s);
  while (!until.over()) {
    if (cfg_.time_mode == emu::TimeMode::Lockstep) {
      thread_.set_activity("waiting for a request (lockstep: simulated time stands still)");
      target_->serve_one(std::chrono::milliseconds(100));
      continue;
    }
    if (target_->serve_one(std::chrono::microseconds(0))) continue;
    thread_.set_activity("running on its own between requests");
    thread_.free_run_slice();
    if (cfg_.time_mode == emu::TimeMode::Paced) {
      thread_.set_activity("waiting for a request while paced to real time");
      auto ahead = thread_.pace_target() - std::chrono::steady_clock::now();
      if (ahead > std::chrono::microseconds(0))
        target_->serve_one(std::chrono::duration_cast<std::chrono::microseconds>(ahead));
    }
  }
}

void Emulator::print_stop_line() {
  if (std::getenv("MXTB_DEBUG_EVENTS"))  // per-link detail, for debugging a run
    for (int i = 0; i < sim_.links(); ++i) {
      auto r = sim_.link_report(i);
      fmt::print(stderr, "link {} {} ({}) peer {}.{} sent {} delivered {} errors {} skipped {} resyncs {} {}\n", i,
                 link::to_string(r.state), link::to_string(r.reason), r.peer.xpu, r.peer.lane, r.messages_sent,
                 r.messages_delivered, r.scoreboard_errors, r.skipped_words, r.resyncs, r.first_error);
    }
  const auto& longest = target_->longest();
  log_.line(fmt::format("stopped at {:.3f} us simulated, {} cycles, real-time factor {:.3g}; longest request {:.1f} ms "
                        "wall, {:.3f} us simulated ({})", sim_now_ns() / 1000.0, sim_.cycle(), thread_.achieved_rtf(),
                        longest.wall_s * 1e3, longest.sim_ns / 1000.0, longest.what.empty() ? "none" : longest.what));
}

}  // namespace

std::optional<IpbusTarget> ipbus_target_from_string(const std::string& s) {
  if (s == "rtl") return IpbusTarget::Rtl;
  if (s == "cpp") return IpbusTarget::Cpp;
  return std::nullopt;
}

std::optional<emu::TimeMode> time_mode_from_string(const std::string& s) {
  if (s == "lockstep") return emu::TimeMode::Lockstep;
  if (s == "paced") return emu::TimeMode::Paced;
  if (s == "free") return emu::TimeMode::Free;
  return std::nullopt;
}

int run_emulator(const EmulatorConfig& cfg) {
  return run_under_systemc([&] {
    Emulator emu(cfg);
    return emu.serve();
  });
}

}  // namespace mxtb::sim
