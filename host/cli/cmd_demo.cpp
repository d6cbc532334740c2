// `mxtb demo`: the main job. Starts the emulator (`mxtb sim`) as a child process on loopback,
// lets the failover manager place the tenant and pre-arm a spare over IPbus, kills an XPU,
// and reports every phase of the failover against the 1.2 s the Morphlux prototype measured.
// `mxtb regress` runs it once per random scenario. docs/failover.md, docs/report.md.
#include "args.h"
#include "commands.h"

#include "host/failover/manager.h"
#include "host/ipbus/board_map.h"
#include "host/ipbus/emulator_process.h"
#include "host/report/report.h"
#include "sim/scenario.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace mxtb::host {

using nlohmann::json;
namespace er = mxtb::emu::reg;

namespace {

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

int cmd_demo(const ArgList& argv) {
  Args args(argv, {"--scenario", "--scenario-seed", "--seed", "--out", "--json", "--time-mode"}, {"--no-waves"});
  if (!args.positional().empty()) throw UsageError(fmt::format("unexpected argument '{}'", args.positional()[0]));
  if (args.has("--scenario") && args.has("--scenario-seed"))
    throw UsageError("give either --scenario FILE or --scenario-seed N, not both");
  const auto wall0 = std::chrono::steady_clock::now();
  sim::FailoverScenario s =
      args.has("--scenario-seed")
          ? sim::random_failover_scenario(args.u64("--scenario-seed", 1))
          : sim::load_failover_scenario(args.str("--scenario", source_root() + "/traces/scenarios/failover-default.json"));
  if (args.has("--seed")) s.seed = args.u64("--seed", s.seed);
  if (args.has("--time-mode")) {
    std::string m = args.str("--time-mode");
    if (m != "lockstep" && m != "paced" && m != "free")
      throw UsageError(fmt::format("--time-mode must be lockstep, paced or free, got '{}'", m));
    s.time_mode = m;
  }
  if (s.time_mode != "lockstep")
    throw UsageError(fmt::format("the demo measures in lockstep (the scenario asks for {}): in paced and free modes the "
                                 "host's own timing would be wall time, not simulated time",
                                 s.time_mode));
  const std::string out = args.str("--out", "out");
  std::filesystem::create_directories(out);
  const std::string scenario_file = out + "/scenario.json";
  {
    std::ofstream f(scenario_file);
    f << sim::to_json(s).dump(2) << "\n";
  }
  const bool waves = !args.has("--no-waves");
  fmt::print("mxtb demo: scenario {} (seed {}), time mode {}, {} XPUs x {} lanes, {}-port mesh, {} settle\n", s.name, s.seed,
             s.time_mode, s.shape.xpus, s.shape.lanes_per_xpu, s.shape.mesh_ports, sim::to_string(s.settle));

  std::vector<std::string> sim_args{"--scenario", scenario_file, "--time-mode", s.time_mode};
  if (waves) sim_args.insert(sim_args.end(), {"--fst", out + "/waves.fst"});
  ipbus::EmulatorProcess emu(ipbus::self_executable(), sim_args, out + "/emulator.log");
  fmt::print("  emulator: {} (log: {}/emulator.log)\n", emu.target(), out);
  ipbus::ClientOptions opts;
  opts.describe = ipbus::describe;
  ipbus::Client client(emu.target(), opts);
  ipbus::Board board(client);

  failover::FailoverManager mgr(board, failover::manager_config(s));
  std::vector<std::string> failures;
  std::vector<failover::FailoverRecord> records;
  report::Timeline t;
  try {
    mgr.bring_up();
    const uint64_t armed = mgr.armed_at_ns() ? mgr.armed_at_ns() : board.clock().now_ns();
    fmt::print("  tenant placed and Active at {:.1f} us; backup {} armed\n", armed / 1000.0,
               mgr.armed_xpu() ? fmt::format("for XPU {}", *mgr.armed_xpu()) : std::string("not"));
    for (const auto& lf : s.lane_faults) {
      if (lf.ber > 0) board.arm_fault(emu::FaultKind::LaneBer, static_cast<uint32_t>(lf.link), float_bits(static_cast<float>(lf.ber)), 0);
      if (lf.swap_with >= 0)
        board.arm_fault(emu::FaultKind::SwapLanes, static_cast<uint32_t>(lf.link), static_cast<uint32_t>(lf.swap_with),
                        armed + static_cast<uint64_t>(lf.swap_from_us * 1000));
      if (lf.dark_us > 0)
        board.arm_fault(emu::FaultKind::LaneDark, static_cast<uint32_t>(lf.link), static_cast<uint32_t>(lf.dark_us * 1000),
                        armed + static_cast<uint64_t>(lf.dark_from_us * 1000));
    }
    uint64_t first_kill = UINT64_MAX;
    for (const auto& f : s.failures) {
      uint64_t at = armed + static_cast<uint64_t>(f.at_us * 1000);
      board.arm_fault(emu::FaultKind::KillXpu, static_cast<uint32_t>(f.xpu), 0, at);
      first_kill = std::min(first_kill, at);
    }
    // A waveform window from shortly before the first failure to the end of its failover.
    if (waves && first_kill != UINT64_MAX) {
      uint64_t now = board.clock().now_ns();
      if (first_kill > now + 5000) mgr.idle(first_kill - 5000 - now);
      client.write(ipbus::emulator(er::wave_ctrl::kOffset), 1);
    }
    const uint64_t limit = static_cast<uint64_t>(s.limit_us > 0 ? s.limit_us * 1000 : 5e6);
    for (size_t i = 0; i < s.failures.size(); ++i) {
      // The scenario's host disconnect hits the first failover.
      auto disconnect = i == 0 ? s.host_disconnect : sim::HostDisconnect::None;
      auto rec = mgr.handle_next_failure(limit, disconnect);
      if (rec && rec->disconnected) {
        // The host is gone: in lockstep someone must let the board's time pass. This harness does,
        // for the scenario's downtime, without kicking the watchdog, then restarts the host.
        board.clock().wait_ns(static_cast<uint64_t>(s.host_downtime_us * 1000));
        mgr.reconnect(*rec);
      }
      if (i == 0 && waves) client.write(ipbus::emulator(er::wave_ctrl::kOffset), 0);
      if (!rec) {
        failures.push_back(fmt::format("failure {} of {} (XPU {}) was never detected", i + 1, s.failures.size(), s.failures[i].xpu));
        break;
      }
      for (const auto& p : rec->problems) failures.push_back(fmt::format("failover of XPU {}: {}", rec->failed, p));
      records.push_back(*rec);
    }
    mgr.idle(30'000);  // traffic keeps flowing over the new circuits
    if (std::getenv("MXTB_DEBUG_EVENTS"))  // every event the manager took, for debugging a run
      for (const auto& e : mgr.log())
        if (e.kind != emu::EmuEvent::LinkChange || e.c == static_cast<uint32_t>(link::LinkState::Active) ||
            e.b == static_cast<uint32_t>(link::LinkState::Active))
          fmt::print(stderr, "event {:>10} ns kind {} a {} b {} c {} data {}\n", e.time_ns, static_cast<int>(e.kind), e.a, e.b,
                     e.c, e.data);
    for (const auto& p : mgr.check_fabric()) failures.push_back("fabric: " + p);
  } catch (const std::exception& e) {
    failures.push_back(e.what());
  }

  if (!records.empty()) {
    auto notes = t.notes;
    t = records.front().timeline;
    t.notes.insert(t.notes.end(), notes.begin(), notes.end());
    for (size_t i = 1; i < records.size(); ++i) {
      const auto& r = records[i].timeline;
      t.notes.push_back(fmt::format("then XPU {} failed: {}; hardware {}, total {}", records[i].failed,
                                    records[i].spare ? fmt::format("spare {}", *records[i].spare) : std::string("degraded"),
                                    report::human_duration(r.hardware_ns), report::human_duration(r.total_ns)));
      t.degraded = t.degraded || r.degraded;
    }
    for (const auto& p : report::check_timeline(t)) failures.push_back("timeline: " + p);
    if (!t.degraded && s.expect_hardware_ns_max > 0 && t.hardware_ns > s.expect_hardware_ns_max)
      failures.push_back(fmt::format("hardware {} exceeds expect.hardware_ns_max {}", report::human_duration(t.hardware_ns),
                                     report::human_duration(s.expect_hardware_ns_max)));
    if (!t.degraded && s.expect_total_ns_max > 0 && t.total_ns > s.expect_total_ns_max)
      failures.push_back(fmt::format("total {} exceeds expect.total_ns_max {}", report::human_duration(t.total_ns),
                                     report::human_duration(s.expect_total_ns_max)));
  } else {
    t.scenario = s.name;
    t.seed = s.seed;
    t.time_mode = s.time_mode;
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  fmt::print("{}", report::format_table(t));
  uint64_t sim_ns = 0;
  try {
    sim_ns = board.clock().now_ns();
  } catch (const std::exception&) {
  }
  fmt::print("  emulated {:.1f} us of the server in {:.1f} s wall; client: {} packets, {} timeouts\n", sim_ns / 1000.0, wall_s,
             client.stats().packets_sent, client.stats().timeouts);
  std::vector<std::string> written = report::write_report_files(t, out);
  if (waves) written.push_back(out + "/waves.fst");
  for (const auto& p : written) fmt::print("  wrote {}\n", p);
  emu.stop();

  if (args.has("--json")) {
    json failovers = json::array();
    for (const auto& r : records)
      failovers.push_back({{"failed", r.failed}, {"spare", r.spare ? json(*r.spare) : json(nullptr)},
                           {"fast_path", r.fast_path}, {"report", report::to_json(r.timeline)}, {"problems", r.problems}});
    json j{{"scenario", sim::to_json(s)}, {"report", report::to_json(t)}, {"failovers", failovers},
           {"failures", failures},       {"passed", failures.empty()},   {"wall_s", wall_s}};
    std::ofstream f(args.str("--json"));
    if (!f) throw std::runtime_error("cannot write " + args.str("--json"));
    f << j.dump(2) << "\n";
  }
  if (failures.empty()) {
    fmt::print("PASS\n");
    return 0;
  }
  for (const auto& f : failures) fmt::print("FAIL: {}\n", f);
  return 1;
}

}  // namespace mxtb::host
