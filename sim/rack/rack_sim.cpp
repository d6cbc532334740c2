#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: a firmware thread per board, the window thread
#include "sim/rack/rack_sim.h"

#include "firmware/ocs_firmware.h"
#include "sim/common/sc_runner.h"
#include "sim/emulator/emu_block.h"
#include "sim/emulator/emu_log.h"
#include "sim/emulator/ipbus_server.h"
#include "sim/emulator/ipbus_target.h"
#include "sim/emulator/sim_thread.h"
#include "sim/rack/spare_ready.h"
#include "sim/server/server_sc.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <mxtb/link_defs.h>

#include <systemc>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>


namespace mxtb::sim::rack {

using nlohmann::json;

ServerRange servers_of_rank(int servers, int processes, int rank) {
  return ServerRange{static_cast<int>(int64_t{servers} * rank / processes), static_cast<int>(int64_t{servers} * (rank + 1) / processes)};
}

int rank_of_server(int servers, int processes, int server) {
  for (int r = 0; r < processes; ++r)
    if (server < servers_of_rank(servers, processes, r).end) return r;
  return processes - 1;
}

std::string RackPerf::to_json() const {
  return json{{"rank", rank},       {"servers", servers},       {"cycles", cycles},       {"windows", windows},
              {"wall_s", wall_s},   {"exchange_s", exchange_s}, {"deliver_s", deliver_s}}
      .dump();
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t next_pow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

// One direction of a fibre, and at its receiving process the light still in the fibre: a ring of
// what was sent, by the cycle it was sent.
struct Strand {
  int fibre = 0;
  protocol::FibreEnd from, to;
  int from_rank = 0, to_rank = 0;
  uint32_t latency = 1;
  float loss_db = 0;
  std::vector<const FibreFault*> faults;  // the fibre's own, found once, not per sample
  std::vector<FibreSample> line;  // at the receiving process
  uint64_t mask = 0;
};

// A sample as bytes between processes: the two powers and the word.
constexpr size_t kSampleBytes = 4 + 4 + 8 + 1;
void pack(std::vector<uint8_t>& out, const FibreSample& s) {
  uint8_t b[kSampleBytes];
  std::memcpy(b, &s.signal_dbm, 4);
  std::memcpy(b + 4, &s.crosstalk_dbm, 4);
  std::memcpy(b + 8, &s.raw.lo, 8);
  b[16] = s.raw.hi;
  out.insert(out.end(), b, b + kSampleBytes);
}
FibreSample unpack(const uint8_t* b) {
  FibreSample s;
  std::memcpy(&s.signal_dbm, b, 4);
  std::memcpy(&s.crosstalk_dbm, b + 4, 4);
  std::memcpy(&s.raw.lo, b + 8, 8);
  s.raw.hi = b[16];
  return s;
}

firmware::FirmwareConfig firmware_config(const RackConfig& cfg, const MeshCalibration& cal) {
  firmware::FirmwareConfig fc;
  fc.shape = cfg.shape.server;
  fc.calibration = cal.elements;
  const double tau = cfg.server.mesh.tau_ns ? *cfg.server.mesh.tau_ns : preset_tau_ns(cfg.server.mesh.settle);
  fc.settle_cycles = static_cast<uint32_t>(std::max(4.0, std::ceil(cfg.settle_taus * tau / (1000.0 / cfg.server.clock_mhz))));
  fc.keep_unchanged_paths = true;  // a mesh carries other servers' circuits: move as few as the map allows
  return fc;
}

ServerConfig board_config(const RackConfig& cfg, int server, bool traced, bool collective) {
  ServerConfig s = server_config(cfg, server);
  s.trace_capable = traced;  // traced models run slower: only when waveforms may be asked for
  if (collective) s.traffic.load = 0;  // the lanes carry the collectives only
  return s;
}

// A sweep of collectives on the rack tenant (RackRunOptions::collective), run by the window
// thread at window ends, where every board stands at the same cycle.
struct CollectiveSweep {
  RackCollectiveOptions opt;
  protocol::ServerShape numbering;
  std::vector<Ring> rings;
  std::vector<int> ring_links;  // every rack link of the rings
  RackCollectiveResult result;
  size_t next = 0;              // the size to run next
  bool started = false, finished = false;
  std::unique_ptr<RingCollective> running;
  std::vector<std::unique_ptr<ServerSlice>> slices;
  std::vector<LinkReport> before;
  uint64_t start = 0, limit = 0;
};

// What serves a board on the network (RackServe): as `mxtb sim` has for its one board, the
// emulator's control block, the IPbus target behind it, the socket and the log.
struct Endpoint {
  EmulatorConfig cfg;
  std::unique_ptr<EmuLog> log;
  std::unique_ptr<EmuBlock> block;
  std::unique_ptr<RequestTarget> target;
  std::unique_ptr<IpbusServer> socket;
};

// A board of the rack in this process: the server, its clock under SystemC, the firmware's HAL
// and the firmware; served, its endpoint.
struct Board {
  Board(int index, const RackConfig& cfg, const firmware::FirmwareConfig& fc, bool traced, bool collective)
      : server(index),
        sim(board_config(cfg, index, traced, collective)),
        clock(fmt::format("server{}_clock", index).c_str(), sim),
        hal(sim, clock),
        fw(hal, fc) {}
  int server;
  ServerSim sim;
  ServerClock clock;
  ScHal hal;
  firmware::OcsFirmware fw;
  std::vector<std::pair<int, uint64_t>> commits;  // (bring-up phase, cycle it ended)
  std::unique_ptr<Endpoint> endpoint;
};

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// The links of the boards in this process on the rack's numbering (rack link = server * links +
// link), as a program over several boards sees them: at the window end where every board stands.
class RackLinks : public LinkView {
 public:
  RackLinks(const std::vector<std::unique_ptr<Board>>& boards, int first_server, int links)
      : boards_(boards), first_(first_server), links_(links) {}
  uint64_t now = 0;
  uint64_t cycle() const override { return now; }
  link::LinkState link_state(int l) const override { return sim(l).link_state(l % links_); }
  EndpointIdentity link_peer(int l) const override { return sim(l).link_peer(l % links_); }

 private:
  const ServerSim& sim(int l) const { return boards_[static_cast<size_t>(l / links_ - first_)]->sim; }
  const std::vector<std::unique_ptr<Board>>& boards_;
  const int first_, links_;
};

class RackRun {
 public:
  RackRun(const RackConfig& cfg, WindowExchange& ex, const RackRunOptions& opt)
      : cfg_(cfg), ex_(ex), opt_(opt), map_(bring_up_map(cfg)) {
    const int S = cfg.shape.servers();
    range_ = servers_of_rank(S, ex.size(), ex.rank());
    W_ = window_cycles(cfg);
    const double period = 1000.0 / cfg.server.clock_mhz;
    if (opt.collective) plan_sweep(*opt.collective);
    if (opt.serve && opt.serve->job && ex.size() != 1)
      throw RackError(fmt::format("rack: the tenant's job runs in one process (one job holds every rank and checks every element), "
                                  "not over {}",
                                  ex.size()));
    end_cycle_ = opt.serve || sweep_ ? uint64_t{1} << 62  // served: until stopped; a sweep: until it ends (each size has its limit)
                           : std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(cfg.run_us * 1000.0 / period)));  // whatever the window
    for (size_t i = 0; i < cfg.wiring.size(); ++i) {
      const auto& f = cfg.wiring[i];
      for (int dir = 0; dir < 2; ++dir) {
        Strand s;
        s.fibre = static_cast<int>(i);
        s.from = dir == 0 ? f.a : f.b;
        s.to = dir == 0 ? f.b : f.a;
        s.from_rank = rank_of_server(S, ex.size(), s.from.server);
        s.to_rank = rank_of_server(S, ex.size(), s.to.server);
        s.latency = fibre_latency_cycles(cfg, static_cast<int>(i));
        s.loss_db = static_cast<float>(cfg.lines[i].loss_db);
        for (const FibreFault& f : cfg.faults)
          if (f.fibre == s.fibre) s.faults.push_back(&f);
        if (local(s.to.server)) {
          s.line.assign(next_pow2(s.latency + 2ull * W_), FibreSample{});
          s.mask = s.line.size() - 1;
        }
        strands_.push_back(std::move(s));
      }
    }
    peers_ = peer_processes();
  }

  const std::vector<int>& peers() const { return peers_; }

 private:
  // The processes this one exchanges with: those holding the other end of a fibre of its servers.
  std::vector<int> peer_processes() const {
    std::vector<int> p;
    for (const Strand& s : strands_) {
      int other = -1;
      if (local(s.from.server) && !local(s.to.server)) other = s.to_rank;
      if (local(s.to.server) && !local(s.from.server)) other = s.from_rank;
      if (other >= 0 && std::find(p.begin(), p.end(), other) == p.end()) p.push_back(other);
    }
    std::sort(p.begin(), p.end());
    return p;
  }

 public:
  // Under SystemC: builds the boards, runs the rack to its end.
  void simulate() {
    build();
    if (!opt_.waves_dir.empty())
      for (auto& b : boards_) b->sim.start_waveform(fmt::format("{}/server{}.fst", opt_.waves_dir, b->server));
    t0_ = std::chrono::steady_clock::now();
    sc_core::sc_start();
    perf_.wall_s = seconds_since(t0_);
    rethrow_process_error();
    for (auto& b : boards_) b->sim.stop_waveform();
  }

  // Under SystemC: builds the boards, brings the tenant up, serves every board until stopped.
  void serve(const RackServe& sv);

  // The rack's jobs on every board's lanes (RackServe::job): one a tenant.
  void start_job() {
    TenantJobConfig jc;
    const protocol::ServerShape numbering = rack_numbering(cfg_.shape);
    for (int x = 0; x < numbering.xpus; ++x) jc.xpus.push_back(x);
    job_ = std::make_unique<JobSet>(static_cast<int>(rack_tenants(cfg_).size()), jc, numbering);
    const int links = cfg_.shape.server.links();
    job_links_ = std::make_unique<RackLinks>(boards_, range_.first, links);
    job_->advance(*job_links_);
    for (auto& b : boards_) {
      job_slices_.push_back(std::make_unique<ServerSlice>(*job_, b->server * links));
      b->sim.set_lane_program(job_slices_.back().get());
    }
  }

  void build() {
    const MeshCalibration cal = load_calibration(cfg_.calibration_file);
    const firmware::FirmwareConfig fc = firmware_config(cfg_, cal);
    route_cost_ns_ = fc.route_cost_ns;
    const bool traced = (opt_.serve && !opt_.serve->fst_dir.empty()) || (!opt_.serve && !opt_.waves_dir.empty());
    for (int s = range_.first; s < range_.end; ++s) {
      boards_.push_back(std::make_unique<Board>(s, cfg_, fc, traced, sweep_ != nullptr));
      Board& b = *boards_.back();
      b.clock.bound_by(&window_);
    }
    window_.end = std::min<uint64_t>(W_, end_cycle_);
    const double period = 1000.0 / cfg_.server.clock_mhz;
    // Phase 2 once every phase 1 is surely over: the routing's modelled time, the settle, and 30 us
    // for the firmware's start, the programming and the verify (each takes a few us).
    phase2_ns_ = static_cast<uint64_t>(static_cast<double>(fc.route_cost_ns) + std::max(fc.settle_cycles, fc.min_settle_cycles) * period + 30000.0);
    for (auto& bp : boards_) {
      Board* b = bp.get();
      sc_core::sc_spawn([this, b] { guard_process([&] { firmware_thread(*b); }); });
    }
    sc_core::sc_spawn([this] { guard_process([&] { window_thread(); }); });
  }

  // This process's servers: their reports (one JSON object each) and failed checks.
  std::vector<json> reports(std::vector<std::string>& failures) const;
  void write_events() const;
  RackPerf perf() const {
    RackPerf p = perf_;
    p.rank = ex_.rank();
    p.servers = range_.end - range_.first;
    p.cycles = 0;  // where the boards stand: run_us's end, or where serving stopped
    for (const auto& b : boards_) p.cycles = std::max(p.cycles, b->sim.cycle());
    return p;
  }
  uint32_t window() const { return W_; }

 private:
  bool local(int server) const { return server >= range_.first && server < range_.end; }
  Board& board(int server) const { return *boards_[static_cast<size_t>(server - range_.first)]; }

  void firmware_thread(Board& b) {
    const BringUp maps = bring_up_maps(map_.port_target[static_cast<size_t>(b.server)], cfg_.shape.server.links());
    std::string why;
    auto must = [&](mailbox::FwStatus st, const char* what) {
      if (st != mailbox::FwStatus::Ok)
        throw RackError(fmt::format("server {}: {}: {}: {}", b.server, what, mailbox::describe(st), why));
    };
    must(b.fw.init(&why), "firmware init");
    if (cfg_.tenant.xpu_of_position.empty()) {  // no tenant: the bare board, as `mxtb sim` serves one
      ++brought_up_;
      brought_up_event_.notify(sc_core::SC_ZERO_TIME);
      b.fw.run_until(uint64_t{1} << 62);
      return;
    }
    b.fw.set_spare_ready_whole_maps(cfg_.spare_ready);  // both phases' maps routed whole (spare_ready.h)
    must(b.fw.set_port_map(maps.phase1, &why), "bring-up phase 1 (lanes into the fibres)");
    b.commits.push_back({1, b.sim.cycle()});
    if (b.hal.now_ns() >= phase2_ns_)
      throw RackError(fmt::format("server {}: bring-up phase 1 ended at {} ns, after phase 2 was due ({} ns)", b.server, b.hal.now_ns(),
                                  phase2_ns_));
    b.fw.run_until(phase2_ns_);
    must(b.fw.set_port_map(maps.phase2, &why), "bring-up phase 2 (the whole map)");
    b.commits.push_back({2, b.sim.cycle()});
    b.fw.set_route_around_unchanged(true);  // the host's placements from here on
    ++brought_up_;
    brought_up_event_.notify(sc_core::SC_ZERO_TIME);
    b.fw.run_until(uint64_t{1} << 62);
  }

  void window_thread() {
    const int n = static_cast<int>(boards_.size());
    uint64_t last_progress = 0;
    uint64_t start = 0;
    for (;;) {
      while (window_.arrived < n) sc_core::wait(window_.arrival);
      window_.arrived = 0;
      if (job_) {
        job_links_->now = window_.end;
        job_->advance(*job_links_);
      }
      if (sweep_) {
        step_sweep(window_.end);
        if (sweep_->finished) {
          sc_core::sc_stop();
          return;
        }
      }
      if (stop_requested_ && stop_at_window_ == kNever) stop_at_window_ = perf_.windows + static_cast<uint64_t>(ex_.size());
      deliver(start, window_.end);
      start = window_.end;
      if (perf_.windows++ >= stop_at_window_) {  // served and stopped: every process at this window
        stopped_ = true;
        sc_core::sc_pause();
        return;
      }
      // A rack of servers in lockstep stands still at window ends only, whatever its partition:
      // once no request of this process runs (it ended within this window, or this process ran
      // the window for a peer), and, over processes, no peer's next window comes within the grace,
      // the rack stands here until a host or a peer moves it (the serve loop follows a peer).
      // A request that ends at this very time ends within it, whatever order the kernel runs this
      // time's processes in (which depends on the partition): let them run before deciding.
      if (pauses_at_window_ends() && thread_->work_running())
        for (int i = 0; i < 64 && sc_core::sc_pending_activity_at_current_time(); ++i) sc_core::wait(sc_core::SC_ZERO_TIME);
      bool stand_still = pauses_at_window_ends() && !stop_requested_ && !thread_->work_running() &&
                         (ex_.size() == 1 || !ex_.window_arrives(kFollowGrace));
      if (!opt_.serve && opt_.progress && ex_.rank() == 0 && seconds_since(t0_) > static_cast<double>(last_progress) + 5) {
        last_progress = static_cast<uint64_t>(seconds_since(t0_));
        std::fprintf(stderr, "mxtb rack: cycle %llu of %llu (%.0f %%)\n", static_cast<unsigned long long>(window_.end),
                     static_cast<unsigned long long>(end_cycle_), 100.0 * static_cast<double>(window_.end) / static_cast<double>(end_cycle_));
      }
      if (window_.end >= end_cycle_) {
        sc_core::sc_stop();
        return;
      }
      window_.end = std::min<uint64_t>(window_.end + W_, end_cycle_);  // the last window ends with the run
      window_.opened.notify(sc_core::SC_ZERO_TIME);
      if (stand_still) {
        for (auto& b : boards_) b->clock.hold();
        sc_core::sc_pause();  // the boards wake on `opened` only when the kernel runs again
      }
    }
  }

  // The window [T, E) has run on every server: what each fibre sent goes to its receiver's ring
  // (here, or through the exchange), and every receiver gets what arrives in [E, E + W).
  void deliver(uint64_t T, uint64_t E) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<uint8_t>> outbox(static_cast<size_t>(ex_.size()));
    for (Strand& s : strands_) {
      if (!local(s.from.server)) continue;
      const FibrePorts& fp = board(s.from.server).sim.fibres();
      const int k = fp.index(s.from.port);
      for (uint64_t t = T; t < E; ++t) {
        if (local(s.to.server)) s.line[t & s.mask] = fp.out(k, t);
        else pack(outbox[static_cast<size_t>(s.to_rank)], fp.out(k, t));
      }
    }
    if (ex_.size() > 1) {
      // Served, each message ends with the window its sender will stop at (kNever: none yet).
      if (opt_.serve)
        for (auto& m : outbox) m.insert(m.end(), reinterpret_cast<const uint8_t*>(&stop_at_window_),
                                        reinterpret_cast<const uint8_t*>(&stop_at_window_) + sizeof stop_at_window_);
      auto tx = std::chrono::steady_clock::now();
      std::vector<std::vector<uint8_t>> inbox = ex_.exchange(outbox);
      perf_.exchange_s += seconds_since(tx);
      if (opt_.serve)
        for (int r : peers_) {
          auto& m = inbox[static_cast<size_t>(r)];
          uint64_t theirs = kNever;
          if (m.size() < sizeof theirs)
            throw RackTransportError(fmt::format("rack: process {} sent {} bytes in the window at cycle {}, not even its stop window", r,
                                                 m.size(), T));
          std::memcpy(&theirs, m.data() + m.size() - sizeof theirs, sizeof theirs);
          m.resize(m.size() - sizeof theirs);
          stop_at_window_ = std::min(stop_at_window_, theirs);
        }
      std::vector<size_t> at(inbox.size(), 0);
      for (Strand& s : strands_) {
        if (!local(s.to.server) || local(s.from.server)) continue;
        const auto& in = inbox[static_cast<size_t>(s.from_rank)];
        size_t& pos = at[static_cast<size_t>(s.from_rank)];
        if (in.size() < pos + (E - T) * kSampleBytes)
          throw RackTransportError(fmt::format("rack: process {} sent {} bytes in the window at cycle {}, fewer than its fibres carry",
                                               s.from_rank, in.size(), T));
        for (uint64_t t = T; t < E; ++t, pos += kSampleBytes) s.line[t & s.mask] = unpack(in.data() + pos);
      }
    }
    for (Strand& s : strands_) {
      if (!local(s.to.server)) continue;
      FibrePorts& fp = board(s.to.server).sim.fibres();
      const int k = fp.index(s.to.port);
      for (uint64_t t = E; t < E + W_; ++t) {
        FibreSample x;
        if (t >= s.latency) x = s.line[(t - s.latency) & s.mask];
        bool dark = false;
        for (const FibreFault* f : s.faults) dark = dark || f->dark_at(t);
        if (dark) {
          x = FibreSample{};
        } else {
          x.signal_dbm -= s.loss_db;
          x.crosstalk_dbm -= s.loss_db;
        }
        fp.in(k, t) = x;
      }
    }
    perf_.deliver_s += seconds_since(t0);
  }

  void open_endpoint(Board& b, const RackServe& sv, SimThread& thread);
  void plan_sweep(const RackCollectiveOptions& o);
  void step_sweep(uint64_t E);
  void start_size(uint64_t E);
  void finish_size(uint64_t E);
  LinkReport ring_link_report(int rack_link) const {
    const int links = cfg_.shape.server.links();
    return board(rack_link / links).sim.link_report(rack_link % links);
  }

 public:
  std::optional<RackCollectiveResult> collective_result() const {
    if (!sweep_) return std::nullopt;
    return sweep_->result;
  }

 private:
  bool lockstep_over_processes() const {
    return opt_.serve && opt_.serve->time_mode == emu::TimeMode::Lockstep && ex_.size() > 1;
  }
  // Served in lockstep, a rack of several servers pauses at window ends (RackServe); a rack of one
  // where its request ends, as `mxtb sim` does.
  bool pauses_at_window_ends() const {
    return opt_.serve && opt_.serve->time_mode == emu::TimeMode::Lockstep && cfg_.shape.servers() > 1;
  }
  // This process's boards run until the window thread pauses them (lockstep over processes).
  void run_windows(SimThread& thread) {
    for (auto& b : boards_) b->clock.release();
    thread.run_until_paused();
  }
  void serve_requests(const RackServe& sv, SimThread& thread);

 public:
 private:
  const RackConfig& cfg_;
  WindowExchange& ex_;
  const RackRunOptions& opt_;
  std::vector<int> peers_;
  uint64_t route_cost_ns_ = 0;
  int brought_up_ = 0;  // this process's boards whose bring-up ended
  sc_core::sc_event brought_up_event_;
  bool stop_requested_ = false, stopped_ = false;
  SimThread* thread_ = nullptr;  // served
  std::unique_ptr<CollectiveSweep> sweep_;
  std::unique_ptr<JobSet> job_;  // RackServe::job
  std::unique_ptr<RackLinks> job_links_;
  std::vector<std::unique_ptr<ServerSlice>> job_slices_;
  // How long a process in lockstep that ran a window for a peer waits for the next one before it
  // stands still (a window of a few cycles takes well under a millisecond).
  static constexpr std::chrono::microseconds kFollowGrace{5000};
  uint64_t stop_at_window_ = kNever;
  const protocol::RackMap map_;
  ServerRange range_;
  uint32_t W_ = 1;
  uint64_t end_cycle_ = 0;
  uint64_t phase2_ns_ = 0;
  std::vector<Strand> strands_;
  std::vector<std::unique_ptr<Board>> boards_;
  ServerClock::Window window_;
  RackPerf perf_;
  std::chrono::steady_clock::time_point t0_;
};

void RackRun::open_endpoint(Board& b, const RackServe& sv, SimThread& thread) {
  auto ep = std::make_unique<Endpoint>();
  ep->cfg.scenario = cfg_.name;
  ep->cfg.server = b.sim.config();
  ep->cfg.calibration_file = cfg_.calibration_file;
  ep->cfg.settle_taus = cfg_.settle_taus;
  ep->cfg.route_cost_ns = route_cost_ns_;
  ep->cfg.time_mode = sv.time_mode;
  ep->cfg.rtf = sv.rtf;
  ep->cfg.listen = fmt::format("{}:{}", sv.host, sv.first_port ? sv.first_port + b.server : 0);
  ep->cfg.ipbus_target = sv.ipbus_target;
  ep->cfg.fst_path = sv.fst_dir.empty() ? "" : fmt::format("{}/server{}.fst", sv.fst_dir, b.server);
  ep->cfg.stall_report_ms = sv.stall_report_ms;
  ep->log = std::make_unique<EmuLog>(sv.time_mode, fmt::format("mxtb rack server {}", b.server));
  Endpoint* e = ep.get();
  ep->block = std::make_unique<EmuBlock>(ep->cfg, b.sim, b.clock, b.fw, job_.get(), thread, *ep->log, [e] { return e->target->stats(); });
  ep->target = sv.ipbus_target == IpbusTarget::Rtl ? make_rtl_target(b.sim, b.clock, *ep->block, thread, *ep->log, StallInjection{})
                                                   : make_cpp_target(b.sim, b.clock, *ep->block, thread, StallInjection{});
  if (sv.time_mode == emu::TimeMode::Lockstep) thread.hold_between_jobs(&b.clock);
  b.endpoint = std::move(ep);
}

void RackRun::serve(const RackServe& sv) {
  build();
  if (sv.job) start_job();
  SimThread thread(sv.time_mode, sv.rtf);
  thread_ = &thread;
  thread.abandon_when([this] { return stopped_; });
  if (pauses_at_window_ends()) thread.owner_pauses();
  for (auto& b : boards_) open_endpoint(*b, sv, thread);
  thread.after_each_run([this] {
    for (auto& b : boards_) b->endpoint->block->sync_events();
  });
  t0_ = std::chrono::steady_clock::now();
  // The boards answer once the tenant is up on every one of this process's (the bring-up's
  // phases are at fixed simulated times, so the other processes' are up too).
  thread.set_activity("bringing the rack's tenant up");
  const int n = static_cast<int>(boards_.size());
  thread.run_in_sim([&] {
    while (brought_up_ < n) sc_core::wait(brought_up_event_);
  });
  for (auto& bp : boards_) {
    Endpoint& e = *bp->endpoint;
    try {
      e.socket = std::make_unique<IpbusServer>(
          e.cfg.listen, [&e](protocol::ipbus::Fault f, const std::string& what) { e.log->ipbus_fault(f, what); }, e.target->socket_mode());
    } catch (const std::exception& ex) {
      throw RackError(fmt::format("server {}: {}", bp->server, ex.what()));
    }
    if (sv.stall_report_ms > 0)
      e.socket->watch_stalls({std::chrono::milliseconds(sv.stall_report_ms), [&thread] { return thread.describe_activity(); },
                              [&e](const std::string& line) { e.log->line(line); }});
    e.log->line(fmt::format("rack {}, server {} of {} (XPUs {}-{}), seed {}, IPbus target {}{}", cfg_.name, bp->server, cfg_.shape.servers(),
                            bp->sim.config().xpu_base, bp->sim.config().xpu_base + cfg_.shape.server.xpus - 1, bp->sim.config().seed,
                            e.target->describe(), sv.time_mode == emu::TimeMode::Paced ? fmt::format(", real-time factor {}", sv.rtf) : ""));
    // Bound to every interface (a cluster's node: --listen 0.0.0.0:PORT), the line names the node
    // by its hostname, the address a host elsewhere reaches it by.
    std::string address = e.socket->local_address();
    if (address.rfind("0.0.0.0:", 0) == 0) {
      char host[256] = {};
      if (gethostname(host, sizeof host - 1) == 0) address = host + address.substr(7);
    }
    std::printf("listening on udp://%s server %d\n", address.c_str(), bp->server);
  }
  std::fflush(stdout);
  for (auto& b : boards_) b->endpoint->target->start(*b->endpoint->socket);
  serve_requests(sv, thread);
  for (auto& b : boards_) b->endpoint->target->stop();
  // Every process stops at the same window (RackServe): the others' boards still need this
  // process's fibres until then.
  if (ex_.size() > 1) {
    stop_requested_ = true;
    thread.set_activity("stopping: running to the window every process stops at");
    while (!stopped_) {
      if (sv.time_mode == emu::TimeMode::Lockstep) run_windows(thread);
      else thread.free_run_slice();
    }
  }
  perf_.wall_s = seconds_since(t0_);
  for (auto& b : boards_)
    b->endpoint->log->line(fmt::format("stopped at simulated time {:.3f} us, cycle {}", sim_now_ns() / 1000.0, b->sim.cycle()));
}

// The serve loop of `mxtb sim` (emulator.cpp) for several boards: every board's requests in turn;
// lockstep waits for the next, free and paced run the rack between requests, paced then waiting
// for one until wall time catches up.
void RackRun::serve_requests(const RackServe& sv, SimThread& thread) {
  thread.start_clock();
  ServeUntil until(sv.stop_after_wall_s);
  const size_t n = boards_.size();
  const auto turn = std::chrono::microseconds(std::max<int64_t>(50, 2000 / static_cast<int64_t>(n)));
  size_t next = 0;
  auto serve_any = [&](std::chrono::microseconds wait) {
    try {
      for (size_t i = 0; i < n; ++i)
        if (boards_[i]->endpoint->target->serve_one(std::chrono::microseconds(0))) return true;
      if (wait.count() == 0) return false;
      return boards_[next++ % n]->endpoint->target->serve_one(std::min(wait, turn));
    } catch (const SimThread::Abandoned& e) {  // a request cut short by the rack's stop: ends the loop
      boards_[0]->endpoint->log->line(e.what());
      return false;
    }
  };
  while (!stopped_ && !until.over()) {
    if (sv.time_mode == emu::TimeMode::Lockstep) {
      thread.set_activity("waiting for a request (lockstep: the rack's time stands still)");
      serve_any(turn);
      if (lockstep_over_processes() && !stopped_ && ex_.window_arrives(std::chrono::microseconds(0))) {
        thread.set_activity("running windows a peer's host asked for (lockstep)");
        run_windows(thread);
      }
      continue;
    }
    if (serve_any(std::chrono::microseconds(0))) continue;
    thread.set_activity("running the rack between requests");
    thread.free_run_slice();
    if (sv.time_mode == emu::TimeMode::Paced) {
      thread.set_activity("waiting for a request while paced to real time");
      for (;;) {
        const auto ahead = thread.pace_target() - std::chrono::steady_clock::now();
        if (ahead <= std::chrono::microseconds(0)) break;
        serve_any(std::chrono::duration_cast<std::chrono::microseconds>(ahead));
      }
    }
  }
}

void RackRun::plan_sweep(const RackCollectiveOptions& o) {
  if (ex_.size() != 1)
    throw RackError(fmt::format("rack: a collective runs in one process (one RingCollective holds every rank and checks every "
                                "element), not over {}",
                                ex_.size()));
  auto s = std::make_unique<CollectiveSweep>();
  s->opt = o;
  s->numbering = rack_numbering(cfg_.shape);
  s->result.ranks = protocol::rack_ring_xpus(cfg_.shape, cfg_.tenant);
  s->rings = rack_ring_plan(cfg_.shape, map_, s->result.ranks);
  for (const Ring& r : s->rings)
    for (const RingHop& h : r.hops) {
      s->ring_links.push_back(h.tx_link);
      s->ring_links.push_back(h.rx_link);
    }
  std::sort(s->ring_links.begin(), s->ring_links.end());
  s->ring_links.erase(std::unique(s->ring_links.begin(), s->ring_links.end()), s->ring_links.end());
  s->result.rings = static_cast<int>(s->rings.size());
  const int xpus = cfg_.shape.server.xpus;
  const size_t n = s->result.ranks.size();
  for (size_t p = 0; p < n; ++p) s->result.fibre_hops += s->result.ranks[p] / xpus != s->result.ranks[(p + 1) % n] / xpus;
  // Every size's spec checked before anything runs.
  for (uint64_t bytes : o.sizes) {
    CollectiveSpec spec{o.op, o.type, bytes / element_bytes(o.type), s->result.ranks, s->rings, o.seed, o.grain_words, Algorithm::Ring};
    if (std::string why = check_spec(spec, s->numbering); !why.empty())
      throw RackError(fmt::format("rack collective of {} B: {}", bytes, why));
  }
  sweep_ = std::move(s);
}

void RackRun::step_sweep(uint64_t E) {
  CollectiveSweep& s = *sweep_;
  if (s.running) {
    if (!s.running->done() && E - s.start < s.limit) return;
    finish_size(E);
  } else if (!s.started) {
    if (brought_up_ < static_cast<int>(boards_.size())) return;
    for (int l : s.ring_links)
      if (ring_link_report(l).state != link::LinkState::Active) return;
    s.started = true;
    s.result.all_active_cycle = E;
  }
  if (s.next == s.opt.sizes.size()) {
    s.finished = true;
    return;
  }
  start_size(E);
}

void RackRun::start_size(uint64_t E) {
  CollectiveSweep& s = *sweep_;
  const uint64_t bytes = s.opt.sizes[s.next];
  CollectiveSpec spec{s.opt.op, s.opt.type, bytes / element_bytes(s.opt.type), s.result.ranks, s.rings, s.opt.seed, s.opt.grain_words,
                      Algorithm::Ring};
  s.running = std::make_unique<RingCollective>(spec, s.numbering);
  s.running->start(E);
  s.start = E;
  s.limit = collective_cycle_limit(*s.running);
  s.before.clear();
  for (int l : s.ring_links) s.before.push_back(ring_link_report(l));
  const int links = cfg_.shape.server.links();
  for (auto& b : boards_) {
    s.slices.push_back(std::make_unique<ServerSlice>(*s.running, b->server * links));
    b->sim.set_lane_program(s.slices.back().get());
  }
}

void RackRun::finish_size(uint64_t E) {
  CollectiveSweep& s = *sweep_;
  std::vector<LinkReport> after;
  for (int l : s.ring_links) after.push_back(ring_link_report(l));
  const CollectiveRow row = collective_row(*s.running, s.start, E, 1000.0 / cfg_.server.clock_mhz, s.before, after);
  s.result.rows.push_back(row);
  for (auto& b : boards_) b->sim.set_lane_program(nullptr);
  s.slices.clear();
  s.running.reset();
  ++s.next;
}

bool fibre_cut(const RackConfig& cfg, int fibre, uint64_t at_end) {
  for (const FibreFault& f : cfg.faults)
    if (f.fibre == fibre && f.kind == FibreFault::Kind::Cut && f.at_cycle < at_end) return true;
  return false;
}

std::vector<json> RackRun::reports(std::vector<std::string>& failures) const {
  std::vector<json> out;
  const protocol::ServerShape& shape = cfg_.shape.server;
  for (const auto& bp : boards_) {
    const Board& b = *bp;
    const ServerSim& sim = b.sim;
    std::vector<int> lane_fibre(static_cast<size_t>(shape.links()), -1);
    for (const auto& c : map_.circuits)
      for (const auto* l : {&c.a, &c.b})
        if (l->server == b.server) lane_fibre[static_cast<size_t>(l->xpu * shape.lanes_per_xpu + l->lane)] = c.fibre;
    auto fail = [&](const std::string& what) { failures.push_back(fmt::format("server {}: {}", b.server, what)); };
    json lanes = json::array();
    uint64_t all_active_cycle = 0;
    bool all_active = true;
    for (int link = 0; link < shape.links(); ++link) {
      const protocol::RackLane& want = map_.expected_peer[static_cast<size_t>(b.server)][static_cast<size_t>(link)];
      if (want.server < 0) continue;
      const LinkReport r = sim.link_report(link);
      const int fibre = lane_fibre[static_cast<size_t>(link)];
      const bool cut = fibre >= 0 && fibre_cut(cfg_, fibre, end_cycle_);
      const bool active = r.state == link::LinkState::Active;
      lanes.push_back({{"link", link},
                       {"xpu", link / shape.lanes_per_xpu},
                       {"lane", link % shape.lanes_per_xpu},
                       {"peer_expected", protocol::to_string(want)},
                       {"fibre", fibre >= 0 ? json(fibre) : json(nullptr)},
                       {"state", std::string(link::to_string(r.state))},
                       {"reason", std::string(link::to_string(r.reason))},
                       {"peer", {{"rack_xpu", r.peer.xpu}, {"lane", r.peer.lane}}},
                       {"frames_tx", r.frames_tx},
                       {"frames_rx", r.frames_rx},
                       {"crc_errors", r.crc_errors},
                       {"replays", r.replays},
                       {"retrains", r.retrains},
                       {"messages_delivered", r.messages_delivered},
                       {"scoreboard_errors", r.scoreboard_errors},
                       {"words_lost", r.words_lost},
                       {"first_error", r.first_error}});
      const std::string name = fmt::format("XPU {} lane {} (to {}{})", link / shape.lanes_per_xpu, link % shape.lanes_per_xpu,
                                           protocol::to_string(want), fibre >= 0 ? fmt::format(" over fibre {}", fibre) : "");
      if (cut) {
        if (active) fail(name + ": Active although its fibre was cut");
        continue;
      }
      if (!active) {
        all_active = false;
        fail(fmt::format("{}: {} ({}) at the end, not Active", name, link::to_string(r.state), link::to_string(r.reason)));
        continue;
      }
      const int want_xpu = xpu_base(cfg_, want.server) + want.xpu;
      if (static_cast<int>(r.peer.xpu) != want_xpu || static_cast<int>(r.peer.lane) != want.lane)
        fail(fmt::format("{}: trained with rack XPU {} lane {}, not rack XPU {}", name, r.peer.xpu, r.peer.lane, want_xpu));
      // A sweep's or a job's lanes carry their words, not the traffic's messages.
      if (r.messages_delivered == 0 && !sweep_ && !job_) fail(name + ": Active but delivered no message");
    }
    for (const LinkTransition& t : sim.transitions())
      if (map_.expected_peer[static_cast<size_t>(b.server)][static_cast<size_t>(t.link)].server >= 0 && t.to == link::LinkState::Active)
        all_active_cycle = std::max(all_active_cycle, t.cycle);
    if (sim.scoreboard_errors() != 0) fail(fmt::format("{} scoreboard errors", sim.scoreboard_errors()));
    json commits = json::array();
    for (const auto& [phase, cycle] : b.commits) commits.push_back({{"phase", phase}, {"cycle", cycle}});
    out.push_back({{"server", b.server},
                   {"seed", sim.config().seed},
                   {"cycles", sim.cycle()},
                   {"bring_up_commits", commits},
                   {"all_active_cycle", all_active ? json(all_active_cycle) : json(nullptr)},
                   {"transitions", sim.transitions().size()},
                   {"controller_events", b.fw.events().size()},
                   {"messages_delivered", sim.messages_delivered()},
                   {"scoreboard_errors", sim.scoreboard_errors()},
                   {"words_lost", sim.scoreboard_words_lost()},
                   {"dac_writes", sim.dac_writes()},
                   {"pd_reads", sim.pd_reads()},
                   {"lanes", lanes}});
  }
  return out;
}

void RackRun::write_events() const {
  if (opt_.events_dir.empty()) return;
  for (const auto& bp : boards_) {
    const std::string path = fmt::format("{}/server{}.events.jsonl", opt_.events_dir, bp->server);
    std::ofstream out(path);
    if (!out) throw RackError(fmt::format("cannot write {}", path));
    for (const LinkTransition& t : bp->sim.transitions())
      out << json{{"cycle", t.cycle},
                  {"link", t.link},
                  {"from", std::string(link::to_string(t.from))},
                  {"to", std::string(link::to_string(t.to))},
                  {"reason", std::string(link::to_string(t.reason))}}
                 .dump()
          << '\n';
    for (const firmware::LogEvent& e : bp->fw.events())
      out << json{{"cycle", e.cycle}, {"controller_event", fmt::format("{:#010x}", e.info)}}.dump() << '\n';
  }
}

}  // namespace

RackOutcome run_rack(const RackConfig& cfg, WindowExchange& ex, const RackRunOptions& opt) {
  check_rack(cfg);
  const int S = cfg.shape.servers();
  if (ex.size() > S)
    throw RackError(fmt::format("rack: {} processes for {} servers: each process holds at least one server", ex.size(), S));
  const ServerRange range = servers_of_rank(S, ex.size(), ex.rank());
  ex.introduce(range.end - range.first == 1 ? fmt::format("server {}", range.first)
                                            : fmt::format("servers {}-{}", range.first, range.end - 1));
  // By content: the same file under another path is the same rack. Each process names the file it read.
  try {
    ex.check_same("rack file", "digest " + opt.config_digest);
  } catch (const RackTransportError& e) {
    // Every process names every file, not only its own: mpiexec may end the others before they
    // print (a fresh-clone run saw only process 0's message). The transport is still sound here.
    std::string paths;
    try {
      ex.check_same("the rack file's path", opt.config_source);
    } catch (const RackTransportError& p) {
      paths = std::string("; ") + p.what();
    }
    throw RackTransportError(fmt::format("{}{}; this process ({}) read {}", e.what(), paths, ex.rank(), opt.config_source));
  }
  RackRun run(cfg, ex, opt);
  ex.set_peers(run.peers());
  int rc = run_under_systemc([&] {
    if (opt.serve) run.serve(*opt.serve);
    else run.simulate();
    return 0;
  });
  if (rc != 0) throw RackError("rack: SystemC reported an error");
  std::vector<std::string> failures;
  std::vector<json> mine = run.reports(failures);
  run.write_events();
  json part = {{"reports", mine}, {"failures", failures}};
  RackOutcome out;
  out.window_cycles = run.window();
  out.collective = run.collective_result();
  std::vector<std::string> parts = ex.gather(part.dump());
  out.perf = ex.gather(run.perf().to_json());
  for (const std::string& p : parts) {
    json j = json::parse(p);
    for (const json& r : j.at("reports")) out.server_reports.push_back(r.dump());
    for (const json& f : j.at("failures")) out.failures.push_back(f.get<std::string>());
  }
  return out;
}

}  // namespace mxtb::sim::rack
