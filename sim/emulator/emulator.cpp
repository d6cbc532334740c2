#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/emulator/emulator.h"

#include "firmware/ocs_firmware.h"
#include "protocol/board_map.h"
#include "sim/emulator/emu_answer.h"
#include "sim/emulator/ipbus_server.h"
#include "sim/common/sc_runner.h"
#include "sim/server/server_sc.h"

#include <mxtb/ocs_regs.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace mxtb::sim {

namespace {

using ipbus::InfoCode;
using ipbus::TxType;
using sc_core::sc_time;
using sc_core::SC_NS;
namespace er = mxtb::emu::reg;

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

const char* mode_name(emu::TimeMode m) {
  switch (m) {
    case emu::TimeMode::Lockstep: return "lockstep";
    case emu::TimeMode::Paced: return "paced";
    case emu::TimeMode::Free: return "free";
  }
  return "?";
}

bool is_write(TxType t) { return t == TxType::Write || t == TxType::NonIncWrite; }
bool incrementing(TxType t) { return t == TxType::Read || t == TxType::Write; }
InfoCode error_for(TxType t) { return is_write(t) ? InfoCode::WriteError : InfoCode::ReadError; }

// One entry of the emulator's event queue (EVENT_HEAD).
struct EmuEventEntry {
  uint64_t time_ns;
  uint32_t info;  // kind 7:0, a 15:8, b 23:16, c 31:24
  uint32_t data;
};
constexpr size_t kEventQueueDepth = 65536;

uint32_t event_info(emu::EmuEvent kind, uint32_t a, uint32_t b, uint32_t c) {
  return static_cast<uint32_t>(kind) | (a & 0xFF) << 8 | (b & 0xFF) << 16 | (c & 0xFF) << 24;
}

// The SystemC side of the bridge: runs the jobs the serving thread hands it, one at a time, as
// a thread process (so a job may take simulated time), then pauses the kernel.
class HostPort : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(HostPort);
  explicit HostPort(sc_core::sc_module_name name) : sc_module(name) { SC_THREAD(run); }
  // Lockstep: the server's clock is held between jobs (ServerClock::hold), so that it stands at
  // the time the kernel paused, not up to a batch ahead of it.
  void hold_between_jobs(ServerClock* clock) { clock_ = clock; }
  void submit(std::function<void()> work) {
    if (clock_) clock_->release();
    work_ = std::move(work);
    done_ = false;
    pending_ = true;
    start_.notify(sc_core::SC_ZERO_TIME);  // lost when made before the kernel started: pending_ says it
  }
  bool done() const { return done_; }

 private:
  void run() {
    for (;;) {
      while (!pending_) sc_core::wait(start_);
      pending_ = false;
      work_();
      done_ = true;
      if (clock_) clock_->hold();
      sc_core::sc_pause();
    }
  }
  sc_core::sc_event start_;
  ServerClock* clock_ = nullptr;
  std::function<void()> work_;
  bool done_ = true, pending_ = false;
};

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
        port_("host_port") {
    if (!cfg_.job.xpus.empty()) {
      job_ = std::make_unique<TenantJob>(cfg_.job, cfg_.server.shape);
      sim_.set_lane_program(job_.get());
    }
    if (rtl_) sim_.set_emulator_responder([this](const EmuAccess& a) { return answer_within_clock(a); });
    sc_core::sc_spawn([this] { firmware_thread(); }, "firmware");
    if (cfg_.time_mode == emu::TimeMode::Lockstep) port_.hold_between_jobs(&clock_);
  }

  int serve() {
    // The firmware initialises the controller before the board answers.
    run_in_sim([this] {
      while (!fw_ready_) sc_core::wait(fw_ready_event_);
    });
    if (!fw_init_error_.empty()) {
      fmt::print(stderr, "mxtb sim [{}]: firmware init failed: {}\n", mode_name(cfg_.time_mode), fw_init_error_);
      return 1;
    }
    std::unique_ptr<IpbusServer> server_owner;
    try {
      server_owner = std::make_unique<IpbusServer>(
          cfg_.listen, [this](ipbus::Fault f, const std::string& what) { log_fault(f, what); },
          rtl_ ? IpbusServer::Mode::Raw : IpbusServer::Mode::Target);
    } catch (const std::exception& e) {
      fmt::print(stderr, "mxtb sim [{}]: {}\n", mode_name(cfg_.time_mode), e.what());
      return 1;
    }
    IpbusServer& server = *server_owner;
    server_ = &server;
    if (cfg_.stall_report_ms > 0)
      server.watch_stalls({std::chrono::milliseconds(cfg_.stall_report_ms), [this] { return describe_activity(); },
                           [this](const std::string& line) {
                             std::lock_guard<std::mutex> lock(log_mu_);
                             fmt::print(stderr, "mxtb sim [{}]: {}\n", mode_name(cfg_.time_mode), line);
                           }});
    fmt::print(stderr, "mxtb sim [{}]: scenario {}, seed {}, {} preset, {} XPUs x {} lanes, {}-port mesh, clock {} MHz, IPbus target {}{}\n",
               mode_name(cfg_.time_mode), cfg_.scenario, cfg_.server.seed, to_string(cfg_.server.mesh.settle),
               cfg_.server.shape.xpus, cfg_.server.shape.lanes_per_xpu, cfg_.server.shape.mesh_ports, cfg_.server.clock_mhz,
               rtl_ ? "rtl (rtl/board/mxtb_board.sv: the top's transactor, decoder, block RAM)" : "cpp (protocol/ipbus/target.cpp)",
               cfg_.time_mode == emu::TimeMode::Paced ? fmt::format(", real-time factor {}", cfg_.rtf) : "");
    std::printf("listening on udp://%s\n", server.local_address().c_str());
    std::fflush(stdout);

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);
    const pid_t parent = getppid();
    wall0_ = std::chrono::steady_clock::now();
    sim0_ns_ = now_ns();
    auto last_parent_check = wall0_;
    while (!g_stop) {
      auto wall = std::chrono::steady_clock::now();
      if (wall - last_parent_check > std::chrono::milliseconds(200)) {
        last_parent_check = wall;
        if (getppid() != parent) break;  // whoever started us is gone
        if (cfg_.stop_after_wall_s > 0 && std::chrono::duration<double>(wall - wall0_).count() > cfg_.stop_after_wall_s) break;
      }
      if (cfg_.time_mode == emu::TimeMode::Lockstep) {
        activity_ = "waiting for a request (lockstep: simulated time stands still)";
        serve_one(server, std::chrono::milliseconds(100));
        continue;
      }
      if (serve_one(server, std::chrono::microseconds(0))) continue;
      activity_ = "running on its own between requests";
      free_run_slice();
      if (cfg_.time_mode == emu::TimeMode::Paced) {
        activity_ = "waiting for a request while paced to real time";
        auto ahead = pace_target() - std::chrono::steady_clock::now();
        if (ahead > std::chrono::microseconds(0))
          serve_one(server, std::chrono::duration_cast<std::chrono::microseconds>(ahead));
      }
    }
    server_ = nullptr;
    if (std::getenv("MXTB_DEBUG_EVENTS"))  // per-link detail, for debugging a run
      for (int i = 0; i < sim_.links(); ++i) {
        auto r = sim_.link_report(i);
        fmt::print(stderr, "link {} {} ({}) peer {}.{} sent {} delivered {} errors {} skipped {} resyncs {} {}\n", i,
                   link::to_string(r.state), link::to_string(r.reason), r.peer.xpu, r.peer.lane, r.messages_sent,
                   r.messages_delivered, r.scoreboard_errors, r.skipped_words, r.resyncs, r.first_error);
      }
    fmt::print(stderr, "mxtb sim [{}]: stopped at {:.3f} us simulated, {} cycles, real-time factor {:.3g}; longest request {:.1f} ms "
               "wall, {:.3f} us simulated ({})\n", mode_name(cfg_.time_mode), now_ns() / 1000.0, sim_.cycle(), achieved_rtf(),
               longest_.wall_s * 1e3, longest_.sim_ns / 1000.0, longest_.what.empty() ? "none" : longest_.what);
    return 0;
  }

 private:
  firmware::FirmwareConfig firmware_config() const {
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

  void firmware_thread() {
    std::string why;
    if (fw_.init(&why) != mailbox::FwStatus::Ok) fw_init_error_ = why.empty() ? "unknown" : why;
    fw_ready_ = true;
    fw_ready_event_.notify(sc_core::SC_ZERO_TIME);
    if (!fw_init_error_.empty()) return;
    fw_.run_until(uint64_t{1} << 62);
  }

  double now_ns() const { return sc_core::sc_time_stamp().to_seconds() * 1e9; }
  uint64_t now_ns_u64() const { return static_cast<uint64_t>(std::llround(now_ns())); }
  double achieved_rtf() const {
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    return wall > 0 ? (now_ns() - sim0_ns_) * 1e-9 / wall : 0;
  }
  std::chrono::steady_clock::time_point pace_target() const {
    double wall_s = (now_ns() - sim0_ns_) * 1e-9 / cfg_.rtf;
    return wall0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wall_s));
  }

  // Paced and free modes: the simulation runs on its own between jobs, a microsecond at a time.
  void free_run_slice() {
    sc_core::sc_start(sc_time(1000, SC_NS));
    note_progress();
    rethrow_process_error();
    sync_events();
  }

  // What the stall watchdog (another thread) may read: the simulation thread's activity and how
  // far simulated time had got when the kernel last returned, and when. In lockstep a request runs
  // in one kernel call, so there the figure is the start of a request still running.
  void note_progress() {
    sim_ns_seen_ = now_ns_u64();
    progress_wall_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::string describe_activity() const {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch()).count();
    const int64_t at = progress_wall_ns_.load();
    return fmt::format("{}; simulated time {:.3f} us when the kernel last returned, {}", activity_.load(), sim_ns_seen_.load() / 1000.0,
                       at ? fmt::format("{:.2f} s ago", (now - at) * 1e-9) : std::string("never"));
  }

  // Runs `work` inside the simulation (a SystemC thread) and returns when it finished.
  void run_in_sim(std::function<void()> work) {
    port_.submit(std::move(work));
    while (!port_.done()) {
      if (cfg_.time_mode == emu::TimeMode::Lockstep) sc_core::sc_start();
      else {
        sc_core::sc_start(sc_time(1000, SC_NS));
        if (cfg_.time_mode == emu::TimeMode::Paced) std::this_thread::sleep_until(pace_target());
      }
      note_progress();
      rethrow_process_error();  // a failed RTL assertion in the clock thread
    }
    sync_events();
  }

  // One request, waiting up to `timeout` for it: a job of the C++ target, or a datagram for the
  // RTL transactor. False: none came.
  bool serve_one(IpbusServer& server, std::chrono::microseconds timeout) {
    if (rtl_) {
      auto d = server.next_datagram(timeout);
      if (d) handle_datagram(*d);
      return d.has_value();
    }
    auto job = server.next_job(timeout);
    if (job) handle(*job);
    return job.has_value();
  }

  // ---- the RTL target: the board top's UDP port, and the emulator's block behind it ----

  void handle_datagram(IpbusServer::Datagram& d) {
    const auto wall_start = std::chrono::steady_clock::now();
    const double sim_start_ns = now_ns();
    if (cfg_.inject_stall_ms && ++requests_seen_ % cfg_.inject_stall_every == 0) {
      activity_ = "stalled on purpose (--inject-stall) before a datagram";
      std::this_thread::sleep_for(std::chrono::milliseconds(cfg_.inject_stall_ms));
    }
    const DatagramOutcome o = run_datagram(d.bytes);
    ++rtl_stats_.datagrams;
    if (o.kind == 0) ++rtl_stats_.control;
    if (o.kind == 1) ++rtl_stats_.status;
    if (o.kind == 2) ++rtl_stats_.resends_served;
    if (o.kind == 0 && o.reply) rtl_stats_.transactions += ipbus::executed_transactions(*o.reply);
    if (o.fault < static_cast<uint8_t>(ipbus::Fault::kCount)) {
      ++rtl_stats_.faults[o.fault];
      log_fault(static_cast<ipbus::Fault>(o.fault),
                fmt::format("RTL transactor: a datagram of {} bytes, {}", d.bytes.size(), o.reply ? "answered" : "dropped"));
    }
    d.reply(o.reply);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (wall_s > longest_.wall_s)
      longest_ = {wall_s, now_ns() - sim_start_ns, fmt::format("a datagram of {} bytes, {} board cycles", d.bytes.size(), o.cycles)};
  }

  // One datagram into the top's UDP port from the current simulated time, the server clocked with
  // it; the accesses its transactor makes of the emulator's block are answered here as they come
  // (RUN_UNTIL and ADVANCE_NS run simulated time first, the transactor waiting without a timeout).
  // A transactor that has not finished within kDatagramCycleBound clocks of its own (those spent
  // waiting for the emulator not counted) has hung: std::runtime_error naming the datagram.
  static constexpr uint64_t kDatagramCycleBound = 10'000'000;
  DatagramOutcome run_datagram(const std::vector<uint8_t>& bytes) {
    bool started = false, hung = false;
    for (;;) {
      activity_ = "running a datagram through the RTL transactor";
      run_in_sim([&] {
        if (!started) sim_.start_datagram(bytes);
        started = true;
        const BoardPort& p = sim_.board_port();
        while (!p.waiting_for_emulator() && !p.outcome_ready()) {
          sc_core::wait(clock_.period() * 1e6, clock_.board_event());  // timed: a hung transactor makes no event
          if (p.busy() && p.cycles() - p.emulator_wait_cycles() > kDatagramCycleBound) {
            hung = true;
            return;
          }
        }
      });
      if (hung) {
        const BoardPort& p = sim_.board_port();
        throw std::runtime_error(fmt::format("the IPbus transactor hung: {} cycles on one datagram of {} bytes ({} of {} beats "
                                             "taken, {}, {} reply bytes)",
                                             p.cycles() - p.emulator_wait_cycles(), bytes.size(), p.beats_taken(),
                                             (bytes.size() + 3) / 4, p.decided() ? "decided" : "not decided", p.reply_bytes()));
      }
      if (auto o = sim_.take_datagram_outcome()) return std::move(*o);
      const EmuAccess a = *sim_.emulator_access();
      activity_ = "running a datagram through the RTL transactor: the emulator control block";
      bool ok = true;
      uint32_t data = 0;
      if (a.write) ok = emu_write(a.offset, a.data);
      else data = emu_read(a.offset);
      sim_.answer_emulator(ok, data);
    }
  }

  // The emulator block's accesses answered inside the server's clock, as the board's block RAM
  // answers (a word a clock: an event drain streams): those its registers say are
  // (protocol/emu_regs.json's "read" and "write", sim/emulator/emu_answer.h).
  std::optional<std::pair<bool, uint32_t>> answer_within_clock(const EmuAccess& a) {
    if (!a.write) {
      if (!emu_read_within_clock(a.offset)) return std::nullopt;
      return std::pair<bool, uint32_t>{true, emu_read(a.offset)};
    }
    if (!emu_write_within_clock(a.offset)) return std::nullopt;
    return std::pair<bool, uint32_t>{emu_write(a.offset, a.data), 0};
  }

  // One AXI4-Lite transaction on the top's firmware port, at its cycle cost. The firmware shares
  // the port: the caller holds clock_.bus_mutex(). Call from a SystemC thread.
  AxilResult controller_transaction(bool write, uint32_t word, uint32_t data) {
    if (write) sim_.start_write(word * 4, data);
    else sim_.start_read(word * 4);
    while (!sim_.bus_result_ready()) sc_core::wait(clock_.bus_event());
    return *sim_.take_bus_result();
  }

  ipbus::TargetStats ipbus_stats() const { return rtl_ ? rtl_stats_ : server_->stats(); }

  void handle(IpbusServer::Job& job) {
    InfoCode code = InfoCode::Success;
    std::vector<uint32_t> out;
    const auto& a = job.access;
    const auto wall_start = std::chrono::steady_clock::now();
    const double sim_start_ns = now_ns();
    if (cfg_.inject_stall_ms && ++requests_seen_ % cfg_.inject_stall_every == 0) {
      activity_ = "stalled on purpose (--inject-stall) before a request";
      std::this_thread::sleep_for(std::chrono::milliseconds(cfg_.inject_stall_ms));
    }
    uint32_t span = incrementing(a.type) ? std::max<uint32_t>(a.words, 1) : 1;
    if (a.addr < protocol::kControllerBase + protocol::kControllerWords && uint64_t{a.addr} + span <= protocol::kControllerWords) {
      activity_ = "running a request: controller registers over AXI4-Lite";
      code = controller_access(a, out);
    } else if (a.addr >= protocol::kEmulatorBase && uint64_t{a.addr} + span <= uint64_t{protocol::kEmulatorBase} + protocol::kEmulatorWords) {
      activity_ = "running a request: emulator control block (RUN_UNTIL and ADVANCE_NS run simulated time)";
      code = emulator_access(a, out);
    }
    else
      code = error_for(a.type);
    job.done(code, std::move(out));
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (wall_s > longest_.wall_s)
      longest_ = {wall_s, now_ns() - sim_start_ns, fmt::format("{} of {} word(s) at {:#010x}", ipbus::to_string(a.type), a.words, a.addr)};
  }

  // ---- the controller: AXI4-Lite transactions with their cycle cost ----

  InfoCode controller_access(const ipbus::BusPort::Access& a, std::vector<uint32_t>& out) {
    // Every word must be a register that allows the access, or nothing happens.
    bool rmw = a.type == TxType::RmwBits || a.type == TxType::RmwSum;
    for (uint32_t i = 0; i < (incrementing(a.type) ? a.words : std::min<uint32_t>(a.words, 1)); ++i) {
      const auto* r = mxtb::ocs::register_at((a.addr + i) * 4);
      if (!r) return error_for(a.type);
      if ((is_write(a.type) || rmw) && r->access == mxtb::ocs::Access::RO) return error_for(a.type);
      if ((!is_write(a.type) || rmw) && r->access == mxtb::ocs::Access::WO) return error_for(a.type);
    }
    InfoCode code = InfoCode::Success;
    run_in_sim([&] {
      clock_.bus_mutex().lock();
      auto xfer = [&](bool write, uint32_t word, uint32_t data) -> std::optional<uint32_t> {
        AxilResult r = controller_transaction(write, word, data);
        if (r.resp != 0) return std::nullopt;
        return r.data;
      };
      for (uint32_t i = 0; i < a.words || (rmw && i == 0); ++i) {
        uint32_t word = incrementing(a.type) ? a.addr + i : a.addr;
        std::optional<uint32_t> v;
        switch (a.type) {
          case TxType::Read:
          case TxType::NonIncRead:
            v = xfer(false, word, 0);
            if (v) out.push_back(*v);
            break;
          case TxType::Write:
          case TxType::NonIncWrite: v = xfer(true, word, a.body[i]); break;
          case TxType::RmwBits:
          case TxType::RmwSum:
            v = xfer(false, word, 0);
            if (v) {
              out.push_back(*v);
              uint32_t nv = a.type == TxType::RmwBits ? (*v & a.body[0]) | a.body[1] : *v + a.body[0];
              v = xfer(true, word, nv);
            }
            break;
        }
        if (!v) {
          code = error_for(a.type);
          break;
        }
        if (rmw) break;
      }
      clock_.bus_mutex().unlock();
    });
    if (code != InfoCode::Success) out.clear();
    return code;
  }

  // ---- the emulator control block ----

  InfoCode emulator_access(const ipbus::BusPort::Access& a, std::vector<uint32_t>& out) {
    bool rmw = a.type == TxType::RmwBits || a.type == TxType::RmwSum;
    uint32_t n = incrementing(a.type) ? a.words : std::min<uint32_t>(a.words, 1);
    for (uint32_t i = 0; i < n; ++i) {
      const auto* r = mxtb::emu::register_at((a.addr - protocol::kEmulatorBase + i) * 4);
      if (!r) return error_for(a.type);
      if ((is_write(a.type) || rmw) && r->access == mxtb::emu::Access::RO) return error_for(a.type);
      if ((!is_write(a.type) || rmw) && r->access == mxtb::emu::Access::WO) return error_for(a.type);
    }
    for (uint32_t i = 0; i < a.words || (rmw && i == 0); ++i) {
      uint32_t offset = (incrementing(a.type) ? a.addr + i : a.addr) - protocol::kEmulatorBase;
      offset *= 4;
      if (a.type == TxType::Read || a.type == TxType::NonIncRead) {
        out.push_back(emu_read(offset));
      } else if (is_write(a.type)) {
        if (!emu_write(offset, a.body[i])) return error_for(a.type);
      } else {
        uint32_t old = emu_read(offset);
        uint32_t nv = a.type == TxType::RmwBits ? (old & a.body[0]) | a.body[1] : old + a.body[0];
        if (!emu_write(offset, nv)) return error_for(a.type);
        out.push_back(old);
        break;
      }
    }
    return InfoCode::Success;
  }

  uint32_t emu_read(uint32_t off) {
    uint64_t t = now_ns_u64();
    if (off == er::id::kOffset) return er::id::kReset;
    if (off == er::version::kOffset) return er::version::kReset;
    if (off == er::time_mode::kOffset) return static_cast<uint32_t>(cfg_.time_mode);
    if (off == er::rtf_ppm::kOffset) {
      if (cfg_.time_mode == emu::TimeMode::Paced) return static_cast<uint32_t>(std::llround(cfg_.rtf * 1e6));
      if (cfg_.time_mode == emu::TimeMode::Free) return static_cast<uint32_t>(std::llround(achieved_rtf() * 1e6));
      return 0;
    }
    if (off == er::clock_ps::kOffset) return static_cast<uint32_t>(std::llround(1e6 / cfg_.server.clock_mhz));
    if (off == er::time_ns_lo::kOffset) return static_cast<uint32_t>(t);
    if (off == er::time_ns_hi::kOffset) return static_cast<uint32_t>(t >> 32);
    if (off == er::cycle_lo::kOffset) return static_cast<uint32_t>(sim_.cycle());
    if (off == er::cycle_hi::kOffset) return static_cast<uint32_t>(sim_.cycle() >> 32);
    if (off == er::run_timeout_ns::kOffset) return run_timeout_ns_;
    if (off == er::run_result::kOffset) return run_result_;
    if (off == er::fault_at_lo::kOffset) return static_cast<uint32_t>(fault_at_ns_);
    if (off == er::fault_at_hi::kOffset) return static_cast<uint32_t>(fault_at_ns_ >> 32);
    if (off == er::fault_target::kOffset) return fault_target_;
    if (off == er::fault_value::kOffset) return fault_value_;
    if (off == er::faults_pending::kOffset) return faults_pending_;
    if (off == er::xpu_alive::kOffset) {
      uint32_t m = 0;
      for (int x = 0; x < cfg_.server.shape.xpus; ++x) m |= uint32_t{sim_.xpu_alive(x)} << x;
      return m;
    }
    if (off == er::event_count::kOffset) return static_cast<uint32_t>(events_.size());
    if (off >= er::event_head::kOffset && off < er::event_head::kOffset + 4 * er::event_head::kCount) {
      if (events_.empty()) return 0;
      const auto& e = events_.front();
      switch ((off - er::event_head::kOffset) / 4) {
        case 0: return static_cast<uint32_t>(e.time_ns);
        case 1: return static_cast<uint32_t>(e.time_ns >> 32);
        case 2: return e.info;
        default: return e.data;
      }
    }
    if (off == er::event_dropped::kOffset) return events_dropped_;
    if (off == er::wave_ctrl::kOffset) return sim_.waveform_on() ? er::wave_ctrl::kOnMask : 0;
    if (off == er::messages_lo::kOffset) return static_cast<uint32_t>(sim_.messages_delivered());
    if (off == er::messages_hi::kOffset) return static_cast<uint32_t>(sim_.messages_delivered() >> 32);
    if (off == er::scoreboard_errors::kOffset) return static_cast<uint32_t>(sim_.scoreboard_errors());
    if (off >= er::ipbus_stats::kOffset && off < er::ipbus_stats::kOffset + 4 * er::ipbus_stats::kCount) {
      const auto s = ipbus_stats();
      uint32_t i = (off - er::ipbus_stats::kOffset) / 4;
      const uint64_t head[] = {s.datagrams, s.control, s.status, s.resends_served, s.transactions};
      if (i < 5) return static_cast<uint32_t>(head[i]);
      return static_cast<uint32_t>(s.faults[i - 5]);
    }
    if (off == er::job_ring::kOffset) return job_ring_;
    if (off == er::job_spec::kOffset) return job_spec_;
    if (off == er::job_bytes::kOffset) return job_bytes_;
    if (off == er::job_seed::kOffset) return job_seed_;
    if (off == er::job_status::kOffset) {
      if (!job_) return 0;
      const auto ranks = static_cast<uint32_t>(job_->ring().size());
      return static_cast<uint32_t>(job_->state()) | std::min<uint32_t>(ranks, 15) << er::job_status::kRanksShift |
             std::min<uint32_t>(job_->rings_running(), 255) << er::job_status::kRingsShift;
    }
    if (off == er::restore_src::kOffset) return restore_src_;
    if (off == er::restore_dst::kOffset) return restore_dst_;
    if (off == er::restore_bytes::kOffset) return restore_bytes_;
    if (off == er::job_verified::kOffset) return job_ ? static_cast<uint32_t>(job_->verified()) : 0;
    if (off == er::job_aborted::kOffset) return job_ ? static_cast<uint32_t>(job_->aborted()) : 0;
    if (off == er::job_wrong::kOffset) return job_ ? static_cast<uint32_t>(job_->wrong()) : 0;
    if (off == er::ipbus_bus_errors::kOffset)
      return static_cast<uint32_t>(ipbus_stats().faults[static_cast<size_t>(ipbus::Fault::BusError)]);
    return 0;
  }

  // False: the write is refused (bus error) and changed nothing.
  bool emu_write(uint32_t off, uint32_t v) {
    if (off == er::advance_ns::kOffset) {
      if (v) run_in_sim([&] { sc_core::wait(sc_time(static_cast<double>(v), SC_NS)); });
      return true;
    }
    if (off == er::run_timeout_ns::kOffset) {
      run_timeout_ns_ = v;
      return true;
    }
    if (off == er::run_until::kOffset) {
      run_until(v & 0x3F);
      return true;
    }
    if (off == er::fault_at_lo::kOffset) {
      fault_at_ns_ = (fault_at_ns_ & ~uint64_t{0xFFFFFFFF}) | v;
      return true;
    }
    if (off == er::fault_at_hi::kOffset) {
      fault_at_ns_ = (fault_at_ns_ & 0xFFFFFFFF) | uint64_t{v} << 32;
      return true;
    }
    if (off == er::fault_target::kOffset) {
      fault_target_ = v & 0xFFFF;
      return true;
    }
    if (off == er::fault_value::kOffset) {
      fault_value_ = v;
      return true;
    }
    if (off == er::fault_arm::kOffset) return arm_fault(v & 0xF);
    if (off == er::job_ring::kOffset) return job_ring_ = v, true;
    if (off == er::job_spec::kOffset) return job_spec_ = v & (er::job_spec::kOpMask | er::job_spec::kTypeMask), true;
    if (off == er::job_bytes::kOffset) return job_bytes_ = v, true;
    if (off == er::job_seed::kOffset) return job_seed_ = v, true;
    if (off == er::job_ctrl::kOffset) return job_ctrl(v);
    if (off == er::restore_src::kOffset) return restore_src_ = v, true;
    if (off == er::restore_dst::kOffset) return restore_dst_ = v & er::restore_dst::kXpuMask, true;
    if (off == er::restore_bytes::kOffset) return restore_bytes_ = v, true;
    if (off == er::restore_ctrl::kOffset) return restore_ctrl(v);
    if (off == er::event_pop::kOffset) {
      for (uint32_t i = 0; i < v && !events_.empty(); ++i) events_.pop_front();
      return true;
    }
    if (off == er::wave_ctrl::kOffset) {
      if (cfg_.fst_path.empty()) return false;  // started without --fst: nothing to dump into
      if (v & er::wave_ctrl::kOnMask) sim_.start_waveform(cfg_.fst_path);
      else sim_.stop_waveform();
      return true;
    }
    return false;
  }

  bool arm_fault(uint32_t kind_raw) {
    auto kind = mxtb::emu::to_fault_kind(kind_raw);
    if (!kind || *kind == emu::FaultKind::None) return false;
    const int links = sim_.links();
    uint32_t target = fault_target_, value = fault_value_;
    float ber = 0;
    std::memcpy(&ber, &value, sizeof ber);
    switch (*kind) {
      case emu::FaultKind::KillXpu:
        if (target >= static_cast<uint32_t>(cfg_.server.shape.xpus)) return false;
        break;
      case emu::FaultKind::LaneBer:
        if (target >= static_cast<uint32_t>(links) || !std::isfinite(ber) || ber < 0 || ber > 0.01f) return false;
        break;
      case emu::FaultKind::LaneDark:
        if (target >= static_cast<uint32_t>(links) || value == 0) return false;
        break;
      case emu::FaultKind::SwapLanes:
        if (target >= static_cast<uint32_t>(links) || value >= static_cast<uint32_t>(links) || value == target) return false;
        break;
      case emu::FaultKind::None: return false;
    }
    ++faults_pending_;
    uint64_t at = fault_at_ns_;
    run_in_sim([&] {
      sc_core::sc_spawn([this, kind = *kind, target, value, ber, at] {
        double now = now_ns();
        if (static_cast<double>(at) > now) sc_core::wait(sc_time(static_cast<double>(at) - now, SC_NS));
        switch (kind) {
          case emu::FaultKind::KillXpu: sim_.kill_xpu(static_cast<int>(target)); break;
          case emu::FaultKind::LaneBer: sim_.set_lane_ber(static_cast<int>(target), ber); break;
          case emu::FaultKind::LaneDark:
            sim_.dark_lane(static_cast<int>(target), static_cast<uint64_t>(std::ceil(value / sim_.period_ns())));
            break;
          case emu::FaultKind::SwapLanes: sim_.swap_lanes(static_cast<int>(target), static_cast<int>(value)); break;
          case emu::FaultKind::None: break;
        }
        --faults_pending_;
        ++faults_fired_;
        push_event(now_ns(), event_info(emu::EmuEvent::FaultFired, static_cast<uint32_t>(kind), target, 0), value);
        fault_event_.notify(sc_core::SC_ZERO_TIME);
      });
    });
    return true;
  }

  // A control write the job refuses: a bus error for the host, the reason in the log. Returns false.
  bool refused(const char* reg, uint32_t v, const std::string& why) {
    std::lock_guard<std::mutex> lock(log_mu_);
    fmt::print(stderr, "mxtb sim [{}]: {} {:#x} refused: {}\n", mode_name(cfg_.time_mode), reg, v, why);
    return false;
  }

  // JOB_CTRL: form the job on JOB_RING with JOB_SPEC, JOB_BYTES and JOB_SEED, or stop it. The job
  // is touched only between kernel runs (as here) or by the clock thread inside one.
  bool job_ctrl(uint32_t v) {
    auto refuse = [&](const std::string& why) { return refused("JOB_CTRL", v, why); };
    if (!job_) return refuse("this emulator runs no job (start it with --job-xpus)");
    const bool form = v & er::job_ctrl::kFormMask, stop = v & er::job_ctrl::kStopMask;
    if (form == stop) return refuse("write exactly one of form (bit 0) and stop (bit 1)");
    if (stop) {
      job_->stop();
      return true;
    }
    std::vector<int> ring;
    for (int r = 0; r < 8; ++r) {
      const int x = static_cast<int>((job_ring_ >> (4 * r)) & 0xF);
      if (x == 0xF) break;
      ring.push_back(x);
    }
    TenantJobSpec spec;
    spec.op = static_cast<CollectiveOp>((job_spec_ & er::job_spec::kOpMask) >> er::job_spec::kOpShift);
    spec.type = (job_spec_ & er::job_spec::kTypeMask) ? DataType::BF16 : DataType::F32;
    spec.bytes = job_bytes_;
    spec.seed = job_seed_;
    if (std::string why = job_->check(ring, spec); !why.empty()) return refuse(why);
    job_->form(ring, spec);
    return true;
  }

  // RESTORE_CTRL: restore RESTORE_BYTES of state onto RESTORE_DST from RESTORE_SRC's XPUs.
  bool restore_ctrl(uint32_t v) {
    auto refuse = [&](const std::string& why) { return refused("RESTORE_CTRL", v, why); };
    if (!job_) return refuse("this emulator runs no job (start it with --job-xpus)");
    if (!(v & er::restore_ctrl::kStartMask)) return refuse("write 1 (start)");
    std::vector<int> sources;
    for (int x = 0; x < 32; ++x)
      if (restore_src_ >> x & 1u) sources.push_back(x);
    const int dest = static_cast<int>(restore_dst_);
    if (std::string why = job_->check_restore(sources, dest, restore_bytes_); !why.empty()) return refuse(why);
    job_->restore(sources, dest, restore_bytes_, job_seed_);
    return true;
  }

  // Runs until a masked condition holds (RUN_UNTIL) or the timeout; RUN_RESULT says which.
  void run_until(uint32_t mask) {
    run_in_sim([&] {
      const size_t transitions0 = sim_.transitions().size(), failovers0 = fw_.failovers().size();
      const uint64_t faults0 = faults_fired_;
      const uint64_t jobs0 = job_ ? job_->records_total() : 0;
      // sc_time arithmetic (integer picoseconds): a double deadline can leave a remainder that
      // rounds to a zero-time wait, forever.
      const sc_time deadline = sc_core::sc_time_stamp() + sc_time(static_cast<double>(run_timeout_ns_), SC_NS);
      const sc_time poll(100, SC_NS);  // the firmware's failover has no event of its own: look this often
      auto fired = [&] {
        uint32_t f = 0;
        if (sim_.irq()) f |= er::run_until::kIrqMask;
        if (sim_.transitions().size() > transitions0) f |= er::run_until::kLinkMask;
        if (fw_.failovers().size() > failovers0) f |= er::run_until::kFailoverMask;
        if (faults_fired_ > faults0) f |= er::run_until::kFaultMask;
        if (job_ && job_->records_total() > jobs0) f |= er::run_until::kJobMask;
        sync_events();
        if (!events_.empty()) f |= er::run_until::kEventMask;
        return f & mask;
      };
      uint32_t f = fired();
      while (!f && sc_core::sc_time_stamp() < deadline) {
        sc_time left = deadline - sc_core::sc_time_stamp();
        sc_core::wait(left < poll ? left : poll, clock_.link_event() | clock_.irq_event() | fault_event_);
        f = fired();
      }
      run_result_ = f;
    });
  }

  // ---- event queue ----

  void push_event(double t_ns, uint32_t info, uint32_t data) {
    if (events_.size() >= kEventQueueDepth) {
      ++events_dropped_;
      return;
    }
    EmuEventEntry e{static_cast<uint64_t>(std::llround(t_ns)), info, data};
    // Sources report late (links are collected after each run): keep the queue in time order.
    auto it = events_.end();
    while (it != events_.begin() && std::prev(it)->time_ns > e.time_ns) --it;
    events_.insert(it, e);
  }

  void sync_events() {
    const auto& tr = sim_.transitions();
    for (; transitions_seen_ < tr.size(); ++transitions_seen_) {
      const auto& t = tr[transitions_seen_];
      push_event(static_cast<double>(t.cycle) * sim_.period_ns(),
                 event_info(emu::EmuEvent::LinkChange, static_cast<uint32_t>(t.link), static_cast<uint32_t>(t.from),
                            static_cast<uint32_t>(t.to)),
                 static_cast<uint32_t>(t.reason));
    }
    const auto& ce = fw_.events();
    for (; controller_events_seen_ < ce.size(); ++controller_events_seen_) {
      const auto& e = ce[controller_events_seen_];
      push_event(static_cast<double>(e.cycle) * sim_.period_ns(),
                 event_info(emu::EmuEvent::Controller, e.info & 0xF, (e.info >> 4) & 0xF, (e.info >> 8) & 0xFF), e.info >> 16);
    }
    if (job_) {
      // The job keeps its last records only: those already dropped cannot be queued any more.
      const auto& jr = job_->records();
      const uint64_t first = job_->records_total() - jr.size();
      for (job_records_seen_ = std::max(job_records_seen_, first); job_records_seen_ < job_->records_total(); ++job_records_seen_) {
        const TenantJobRecord& r = jr[static_cast<size_t>(job_records_seen_ - first)];
        if (r.outcome != emu::JobOutcome::Verified) {  // the why, which the event has no room for
          std::lock_guard<std::mutex> lock(log_mu_);
          fmt::print(stderr, "mxtb sim [{}]: job {} #{} {} ({}) at {:.3f} us: {}\n", mode_name(cfg_.time_mode),
                     r.restore ? "restore" : "collective", r.seq,
                     emu::to_string(r.outcome), emu::to_string(r.reason), static_cast<double>(r.end_cycle) * sim_.period_ns() / 1000,
                     r.detail);
        }
        if (r.restore)
          push_event(static_cast<double>(r.end_cycle) * sim_.period_ns(),
                     event_info(emu::EmuEvent::Restore, static_cast<uint32_t>(r.outcome), static_cast<uint32_t>(r.rings),
                                static_cast<uint32_t>(r.reason)),
                     r.outcome == emu::JobOutcome::Aborted ? 0 : static_cast<uint32_t>(r.end_cycle + 1 - r.start_cycle));
        else
          push_event(static_cast<double>(r.end_cycle) * sim_.period_ns(),
                     event_info(emu::EmuEvent::Job, static_cast<uint32_t>(r.outcome), static_cast<uint32_t>(r.reason),
                                static_cast<uint32_t>(r.ranks)),
                     static_cast<uint32_t>(r.seq));
      }
    }
    const auto& fo = fw_.failovers();
    for (; failovers_seen_ < fo.size(); ++failovers_seen_) {
      const auto& f = fo[failovers_seen_];
      push_event(static_cast<double>(f.commit_ns),
                 event_info(emu::EmuEvent::Failover, static_cast<uint32_t>(f.failed_xpu), static_cast<uint32_t>(f.spare),
                            static_cast<uint32_t>(f.status)),
                 f.generation);
    }
  }

  void log_fault(ipbus::Fault f, const std::string& what) {
    std::lock_guard<std::mutex> lock(log_mu_);
    uint64_t n = ++fault_logs_;
    if (n <= 20 || n % 1000 == 0)
      fmt::print(stderr, "mxtb sim [{}]: ipbus {}: {}{}\n", mode_name(cfg_.time_mode), ipbus::to_string(f), what,
                 n == 20 ? " (further faults: every 1000th is logged)" : "");
  }

  EmulatorConfig cfg_;
  ServerSim sim_;
  std::unique_ptr<TenantJob> job_;  // before the firmware and clock threads that step sim_
  // The RTL target (--ipbus-target rtl): datagrams into the top's UDP port, and what its
  // transactor did, counted as the C++ target counts (emu.IPBUS_STATS).
  const bool rtl_ = cfg_.ipbus_target == IpbusTarget::Rtl;
  ipbus::TargetStats rtl_stats_;
  ServerClock clock_;
  ScHal fw_hal_;
  firmware::OcsFirmware fw_;
  HostPort port_;
  bool fw_ready_ = false;
  sc_core::sc_event fw_ready_event_, fault_event_;
  std::string fw_init_error_;
  IpbusServer* server_ = nullptr;
  struct LongestRequest {
    double wall_s = 0, sim_ns = 0;
    std::string what;
  } longest_;  // the simulation thread's slowest request, for the stop line
  uint64_t requests_seen_ = 0;
  std::atomic<const char*> activity_{"starting"};  // string literals only: read by the stall watchdog
  std::atomic<uint64_t> sim_ns_seen_{0};
  std::atomic<int64_t> progress_wall_ns_{0};

  std::chrono::steady_clock::time_point wall0_ = std::chrono::steady_clock::now();
  double sim0_ns_ = 0;

  uint32_t run_timeout_ns_ = er::run_timeout_ns::kReset, run_result_ = 0;
  uint64_t fault_at_ns_ = 0;
  uint32_t fault_target_ = 0, fault_value_ = 0, faults_pending_ = 0;
  uint64_t faults_fired_ = 0;
  std::deque<EmuEventEntry> events_;
  uint32_t events_dropped_ = 0;
  size_t transitions_seen_ = 0, failovers_seen_ = 0, controller_events_seen_ = 0;
  uint64_t job_records_seen_ = 0;
  uint32_t restore_src_ = 0, restore_dst_ = 0, restore_bytes_ = er::restore_bytes::kReset;
  uint32_t job_ring_ = er::job_ring::kReset, job_spec_ = 0, job_bytes_ = er::job_bytes::kReset, job_seed_ = er::job_seed::kReset;
  std::mutex log_mu_;
  uint64_t fault_logs_ = 0;
};

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
