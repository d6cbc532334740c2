#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "apps/mxtb/bench_server.h"

#include "protocol/fabric_map.h"
#include "sim/server/loop_hal.h"
#include "firmware/ocs_firmware.h"
#include "sim/common/sc_runner.h"
#include "sim/server/server_sc.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace mxtb::app {

using namespace sim;

// ---- the bench ----

std::vector<int> bench_port_map(const protocol::ServerShape& shape, const std::vector<int>& order) {
  protocol::FabricMap m = protocol::torus_map(shape, protocol::TorusPlacement{2, 2, order});
  std::vector<int> perm = m.port_target;
  // Every XPU outside the tenant: its lanes in pairs (0-1, 2-3, ...), so that each carries traffic.
  for (int x = 0; x < shape.xpus; ++x) {
    bool in_tenant = false;
    for (int t : order) in_tenant = in_tenant || t == x;
    if (in_tenant) continue;
    for (int l = 0; l + 1 < shape.lanes_per_xpu; l += 2) {
      int a = x * shape.lanes_per_xpu + l, b = a + 1;
      perm[static_cast<size_t>(a)] = b;
      perm[static_cast<size_t>(b)] = a;
    }
  }
  return perm;
}

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Mark {
  Clock::time_point wall = Clock::now();
  double cpu = cpu_seconds();
  uint64_t cycle = 0;
};

PhaseFigures between(const Mark& a, const Mark& b) {
  return PhaseFigures{b.cycle - a.cycle, std::chrono::duration<double>(b.wall - a.wall).count(), b.cpu - a.cpu};
}

bool all_active(const ServerSim& sim) {
  for (int i = 0; i < sim.links(); ++i)
    if (sim.link_state(i) != link::LinkState::Active) return false;
  return true;
}

// FNV-1a over everything a run leaves behind that the engines must agree on.
class Digest {
 public:
  void add(uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h_ ^= (v >> (8 * b)) & 0xFF;
      h_ *= 0x100000001b3ull;
    }
  }
  std::string hex() const { return fmt::format("{:016x}", h_); }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string digest_of(const ServerSim& sim) {
  Digest d;
  d.add(sim.cycle());
  for (const auto& t : sim.transitions()) {
    d.add(t.cycle);
    d.add(static_cast<uint64_t>(t.link));
    d.add(static_cast<uint64_t>(t.from) << 16 | static_cast<uint64_t>(t.to) << 8 | static_cast<uint64_t>(t.reason));
  }
  for (int i = 0; i < sim.links(); ++i) {
    LinkReport r = sim.link_report(i);
    for (uint64_t v : {uint64_t(r.state), uint64_t(r.reason), uint64_t(r.peer.xpu), uint64_t(r.peer.lane), r.frames_tx,
                       r.frames_rx, r.crc_errors, r.replays, r.retrains, r.messages_sent, r.messages_delivered,
                       r.scoreboard_errors, r.skipped_words, r.resyncs})
      d.add(v);
  }
  d.add(sim.dac_writes());
  d.add(sim.pd_reads());
  return d.hex();
}

ServerConfig server_config(const ServerBenchConfig& cfg, const ServerBenchCase& c, bool profile) {
  ServerConfig s;
  s.name = "bench-server";
  s.seed = cfg.seed;
  s.shape = cfg.shape;
  s.mesh.ports = cfg.shape.mesh_ports;
  s.mesh.settle = SettlePreset::ThermoOptic;
  s.engine = c.engine;
  s.threads = c.threads;
  s.profile = profile;
  return s;
}

firmware::FirmwareConfig firmware_config(const ServerBenchConfig& cfg, const ServerSim& sim) {
  MeshCalibration cal = load_calibration(cfg.calibration_file);
  if (cal.ports != cfg.shape.mesh_ports)
    throw std::invalid_argument(fmt::format("{}: a {}-port calibration for a {}-port mesh", cfg.calibration_file, cal.ports,
                                            cfg.shape.mesh_ports));
  firmware::FirmwareConfig fc;
  fc.shape = cfg.shape;
  fc.calibration = cal.elements;
  fc.settle_cycles = static_cast<uint32_t>(std::max(4.0, std::ceil(5 * sim.mesh().tau_ns() / sim.period_ns())));
  return fc;
}

constexpr uint64_t kBringUpLimitCycles = 3'000'000;

void must(mailbox::FwStatus s, const std::string& why, const char* what) {
  if (s != mailbox::FwStatus::Ok)
    throw std::runtime_error(fmt::format("bench server: {}: {}: {}", what, mailbox::describe(s), why));
}

// The plain loop: bring-up (not timed), saturating traffic with the firmware's idle loop, a
// reconfiguration to the re-placed tenant, every circuit Active again.
ServerBenchRun run_loop(const ServerBenchConfig& cfg, const ServerBenchCase& c, bool profile,
                        const std::vector<int>& map1, const std::vector<int>& map2) {
  ServerBenchRun run;
  run.c = c;
  run.harness = "loop";
  run.profiled = profile;
  ServerSim sim(server_config(cfg, c, profile));
  LoopHal hal(sim);
  firmware::OcsFirmware fw(hal, firmware_config(cfg, sim));
  std::string why;
  must(fw.init(&why), why, "firmware init");
  must(fw.set_port_map(map1, &why), why, "programming the circuits");
  while (!all_active(sim)) {
    if (sim.cycle() > kBringUpLimitCycles) throw std::runtime_error("bench server: not every circuit trained");
    sim.step(1000);
  }
  Mark a;
  a.cycle = sim.cycle();
  ServerProfile pa = sim.profile();
  uint64_t messages0 = sim.messages_delivered();
  fw.run_until(static_cast<uint64_t>(std::llround(sim.now_ns() + static_cast<double>(cfg.traffic_cycles) * sim.period_ns())));
  Mark b;
  b.cycle = sim.cycle();
  ServerProfile pb = sim.profile();
  run.messages = sim.messages_delivered() - messages0;
  must(fw.set_port_map(map2, &why), why, "reconfiguring");
  while (!all_active(sim)) {
    if (sim.cycle() > b.cycle + kBringUpLimitCycles) throw std::runtime_error("bench server: not every circuit retrained");
    sim.step(1000);
  }
  Mark e;
  e.cycle = sim.cycle();
  run.traffic = between(a, b);
  run.reconfig = between(b, e);
  run.digest = digest_of(sim);
  if (profile) {
    run.traffic_profile = pb - pa;
    run.reconfig_profile = sim.profile() - pb;
  }
  return run;
}

ServerBenchRun run_systemc(const ServerBenchConfig& cfg, const ServerBenchCase& c, const std::vector<int>& map1,
                           const std::vector<int>& map2) {
  ServerBenchRun run;
  run.c = c;
  run.harness = "systemc";
  std::string error;
  int rc = run_under_systemc([&] {
    ServerSim sim(server_config(cfg, c, false));
    ServerClock clock("clock", sim);
    ScHal hal(sim, clock);
    firmware::OcsFirmware fw(hal, firmware_config(cfg, sim));
    sc_core::sc_spawn([&] {
      try {
        auto wait_all_active = [&] {
          const uint64_t limit = sim.cycle() + kBringUpLimitCycles;
          while (!all_active(sim)) {
            if (sim.cycle() > limit) throw std::runtime_error("bench server: not every circuit trained");
            sc_core::wait(sc_core::sc_time(1, sc_core::SC_US), clock.link_event());
          }
        };
        std::string why;
        must(fw.init(&why), why, "firmware init");
        must(fw.set_port_map(map1, &why), why, "programming the circuits");
        wait_all_active();
        Mark a;
        a.cycle = sim.cycle();
        uint64_t messages0 = sim.messages_delivered();
        fw.run_until(hal.now_ns() + static_cast<uint64_t>(std::llround(static_cast<double>(cfg.traffic_cycles) * sim.period_ns())));
        Mark b;
        b.cycle = sim.cycle();
        run.messages = sim.messages_delivered() - messages0;
        must(fw.set_port_map(map2, &why), why, "reconfiguring");
        wait_all_active();
        Mark e;
        e.cycle = sim.cycle();
        run.traffic = between(a, b);
        run.reconfig = between(b, e);
        run.digest = digest_of(sim);
      } catch (const std::exception& x) {
        error = x.what();
      }
      sc_core::sc_stop();
    });
    sc_core::sc_start();
    rethrow_process_error();  // a failed RTL assertion in the clock thread
    return 0;
  });
  if (!error.empty()) throw std::runtime_error(error);
  if (rc != 0) throw std::runtime_error("bench server: SystemC reported an error");
  return run;
}

bool same_case(const ServerBenchCase& a, const ServerBenchCase& b) { return a.engine == b.engine && a.threads == b.threads; }

nlohmann::json phase_json(const PhaseFigures& p) {
  return {{"cycles", p.cycles}, {"wall_s", p.wall_s}, {"cpu_s", p.cpu_s}, {"cycles_per_s", p.cycles_per_s()}};
}

}  // namespace

ServerBenchResult run_server_bench(const ServerBenchConfig& cfg) {
  if (cfg.cases.empty()) throw std::invalid_argument("bench server: no engine to run");
  if (cfg.rounds < 1) throw std::invalid_argument("bench server: rounds must be at least 1");
  if (cfg.traffic_cycles < 1000) throw std::invalid_argument("bench server: traffic_cycles must be at least 1000");
  if (cfg.shape.xpus < 4 || cfg.shape.lanes_per_xpu != 4)
    throw std::invalid_argument("bench server: the bench's tenant is a 2x2 torus: at least 4 XPUs of 4 lanes");
  ServerBenchResult res;
  res.config = cfg;
  res.hardware_threads = std::thread::hardware_concurrency();
  const std::vector<int> map1 = bench_port_map(cfg.shape, {0, 1, 2, 3});
  const std::vector<int> map2 = bench_port_map(cfg.shape, {0, 1, 3, 2});
  for (int r = 0; r < cfg.rounds; ++r)
    for (const auto& c : cfg.cases) res.runs.push_back(run_loop(cfg, c, false, map1, map2));
  if (cfg.breakdown)
    for (const auto& c : cfg.cases) res.runs.push_back(run_loop(cfg, c, true, map1, map2));
  for (const auto& run : res.runs) res.identical = res.identical && run.digest == res.runs.front().digest;
  if (cfg.breakdown) {
    const int links = cfg.shape.xpus * cfg.shape.lanes_per_xpu;
    std::vector<int> threads;
    for (int p = 1; p <= std::min(links, 16); p *= 2) threads.push_back(p);
    res.scaling = predict_scaling(res, links, threads);
  }
  if (cfg.systemc) {
    // The engine `mxtb sim` runs by default: the fast one on one thread, when it is among the cases.
    ServerBenchCase sc = cfg.cases.back();
    for (const auto& c : cfg.cases)
      if (c.engine == ServerEngine::Fast && c.threads == 1) sc = c;
    res.runs.push_back(run_systemc(cfg, sc, map1, map2));
  }
  return res;
}

ScalingModel predict_scaling(const ServerBenchResult& r, int links, const std::vector<int>& threads) {
  ScalingModel m;
  m.links = links;
  const ServerBenchRun *one = nullptr, *many = nullptr;
  for (const auto& run : r.runs) {
    if (!run.profiled || run.c.engine != ServerEngine::Fast) continue;
    if (run.c.threads == 1) one = &run;
    else if (!many) many = &run;
  }
  if (!one || !many || one->traffic_profile.cycles == 0 || many->traffic_profile.windows == 0) return m;
  const ServerProfile& p1 = one->traffic_profile;
  const int n1 = r.config.shape.xpus * r.config.shape.lanes_per_xpu;
  const double cycles = static_cast<double>(p1.cycles);
  // Wall seconds measured inside the run, turned into CPU seconds by the phase's CPU/wall ratio.
  const double cpu_per_wall = one->traffic.wall_s > 0 ? std::min(1.0, one->traffic.cpu_s / one->traffic.wall_s) : 1.0;
  m.link_us = (p1.links_s + p1.xpu_s + p1.stage_s) * cpu_per_wall * 1e6 / cycles / n1;
  m.coordinator_us = std::max(0.0, p1.step_s - p1.links_s - p1.xpu_s - p1.stage_s) * cpu_per_wall * 1e6 / cycles;
  const ServerProfile& pn = many->traffic_profile;
  // A link's checkpoint in the fastest window (a copy of a few kilobytes: preemption only lengthens
  // it). The coordinator's (the controller) is about 1.4 links' (3.4 KB against 2.5 KB).
  m.checkpoint_us = pn.checkpoint_link_min_s * 1e6;
  m.window_cycles = static_cast<double>(pn.cycles) / static_cast<double>(pn.windows);
  HandOff h = measure_hand_off(2, 20000);
  m.round_trip_us = h.min_us;
  m.round_trip_p50_us = h.p50_us;
  const double single_us = links * m.link_us + m.coordinator_us;
  for (int p : threads) {
    if (p > links) break;
    double cycle_us = single_us;
    if (p > 1) {
      const double w = m.window_cycles;
      auto bounds = server_partition_bounds(links, p);
      auto work = [&](int t) { return (bounds[static_cast<size_t>(t) + 1] - bounds[static_cast<size_t>(t)]) * (w * m.link_us + m.checkpoint_us); };
      double slowest = work(0) + w * m.coordinator_us + 1.4 * m.checkpoint_us;
      for (int t = 1; t < p; ++t) slowest = std::max(slowest, work(t));
      cycle_us = (slowest + m.round_trip_us * p / 2) / w;
    }
    m.rows.push_back({p, 1e6 / cycle_us, single_us / cycle_us});
  }
  m.valid = true;
  return m;
}

const ServerBenchRun* best_run(const ServerBenchResult& r, const ServerBenchCase& c, const std::string& harness) {
  const ServerBenchRun* best = nullptr;
  for (const auto& run : r.runs)
    if (same_case(run.c, c) && run.harness == harness && !run.profiled &&
        (!best || run.traffic.wall_s + run.reconfig.wall_s < best->traffic.wall_s + best->reconfig.wall_s))
      best = &run;
  return best;
}

nlohmann::json to_json(const ServerBenchResult& r) {
  using nlohmann::json;
  const auto& cfg = r.config;
  json runs = json::array();
  for (const auto& run : r.runs) {
    json j{{"engine", to_string(run.c.engine)},
           {"threads", run.c.threads},
           {"harness", run.harness},
           {"profiled", run.profiled},
           {"traffic", phase_json(run.traffic)},
           {"reconfig", phase_json(run.reconfig)},
           {"messages", run.messages},
           {"digest", run.digest}};
    if (run.profiled) {
      auto prof = [](const ServerProfile& p, const PhaseFigures& f) {
        return json{{"cycles", p.cycles},   {"wall_s", f.wall_s},         {"step_s", p.step_s},
                    {"links_s", p.links_s}, {"controller_s", p.controller_s}, {"mesh_s", p.mesh_s},
                    {"xpu_s", p.xpu_s},     {"stage_s", p.stage_s},       {"wait_s", p.wait_s},
                    {"checkpoint_s", p.checkpoint_s}, {"checkpoint_link_min_s", p.checkpoint_link_min_s},
                    {"windows", p.windows}, {"rollbacks", p.rollbacks}};
      };
      j["profile"] = {{"traffic", prof(run.traffic_profile, run.traffic)}, {"reconfig", prof(run.reconfig_profile, run.reconfig)}};
    }
    runs.push_back(j);
  }
  json best = json::array();
  for (const auto& c : cfg.cases)
    for (const char* h : {"loop", "systemc"})
      if (const ServerBenchRun* b = best_run(r, c, h))
        best.push_back({{"engine", to_string(c.engine)},
                        {"threads", c.threads},
                        {"harness", h},
                        {"traffic_cycles_per_s", b->traffic.cycles_per_s()},
                        {"reconfig_cycles_per_s", b->reconfig.cycles_per_s()}});
  json scaling = nullptr;
  if (r.scaling.valid) {
    json rows = json::array();
    for (const auto& row : r.scaling.rows)
      rows.push_back({{"threads", row.threads}, {"cycles_per_s", row.cycles_per_s}, {"speedup", row.speedup},
                      {"efficiency", row.speedup / row.threads}});
    const auto& m = r.scaling;
    scaling = {{"links", m.links},
               {"link_us", m.link_us},
               {"coordinator_us", m.coordinator_us},
               {"checkpoint_us", m.checkpoint_us},
               {"window_cycles", m.window_cycles},
               {"hand_off_us_2_threads_min", m.round_trip_us},
               {"hand_off_us_2_threads_p50", m.round_trip_p50_us},
               {"predicted", rows}};
  }
  return json{{"bench", "server"},
              {"scaling_model", scaling},
              {"xpus", cfg.shape.xpus},
              {"lanes_per_xpu", cfg.shape.lanes_per_xpu},
              {"links", cfg.shape.xpus * cfg.shape.lanes_per_xpu},
              {"mesh_ports", cfg.shape.mesh_ports},
              {"seed", cfg.seed},
              {"traffic_cycles", cfg.traffic_cycles},
              {"rounds", cfg.rounds},
              {"identical_results", r.identical},
              {"hardware_threads", r.hardware_threads},
              {"best", best},
              {"runs", runs}};
}

}  // namespace mxtb::app
