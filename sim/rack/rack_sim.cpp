#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: a firmware thread per board, the window thread
#include "sim/rack/rack_sim.h"

#include "firmware/ocs_firmware.h"
#include "sim/common/sc_runner.h"
#include "sim/server/server_sc.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <mxtb/link_defs.h>

#include <systemc>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
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
  return fc;
}

// A board of the rack in this process: the server, its clock under SystemC, the firmware's HAL
// and the firmware.
struct Board {
  Board(int index, const RackConfig& cfg, const firmware::FirmwareConfig& fc)
      : server(index),
        sim(server_config(cfg, index)),
        clock(fmt::format("server{}_clock", index).c_str(), sim),
        hal(sim, clock),
        fw(hal, fc) {}
  int server;
  ServerSim sim;
  ServerClock clock;
  ScHal hal;
  firmware::OcsFirmware fw;
  std::vector<std::pair<int, uint64_t>> commits;  // (bring-up phase, cycle it ended)
};

// The bring-up of a rack tenant's circuits, on every board at once at fixed simulated times, so
// that it is the same whatever the partition. A commit verifies each circuit's light at its
// output; a circuit arriving through a fibre is lit only once the far board has sent its lane's
// light into that fibre. So: phase 1, every board commits its lanes' light out into the fibres
// (and its circuits inside the server); phase 2, once every board's phase 1 is over, the whole map.
struct BringUp {
  std::vector<int> phase1, phase2;  // port maps
};
BringUp bring_up_maps(const std::vector<int>& full, int links) {
  BringUp b{full, full};
  for (size_t p = static_cast<size_t>(links); p < full.size(); ++p) b.phase1[p] = -1;  // light from the fibres: not yet
  return b;
}

class RackRun {
 public:
  RackRun(const RackConfig& cfg, WindowExchange& ex, const RackRunOptions& opt)
      : cfg_(cfg), ex_(ex), opt_(opt), map_(protocol::rack_torus_map(cfg.shape, cfg.wiring, cfg.tenant)) {
    const int S = cfg.shape.servers();
    range_ = servers_of_rank(S, ex.size(), ex.rank());
    W_ = window_cycles(cfg);
    const double period = 1000.0 / cfg.server.clock_mhz;
    end_cycle_ = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(cfg.run_us * 1000.0 / period)));  // whatever the window
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
  }

  std::vector<int> peers() const {
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

  // Under SystemC: builds the boards, runs the rack to its end.
  void simulate() {
    const MeshCalibration cal = load_calibration(cfg_.calibration_file);
    const firmware::FirmwareConfig fc = firmware_config(cfg_, cal);
    for (int s = range_.first; s < range_.end; ++s) {
      boards_.push_back(std::make_unique<Board>(s, cfg_, fc));
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
    t0_ = std::chrono::steady_clock::now();
    sc_core::sc_start();
    perf_.wall_s = seconds_since(t0_);
    rethrow_process_error();
  }

  // This process's servers: their reports (one JSON object each) and failed checks.
  std::vector<json> reports(std::vector<std::string>& failures) const;
  void write_events() const;
  RackPerf perf() const {
    RackPerf p = perf_;
    p.rank = ex_.rank();
    p.servers = range_.end - range_.first;
    p.cycles = end_cycle_;
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
    must(b.fw.set_port_map(maps.phase1, &why), "bring-up phase 1 (lanes into the fibres)");
    b.commits.push_back({1, b.sim.cycle()});
    if (b.hal.now_ns() >= phase2_ns_)
      throw RackError(fmt::format("server {}: bring-up phase 1 ended at {} ns, after phase 2 was due ({} ns)", b.server, b.hal.now_ns(),
                                  phase2_ns_));
    b.fw.run_until(phase2_ns_);
    must(b.fw.set_port_map(maps.phase2, &why), "bring-up phase 2 (the whole map)");
    b.commits.push_back({2, b.sim.cycle()});
    b.fw.run_until(uint64_t{1} << 62);
  }

  void window_thread() {
    const int n = static_cast<int>(boards_.size());
    uint64_t last_progress = 0;
    uint64_t start = 0;
    for (;;) {
      while (window_.arrived < n) sc_core::wait(window_.arrival);
      window_.arrived = 0;
      deliver(start, window_.end);
      start = window_.end;
      ++perf_.windows;
      if (opt_.progress && ex_.rank() == 0 && seconds_since(t0_) > static_cast<double>(last_progress) + 5) {
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
      auto tx = std::chrono::steady_clock::now();
      std::vector<std::vector<uint8_t>> inbox = ex_.exchange(outbox);
      perf_.exchange_s += seconds_since(tx);
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

  const RackConfig& cfg_;
  WindowExchange& ex_;
  const RackRunOptions& opt_;
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
      if (r.messages_delivered == 0) fail(name + ": Active but delivered no message");
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
    throw RackTransportError(fmt::format("{}; this process ({}) read {}", e.what(), ex.rank(), opt.config_source));
  }
  RackRun run(cfg, ex, opt);
  ex.set_peers(run.peers());
  int rc = run_under_systemc([&] {
    run.simulate();
    return 0;
  });
  if (rc != 0) throw RackError("rack: SystemC reported an error");
  std::vector<std::string> failures;
  std::vector<json> mine = run.reports(failures);
  run.write_events();
  json part = {{"reports", mine}, {"failures", failures}};
  RackOutcome out;
  out.window_cycles = run.window();
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
